package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/atomicfile"
	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/delta"
	"github.com/capgate/capgate/internal/intent"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
)

func newManifestCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manifest",
		Short: "Lint, sign and verify capability manifests",
		Long: `An app declares its capabilities in a manifest, a JSON document signed with the developer's
Ed25519 key over its RFC 8785 canonical form. YAML is an authoring form: lint, sign and diff
read it, and sign writes the JSON that verify, capgate app register and capgate plugin
install take (they refuse YAML).

  capgate keygen --app-id org.example.notes       make a key pair
  capgate manifest lint manifest.yaml             check every rule, list every problem
  capgate manifest sign -o manifest.json manifest.yaml
  capgate manifest verify manifest.json           Tier 1 or Tier 2, and why`,
	}
	cmd.AddCommand(newLintCmd(g), newSignCmd(), newVerifyCmd(g), newDiffCmd())
	return cmd
}

// readDoc reads a manifest file as its author wrote it, YAML for .yaml and .yml files, else
// JSON; a file that does not parse is returned as one problem.
func readDoc(path string) (*manifest.Document, manifest.Problems, error) {
	doc, err := manifest.ReadAuthoringFile(path)
	if err != nil {
		var se *manifest.SyntaxError
		if errors.As(err, &se) {
			return nil, manifest.Problems{se.Problem()}, nil
		}
		return nil, nil, usageErr("%w", err)
	}
	return doc, doc.Validate(), nil
}

// validDoc reads a manifest (readDoc) that a command takes only when it breaks no rule: else
// it prints each problem on standard error and ends the command with exit 1, saying what
// was not done.
func validDoc(cmd *cobra.Command, path, notDone string) (*manifest.Document, error) {
	doc, ps, err := readDoc(path)
	if err != nil {
		return nil, err
	}
	if len(ps) > 0 {
		for _, p := range ps {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", path, p)
		}
		return nil, &exitError{code: exitNo, err: fmt.Errorf("%s: %s: %d problem(s)", path, notDone, len(ps))}
	}
	return doc, nil
}

