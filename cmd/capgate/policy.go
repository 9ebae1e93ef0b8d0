package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/atomicfile"
	"github.com/capgate/capgate/internal/hostpolicy"
	"github.com/capgate/capgate/keys"
)

func newPolicyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Sign and verify the host's signed policy",
		Long: `The host's signed policy holds what only the operator may allow: private network
destinations plugins may declare (allow_private, CIDR prefixes inside 10.0.0.0/8,
172.16.0.0/12, 192.168.0.0/16 or fc00::/7) and ceilings on timeouts and budgets:

  {"policy_version": "1.0", "allow_private": ["10.20.0.0/16"],
   "timeout_ceiling_ms": 600000, "budget_ceiling": {"memory_mb": 512}}

It is signed with the operator's key and verified against the trusted key for the id
capgate.policy ({trusted_dir}/capgate.policy.pub). Point policy_file in the configuration
file at it.

  capgate keygen --app-id capgate.policy --pub /etc/portal/keys/trusted/capgate.policy.pub
  capgate policy sign -o /etc/capgate/policy.json policy.json`,
	}
	cmd.AddCommand(newPolicySignCmd(), newPolicyVerifyCmd(g))
	return cmd
}

func newPolicySignCmd() *cobra.Command {
	var keyPath, out string
	cmd := &cobra.Command{
		Use:   "sign [--key FILE] [-o OUT] POLICY",
		Short: "Sign a policy document",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(cmd, args, hostpolicy.MaxFileBytes)
			if err != nil {
				return err
			}
			if keyPath == "" {
				if keyPath, err = keys.DefaultPrivateKeyPath(hostpolicy.KeyID); err != nil {
					return usageErr("no --key given and no default key path: %w", err)
				}
			}
			key, err := keys.LoadPrivateKey(keyPath)
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			signed, err := hostpolicy.Sign(data, key)
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(signed)
				return err
			}
			return atomicfile.Write(out, signed, 0o644, 0o755, true)
		},
	}
	cmd.Flags().StringVar(&keyPath, "key", "", "private key file (default ~/.config/portal-capgate.policy/ed25519.key)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the signed policy here (default stdout)")
	return cmd
}

func newPolicyVerifyCmd(g *globals) *cobra.Command {
	var hf hostFlags
	cmd := &cobra.Command{
		Use:   "verify [--trusted-dir DIR] POLICY",
		Short: "Verify a signed policy and show what it allows",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := g.load(hf)
			if err != nil {
				return err
			}
			p, err := hostpolicy.Load(args[0], keys.TrustStore{Dir: l.trustedDir})
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: signature verified\n", args[0])
			for _, pfx := range p.AllowPrivate {
				fmt.Fprintf(w, "  allow private %s\n", pfx)
			}
			if p.TimeoutCeilingMS > 0 {
				fmt.Fprintf(w, "  timeout ceiling %d ms\n", p.TimeoutCeilingMS)
			}
			for k, v := range p.BudgetCeiling {
				fmt.Fprintf(w, "  budget ceiling %s %d\n", k, v)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&hf.trustedDir, "trusted-dir", "", "folder of trusted public keys (default /etc/portal/keys/trusted)")
	return cmd
}
