package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

func newAppCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "app", Short: "Register and list the gateway's apps"}
	var data, alias, trusted, command, dir string
	reg := &cobra.Command{
		Use:   "register MANIFEST [--alias NAME] [--data DIR] [--command PATH [--dir DIR] [-- ARGS...]]",
		Short: "Register an app from its manifest: Tier 1 when its signature verifies, else Tier 2",
		Long: `Register an app from its signed manifest (JSON: sign a manifest.yaml first with capgate
manifest sign): Tier 1 when its signature verifies against a trusted key (DATA/trusted, then
--trusted-dir), else Tier 2. With a gateway serving the data folder, the gateway registers it
(with its own trusted keys) and serves it at once; otherwise it is registered in the folder's
store (--data, --store), created if need be, and a gateway serves it when it starts or at its
next look. Nothing else is started.

--command PATH registers an app that runs out of process: a program built with capgate's
sdk/provider, started by the gateway with the arguments after --, a scrubbed environment and
/dev/null for input, and held to this manifest (a program that reports another manifest is not
started). The program's digest is taken now: a program changed afterwards is not run.

The program runs in a sandbox of its own (bubblewrap): it sees the system's libraries read-only,
--dir DIR (its scripts, libraries and data) read-only as its working folder, and nothing else of
the machine; it has no network. A program that is an interpreter names its script in DIR:

  capgate app register notes.json --command /usr/bin/node --dir ./notes -- provider.js`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash == -1 && len(args) != 1, dash != -1 && dash != 1:
				return usageErr("usage: capgate app register MANIFEST [--command PATH [-- ARGS...]]")
			case dash != -1 && command == "":
				return usageErr("arguments after -- are the program's: give its --command")
			case dir != "" && command == "":
				return usageErr("--dir is the folder of a program: give its --command")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if manifest.IsYAML(args[0]) {
				// Refused before anything is opened or recorded: YAML is for authoring.
				return &exitError{code: exitNo, err: fmt.Errorf("%s: %w", args[0], manifest.ErrYAML)}
			}
			raw, err := os.ReadFile(args[0])
			if err != nil {
				return usageErr("%w", err)
			}
			var prog *providers.Program
			if command != "" {
				abs, err := filepath.Abs(command)
				if err != nil {
					return usageErr("--command: %w", err)
				}
				digest, err := providers.ProgramDigest(abs)
				if err != nil {
					return usageErr("--command: %w", err)
				}
				prog = &providers.Program{Command: abs, Args: args[1:], Digest: digest}
				if dir != "" {
					if prog.Dir, err = filepath.Abs(dir); err != nil {
						return usageErr("--dir: %w", err)
					}
					if fi, err := os.Stat(prog.Dir); err != nil || !fi.IsDir() {
						return usageErr("--dir %s: not a folder", dir)
					}
				}
				if err := prog.Check(); err != nil {
					return usageErr("--command: %w", err)
				}
			}
			return g.onChanges(cmd, changeTarget{data: data, trustedDir: trusted, create: true}, func(ctx context.Context, ch *changes) error {
				if ch.viaGateway && cmd.Flags().Changed("trusted-dir") {
					fmt.Fprintln(cmd.ErrOrStderr(), "capgate: --trusted-dir is not used: the gateway serving the data folder registers the app with its own trusted keys (capgate serve --trusted-dir)")
				}
				var app registry.App
				if prog != nil {
					app, err = ch.RegisterProvider(ctx, byTheOperator(), raw, alias, *prog)
				} else {
					app, err = ch.RegisterApp(ctx, byTheOperator(), raw, alias)
				}
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
	reg.Flags().StringVar(&command, "command", "", "the program of an app that runs out of process (built with sdk/provider)")
	reg.Flags().StringVar(&dir, "dir", "", "the folder the --command program needs (read-only in its sandbox, its working folder)")
	cmd.AddCommand(reg, newAppListCmd(g))
	return cmd
}

// appRow is one registered app as capgate app list shows it.
type appRow struct {
	ID      string             `json:"app_id"`
	Alias   string             `json:"alias"`
	Version string             `json:"version,omitempty"`
	Tier    int                `json:"tier"`
	Why     string             `json:"tier_reason,omitempty"`
	Enabled bool               `json:"enabled"`
	Program *providers.Program `json:"program,omitempty"` // how an app that runs out of process starts
	Running *providers.Status  `json:"running,omitempty"` // whether it works, as the gateway last saw it
}

func newAppListCmd(g *globals) *cobra.Command {
	var data, trusted string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json] [--data DIR]",
		Short: "List the registered apps, their tier, and whether each that runs out of process works",
		Long: `List the apps registered in the data folder's store (capgate app register, the tool servers,
the installed plugins the gateway registered): their alias, tier, and, for an app that runs out
of process, its program and whether it works, as the gateway last saw it, and when not, why.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := g.load(hostFlags{dataDir: data, trustedDir: trusted})
			if err != nil {
				return err
			}
			return g.onStore(data, func(ctx context.Context, st store.Store) error {
				reg, err := registry.New(ctx, st, gateway.AppKeys(l.dataDir, l.trustedDir))
				if err != nil {
					return err
				}
				var rows []appRow
				for _, a := range reg.List() {
					r := appRow{ID: a.ID.String(), Alias: a.Alias, Tier: int(a.Tier), Why: string(a.Reason), Enabled: a.Enabled}
					if m := a.Doc.Manifest(); m != nil {
						r.Version = m.Version
					}
					if p, err := providers.LoadProgram(ctx, st, r.ID); err == nil {
						r.Program = &p
					}
					if s, err := providers.LoadStatus(ctx, st, r.ID); err == nil {
						r.Running = &s
					}
					rows = append(rows, r)
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, rows)
				}
				if len(rows) == 0 {
					fmt.Fprintln(w, "no apps registered")
				}
				for _, r := range rows {
					state := ""
					if !r.Enabled {
						state = "  disabled"
					}
					fmt.Fprintf(w, "%s %s  alias %s  tier %d%s\n", r.ID, r.Version, r.Alias, r.Tier, state)
					switch {
					case r.Program == nil:
					case r.Running == nil:
						fmt.Fprintln(w, "  out of process: not started yet (capgate serve starts it)")
					case r.Running.Working:
						fmt.Fprintf(w, "  out of process: working (since %s)\n", r.Running.At.Format(time.RFC3339))
					default:
						fmt.Fprintf(w, "  out of process: not working (since %s): %s\n", r.Running.At.Format(time.RFC3339), r.Running.Why)
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder")
	cmd.Flags().StringVar(&trusted, "trusted-dir", "", "folder of trusted app keys")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the apps as JSON")
	return cmd
}
