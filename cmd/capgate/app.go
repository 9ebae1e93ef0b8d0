package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/manifest"
)

func newAppCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "app", Short: "Register apps with the gateway"}
	var data, alias, trusted string
	reg := &cobra.Command{
		Use:   "register MANIFEST [--alias NAME] [--data DIR]",
		Short: "Register an app from its manifest: Tier 1 when its signature verifies, else Tier 2",
		Long: `Register an app from its signed manifest (JSON: sign a manifest.yaml first with capgate
manifest sign): Tier 1 when its signature verifies against a trusted key (DATA/trusted, then
--trusted-dir), else Tier 2. With a gateway serving the data folder, the gateway registers it
(with its own trusted keys) and serves it at once; otherwise it is registered in the folder's
store (--data, --store), created if need be, and a gateway serves it when it starts or at its
next look. Nothing else is started.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if manifest.IsYAML(args[0]) {
				// Refused before anything is opened or recorded: YAML is for authoring.
				return &exitError{code: exitNo, err: fmt.Errorf("%s: %w", args[0], manifest.ErrYAML)}
			}
			raw, err := os.ReadFile(args[0])
			if err != nil {
				return usageErr("%w", err)
			}
			return g.onChanges(cmd, changeTarget{data: data, trustedDir: trusted, create: true}, func(ctx context.Context, ch *changes) error {
				if ch.viaGateway && cmd.Flags().Changed("trusted-dir") {
					fmt.Fprintln(cmd.ErrOrStderr(), "capgate: --trusted-dir is not used: the gateway serving the data folder registers the app with its own trusted keys (capgate serve --trusted-dir)")
				}
				app, err := ch.RegisterApp(ctx, byTheOperator(), raw, alias)
				if err != nil {
					return &exitError{code: exitNo, err: err}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s registered as %q at Tier %d (%s)\n", app.ID, app.Alias, app.Tier, app.Reason)
				return nil
			})
		},
	}
	reg.Flags().StringVar(&data, "data", "", "data folder")
	reg.Flags().StringVar(&alias, "alias", "", "short name agents use for the app (default: the app id's last label)")
	reg.Flags().StringVar(&trusted, "trusted-dir", "", "folder of trusted app keys")
	cmd.AddCommand(reg)
	return cmd
}
