package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/atomicfile"
	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
)

func newDefinitionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "definition",
		Short: "Lint, sign and verify capability definitions (capabilities by meaning)",
		Long: `A definition describes an action by meaning, whichever app provides it: a reverse-DNS name
under the root org.capgate (a third party's extension lives in its own namespace and extends
another definition), a major.minor version, descriptions and examples in English and Turkish,
its actions with the permissions that authorize them, input and output as JSON Schema 2020-12,
the authority it needs, its autonomy ceiling, reversibility, data classes, surface and
providers. A definition file is JSON, or the YAML authoring form, signed like a manifest with
the key of its namespace (the name's first two labels).

  capgate definition lint ride.yaml                 check every rule, list every problem
  capgate definition sign --key KEY -o ride.json ride.yaml
  capgate definition verify ride.json               is it signed by its namespace's key`,
	}
	cmd.AddCommand(newDefinitionLintCmd(), newDefinitionSignCmd(), newDefinitionVerifyCmd(g))
	return cmd
}

// readDefinition reads a definition file (YAML for .yaml and .yml) under root; a file that
// cannot be read is a usage error.
func readDefinition(path, root string) (*definition.Definition, manifest.Problems, error) {
	if err := definition.CheckRoot(root); err != nil {
		return nil, nil, usageErr("--root: %w", err)
	}
	def, ps, err := definition.ReadFile(path, root)
	if err != nil {
		return nil, nil, usageErr("%w", err)
	}
	return def, ps, nil
}

func newDefinitionLintCmd() *cobra.Command {
	var asJSON bool
	var root string
	cmd := &cobra.Command{
		Use:   "lint [--json] [--root ROOT] FILE...",
		Short: "Check definitions against every rule and report every problem",
		Long: `Check each definition file (JSON, or YAML for .yaml/.yml) against every rule of the format and
report every problem at once, each as a field path and the rule it breaks; the offending value
is never printed. Among the rules: no field of the input or output schema, at any depth, may
carry a password, a token, a secret, an API key or payment card details, by its name or its
format, and field names are ASCII. The signature is not checked here (capgate definition
verify does).

--root is the root of the host's own definitions (default org.capgate): a definition outside
it must extend another. With --json, print [{"file": "...", "valid": bool, "problems":
[{"path": "...", "rule": "..."}]}]. Exit 0 when every file is valid, 1 when any has problems,
2 on a usage error.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("%s: name at least one definition file", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			type result struct {
				File     string            `json:"file"`
				Valid    bool              `json:"valid"`
				Problems manifest.Problems `json:"problems"`
			}
			results := make([]result, 0, len(args))
			for _, path := range args {
				_, ps, err := readDefinition(path, root)
				if err != nil {
					return err
				}
				if ps == nil {
					ps = manifest.Problems{}
				}
				results = append(results, result{File: path, Valid: len(ps) == 0, Problems: ps})
			}
			out := cmd.OutOrStdout()
			bad := 0
			for _, r := range results {
				if !r.Valid {
					bad++
				}
			}
			if asJSON {
				if err := writeJSON(out, results); err != nil {
					return err
				}
			} else {
				for _, r := range results {
					if r.Valid {
						fmt.Fprintf(out, "%s: valid\n", r.File)
						continue
					}
					for _, p := range r.Problems {
						fmt.Fprintf(out, "%s: %s\n", r.File, p)
					}
					fmt.Fprintf(out, "%s: %d problem(s)\n", r.File, len(r.Problems))
				}
			}
			if bad > 0 {
				return said
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().StringVar(&root, "root", definition.Root, "the root of the host's own definition names")
	return cmd
}

func newDefinitionSignCmd() *cobra.Command {
	var keyPath, out, root string
	cmd := &cobra.Command{
		Use:   "sign --key FILE [-o OUT] [--root ROOT] DEFINITION",
		Short: "Sign a definition with its namespace's Ed25519 private key",
		Long: `Sign a definition: canonicalize it (RFC 8785, signature removed), sign those bytes with the
32-byte Ed25519 private key of its namespace, and write the document with "signature":
"ed25519:<base64>" set, as JSON whether the file is JSON or YAML. A definition that breaks any
rule is not signed (exit 1). Output goes to stdout unless -o names a file.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyPath == "" {
				return usageErr("%s: --key is required (the private key of the definition's namespace)", cmd.CommandPath())
			}
			def, ps, err := readDefinition(args[0], root)
			if err != nil {
				return err
			}
			if len(ps) > 0 {
				for _, p := range ps {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", args[0], p)
				}
				return &exitError{code: exitNo, err: fmt.Errorf("%s: not signed: %d problem(s)", args[0], len(ps))}
			}
			key, err := keys.LoadPrivateKey(keyPath)
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			signed, err := definition.Sign(def, key)
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(signed)
				return err
			}
			if err := atomicfile.Write(out, signed, 0o644, 0o755, true); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "signed %s → %s\n", args[0], out)
			return nil
		},
	}
	cmd.Flags().StringVar(&keyPath, "key", "", "private key file of the definition's namespace")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the signed definition here (default stdout)")
	cmd.Flags().StringVar(&root, "root", definition.Root, "the root of the host's own definition names")
	return cmd
}