func newLintCmd(g *globals) *cobra.Command {
	var asJSON bool
	var hf hostFlags
	cmd := &cobra.Command{
		Use:   "lint [--json] FILE",
		Short: "Check a manifest against every rule and report every problem",
		Long: `Check a manifest (JSON, or the YAML authoring form for .yaml/.yml files) against every rule
of the format and report every problem at once, each as an index-based field path and the rule
it breaks. The offending value is never printed.

Intents are checked as the host will check them at install: network hosts and ports,
filesystem paths inside the sandbox root (--sandbox-root, else sandbox_root in the
configuration file, else /sandbox), and, when the configuration file lists them, the host's
credential catalog and environments.

With --json, print {"valid": bool, "problems": [{"path": "...", "rule": "..."}]}.
Exit 0 when valid, 1 when there are problems, 2 on a usage error.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := g.load(hf)
			if err != nil {
				return err
			}
			ih, err := l.intentHost()
			if err != nil {
				return err
			}
			doc, ps, err := readDoc(args[0])
			if err != nil {
				return err
			}
			if doc != nil {
				ps = append(ps, intent.Check(doc.Manifest(), ih)...)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if ps == nil {
					ps = manifest.Problems{}
				}
				if err := writeJSON(out, struct {
					Valid    bool              `json:"valid"`
					Problems manifest.Problems `json:"problems"`
				}{len(ps) == 0, ps}); err != nil {
					return err
				}
			} else if len(ps) == 0 {
				fmt.Fprintf(out, "%s: valid\n", args[0])
			} else {
				for _, p := range ps {
					fmt.Fprintf(out, "%s: %s\n", args[0], p)
				}
				fmt.Fprintf(out, "%d problem(s)\n", len(ps))
			}
			if len(ps) > 0 {
				return said
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().StringVar(&hf.sandboxRoot, "sandbox-root", "", "the sandbox root filesystem intents must lie in (default /sandbox)")
	return cmd
}

func newDiffCmd() *cobra.Command {
	var asJSON, printDelta bool
	cmd := &cobra.Command{
		Use:   "diff OLD NEW [--json]",
		Short: "Review what changed between two manifests: narrowing, widening or reject",
		Long: `Compare a new manifest with the old one (the one locked) and list every change with its path,
each classified as a widening or a narrowing by the plugin document's full list: a capability
added; risk, side effect or dry run lowered; idempotency raised toward natural; compensation
removed; a credential, network, filesystem or environment entry added; a filesystem mode made
read-write; evidence removed; a timeout or resource budget raised (0 means no limit, so
non-zero to zero is a raise); kind changed; a port's major changed; a lower version. capgate
also counts as widenings an auth level lowered, confirmation turned off, autonomy raised,
an undo window shortened, reversibility weakened and a permission changed.

The verdict is unchanged, narrowing, widening or reject: reject for the same version with
another digest, a declared permissions_delta that differs from the recomputed one, or a
previous_version that is not the old version.

With --json, print {"verdict": "...", "changes": [{"path", "change", "widening"}]}.
With --delta, print instead the permissions_delta of NEW against OLD as the host recomputes
it, to declare in NEW (with "previous_version" set to OLD's version) before signing.
Either manifest may be the YAML authoring form (.yaml/.yml), as before signing.
Exit 0 for unchanged or narrowing, 1 for widening or reject, 2 on a usage error.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var docs [2]*manifest.Document
			for i, path := range args {
				doc, err := validDoc(cmd, path, "invalid manifest")
				if err != nil {
					return err
				}
				docs[i] = doc
			}
			w := cmd.OutOrStdout()
			if printDelta {
				return writeJSON(w, delta.Recompute(docs[0], docs[1]))
			}
			r := delta.Diff(delta.Side{Doc: docs[0]}, delta.Side{Doc: docs[1]})
			if asJSON {
				if err := writeJSON(w, r); err != nil {
					return err
				}
			} else {
				printDiff(w, r)
			}
			if r.Verdict == delta.Widening || r.Verdict == delta.Reject {
				return said
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVar(&printDelta, "delta", false, "print the recomputed permissions_delta of NEW against OLD")
	return cmd
}

func newSignCmd() *cobra.Command {
	var keyPath, out string
	cmd := &cobra.Command{
		Use:   "sign [--key FILE] [-o OUT] MANIFEST",
		Short: "Sign a manifest with an Ed25519 private key",
		Long: `Sign a manifest: canonicalize it (RFC 8785, signature removed), sign those bytes with the
32-byte Ed25519 private key, and write the document with "signature": "ed25519:<base64>" set.
The output is JSON, whether the manifest is JSON or the YAML authoring form (.yaml/.yml, written
as the JSON it denotes), members in the order written and numbers as written: that JSON is what
capgate verifies, registers and installs. A manifest that breaks any rule is not signed.

The key defaults to ~/.config/portal-{app_id}/ed25519.key for the manifest's app_id; a key
file readable by group or others is refused. Output goes to stdout unless -o names a file.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			doc, err := validDoc(cmd, args[0], "not signed")
			if err != nil {
				return err
			}
			if keyPath == "" {
				keyPath, err = keys.DefaultPrivateKeyPath(doc.Manifest().AppID)
				if err != nil {
					return usageErr("no --key given and no default key path: %w", err)
				}
			}
			key, err := keys.LoadPrivateKey(keyPath)
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			signed, err := manifest.Sign(doc, key)
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
	cmd.Flags().StringVar(&keyPath, "key", "", "private key file (default ~/.config/portal-{app_id}/ed25519.key)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the signed manifest here (default stdout)")
	return cmd
}

func newVerifyCmd(g *globals) *cobra.Command {
	var trustedDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--trusted-dir DIR] [--json] MANIFEST",
		Short: "Verify a manifest's signature: Tier 1 or Tier 2, and why",
		Long: `Verify a manifest's JSON: it must be valid and its signature must verify against a trusted
key of its app_id ({dir}/{app_id}.pub, or during a key rotation any {dir}/{app_id}.d/*.pub).
A YAML file is refused as a usage error: sign it into JSON first
(capgate manifest sign -o manifest.json manifest.yaml).

Tier 1 exits 0. Anything else is Tier 2, with the reason (unsigned, malformed_signature,
no_trusted_key, bad_signature, invalid_manifest), and exits 1. With --json, print
{"app_id": "...", "tier": 1|2, "reason": "..."}.

The trusted-keys folder is --trusted-dir, else $CAPGATE_TRUSTED_DIR, else trusted_dir in the
configuration file, else /etc/portal/keys/trusted.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, _, err := config.Load(g.config)
			if err != nil {
				return usageErr("%w", err)
			}
			dir := config.Resolve(trustedDir, config.EnvTrustedDir, cfg.TrustedDir, keys.DefaultTrustedDir)
			var v manifest.Verification
			doc, err := manifest.ReadFile(args[0])
			var se *manifest.SyntaxError
			switch {
			case errors.As(err, &se):
				v = manifest.Verification{Tier: manifest.Tier2, Reason: manifest.ReasonInvalidManifest,
					Detail: "the manifest does not parse", Problems: manifest.Problems{se.Problem()}}
			case err != nil:
				return usageErr("%w", err)
			default:
				v = manifest.Verify(doc, keys.TrustStore{Dir: dir})
			}
			printVerification(cmd.OutOrStdout(), args[0], v, asJSON)
			if !v.Trusted() {
				return said
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&trustedDir, "trusted-dir", "", "folder of trusted public keys (default /etc/portal/keys/trusted)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func printVerification(w io.Writer, file string, v manifest.Verification, asJSON bool) {
	if asJSON {
		out := struct {
			manifest.Verification
			Key string `json:"key,omitempty"`
		}{Verification: v}
		if v.Key != nil {
			out.Key = keys.Fingerprint(v.Key)
		}
		_ = writeJSON(w, out)
		return
	}
	name := v.AppID
	if name == "" {
		name = file
	}
	if v.Trusted() {
		fmt.Fprintf(w, "%s: Tier 1: signature verified with trusted key %s\n", name, keys.Fingerprint(v.Key))
		return
	}
	fmt.Fprintf(w, "%s: Tier 2: %s: %s\n", name, v.Reason, v.Detail)
	for _, p := range v.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// readInput reads a named file, or stdin for "-" or no name, up to limit bytes.
func readInput(cmd *cobra.Command, args []string, limit int64) ([]byte, error) {
	var r io.Reader = cmd.InOrStdin()
	name := "stdin"
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return nil, usageErr("%w", err)
		}
		defer f.Close()
		r, name = f, args[0]
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, &exitError{code: exitNo, err: fmt.Errorf("%s: larger than %d bytes", name, limit)}
	}
	return data, nil
}
