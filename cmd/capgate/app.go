package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/manifest"
)

func newAppCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "app", Short: "Register apps with the gateway"}
	var data, alias, trusted string
	reg := &cobra.Command{
		Use:   "register MANIFEST [--alias NAME] [--data DIR]",
		Short: "Register an app from its manifest: Tier 1 when its signature verifies, else Tier 2",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.dataDir(data)
			if err != nil {
				return err
			}
			l, err := g.load(hostFlags{trustedDir: trusted})
			if err != nil {
				return err
			}
			if manifest.IsYAML(args[0]) {
				// Refused before anything is opened or recorded: YAML is for authoring.
				return &exitError{code: exitNo, err: fmt.Errorf("%s: %w", args[0], manifest.ErrYAML)}
			}
			raw, err := os.ReadFile(args[0])
			if err != nil {
				return usageErr("%w", err)
			}
			ctx := context.Background()
			gw, err := gateway.Open(ctx, gateway.Config{DataDir: dir, TrustedDir: l.trustedDir})
			if err != nil {
				return err
			}
			defer gw.Close()
			register := func() (registry.App, error) {
				return gw.Registry.Register(ctx, raw, alias)
			}
			var app registry.App
			// A manifest that names its app is registered with its records in the audit log,
			// and not unrecorded; one that does not even parse is refused by Register as it is,
			// having changed nothing.
			if id, ok := appIDOf(raw); ok {
				rec := audit.Record{Action: "app.register", App: id, Result: "register requested",
					Explanation: "the operator registered the app from its manifest from the command line: Tier 1 when its signature verifies, else Tier 2"}
				err = operatorChange(ctx, cmd, gw.Store, dir, rec, false, "INVALID_REQUEST", func() error {
					app, err = register()
					return err
				})
			} else {
				app, err = register()
			}
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s registered as %q at Tier %d (%s)\n", app.ID, app.Alias, app.Tier, app.Reason)
			return nil
		},
	}
	reg.Flags().StringVar(&data, "data", "", "data folder")
	reg.Flags().StringVar(&alias, "alias", "", "short name agents use for the app (default: the app id's last label)")
	reg.Flags().StringVar(&trusted, "trusted-dir", "", "folder of trusted app keys")
	cmd.AddCommand(reg)
	return cmd
}

// appIDOf is the app id a manifest's JSON names, when it parses.
func appIDOf(raw []byte) (string, bool) {
	doc, err := manifest.Parse(raw)
	if err != nil || doc.Manifest() == nil || len(doc.Manifest().AppID) > audit.MaxFieldBytes {
		return "", false
	}
	return string(doc.Manifest().AppID), doc.Manifest().AppID != ""
}