func newDefinitionVerifyCmd(g *globals) *cobra.Command {
	var trustedDir, root string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--trusted-dir DIR] [--json] DEFINITION",
		Short: "Verify a definition: valid, and signed by a trusted key of its namespace",
		Long: `Verify a definition's JSON: it must break no rule and its signature must verify against a
trusted key of its namespace, the name's first two labels ({dir}/{namespace}.pub, or during a
key rotation any {dir}/{namespace}.d/*.pub). The trusted-keys folder is --trusted-dir, else
$CAPGATE_TRUSTED_DIR, else trusted_dir in the configuration file, else
/etc/portal/keys/trusted. YAML is refused as a usage error: sign it into JSON first.

Exit 0 when it verifies, 1 when it does not (the reason printed: invalid, unsigned,
no_trusted_key or bad_signature), 2 on a usage error. With --json, print {"definition":
"name@major.minor", "verified": bool, "reason": "...", "problems": [...]}.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if manifest.IsYAML(args[0]) {
				return usageErr("%s: a YAML definition is not signed; sign it into JSON first (capgate definition sign)", args[0])
			}
			cfg, _, err := config.Load(g.config)
			if err != nil {
				return usageErr("%w", err)
			}
			dir := config.Resolve(trustedDir, config.EnvTrustedDir, cfg.TrustedDir, keys.DefaultTrustedDir)
			def, ps, err := readDefinition(args[0], root)
			if err != nil {
				return err
			}
			res := struct {
				Definition string            `json:"definition,omitempty"`
				Verified   bool              `json:"verified"`
				Reason     string            `json:"reason,omitempty"`
				Problems   manifest.Problems `json:"problems,omitempty"`
			}{}
			switch {
			case len(ps) > 0:
				res.Reason, res.Problems = "invalid", ps
			default:
				res.Definition = def.Ref()
				switch err := definition.Verify(def, keys.TrustStore{Dir: dir}); {
				case err == nil:
					res.Verified = true
				case errors.Is(err, definition.ErrUnsigned):
					res.Reason = "unsigned"
				case errors.Is(err, definition.ErrNoKey):
					res.Reason = "no_trusted_key"
				default:
					res.Reason = "bad_signature"
				}
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				if err := writeJSON(out, res); err != nil {
					return err
				}
			case res.Verified:
				fmt.Fprintf(out, "%s: %s verified (namespace %s)\n", args[0], res.Definition, def.Namespace())
			default:
				fmt.Fprintf(out, "%s: not verified: %s\n", args[0], res.Reason)
				for _, p := range res.Problems {
					fmt.Fprintf(out, "%s: %s\n", args[0], p)
				}
			}
			if !res.Verified {
				return said
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&trustedDir, "trusted-dir", "", "folder of trusted public keys (default /etc/portal/keys/trusted)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().StringVar(&root, "root", definition.Root, "the root of the host's own definition names")
	return cmd
}
