package main

import (
	"crypto/ed25519"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/keys"
)

func newKeygenCmd() *cobra.Command {
	var appID, out, pub string
	var force bool
	cmd := &cobra.Command{
		Use:   "keygen --app-id ID [--out FILE] [--pub FILE] [--force]",
		Short: "Generate an app developer's Ed25519 key pair",
		Long: `Generate an Ed25519 key pair for signing the manifests of one app.

The private key (32 raw bytes) goes to ~/.config/portal-{app_id}/ed25519.key, its folder
0700 and the file 0600, unless --out names another file. The public key (32 raw bytes) goes
to ./{app_id}.pub unless --pub names another file; install it as {app_id}.pub in the
trusted-keys folder of every host that should run the app at Tier 1.

Existing files are never replaced without --force. To rotate a key, put the new public key
in {trusted_dir}/{app_id}.d/ beside the old one, deploy manifests signed with the new key,
then remove the old key.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !keys.ValidAppID(appID) {
				return usageErr("--app-id: must be a reverse-DNS app id such as org.example.notes")
			}
			var err error
			if out == "" {
				if out, err = keys.DefaultPrivateKeyPath(appID); err != nil {
					return usageErr("%w", err)
				}
			}
			if pub == "" {
				pub = appID + ".pub"
			}
			key, err := keys.Generate()
			if err != nil {
				return err
			}
			if err := keys.WritePrivateKey(out, key, force); err != nil {
				return &exitError{code: exitNo, err: fmt.Errorf("%w (use --force to replace it)", err)}
			}
			if err := keys.WritePublicKey(pub, key.Public().(ed25519.PublicKey), force); err != nil {
				return &exitError{code: exitNo, err: fmt.Errorf("%w (use --force to replace it)", err)}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "private key: %s\n", out)
			fmt.Fprintf(w, "public key:  %s\n", pub)
			fmt.Fprintf(w, "fingerprint: %s\n", keys.Fingerprint(key.Public().(ed25519.PublicKey)))
			return nil
		},
	}
	cmd.Flags().StringVar(&appID, "app-id", "", "the app's reverse-DNS id (required)")
	cmd.Flags().StringVar(&out, "out", "", "private key file (default ~/.config/portal-{app_id}/ed25519.key)")
	cmd.Flags().StringVar(&pub, "pub", "", "public key file (default ./{app_id}.pub)")
	cmd.Flags().BoolVar(&force, "force", false, "replace existing key files")
	return cmd
}
