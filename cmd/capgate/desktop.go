package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/desktop"
	"github.com/capgate/capgate/manifest"
)

func newDesktopCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "desktop",
		Short: "Put running desktop apps behind capgate, through their accessibility tree (AT-SPI2)",
		Long: `A desktop app with no manifest gets Tier 2 capabilities derived from its accessibility tree:
its buttons and menu items are pressed, its check boxes toggled, its text fields set and read,
its text read, always through the accessibility interfaces and never by input on the screen.
Every capability above read asks the person at each call, as every Tier 2 capability does, and
names that suggest payment, passwords or deletion are high risk.

These commands reach the accessibility bus of the session they run in (DBUS_SESSION_BUS_ADDRESS),
as capgate serve must: run both in the desktop session of the person.`,
	}
	var asJSON bool
	var data, alias string
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the apps on the accessibility bus, with the app id each would get",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := context.Background()
			bus, apps, err := desktopApps(ctx)
			if err != nil {
				return err
			}
			defer bus.Close()
			type row struct {
				Name  string `json:"name"`
				AppID string `json:"app_id,omitempty"`
			}
			var out []row
			for _, a := range apps {
				id, _ := desktop.AppIDOf(a.Name)
				out = append(out, row{a.Name, id})
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			if len(out) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no app is registered with the accessibility bus")
			}
			for _, r := range out {
				fmt.Fprintf(cmd.OutOrStdout(), "%-40s %s\n", r.Name, r.AppID)
			}
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	add := &cobra.Command{
		Use:   "add APP_NAME [--alias NAME] [--data DIR] [--json]",
		Short: "Derive a running app's capabilities from its accessibility tree and register them at Tier 2",
		Long: `Walks the app's accessibility tree (bounded in depth, count and time), derives its capabilities
and registers them as a Tier 2 app named desktop.APP_ID, pinned to the tree's shape: when the tree
changes shape, the app stops working until it is added again. Adding an app again registers what
its tree offers now.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := context.Background()
			bus, apps, err := desktopApps(ctx)
			if err != nil {
				return err
			}
			defer bus.Close()
			var app *desktop.App
			for i := range apps {
				if apps[i].Name == args[0] {
					app = &apps[i]
					break
				}
			}
			if app == nil {
				return &exitError{code: exitNo, err: fmt.Errorf("no app named %q is on the accessibility bus (capgate desktop list shows them)", args[0])}
			}
			tree, err := bus.Walk(ctx, *app)
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			d, err := desktop.Derive(tree)
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			if alias == "" {
				alias = d.AppID[strings.LastIndexByte(d.AppID, '.')+1:]
			}
			// The record first: the gateway finds it once the app is registered.
			st, _, err := g.openStore(ctx, data, true)
			if err != nil {
				return err
			}
			err = desktop.SaveRecord(ctx, st, desktop.RecordOf(d, app.Name, time.Now()))
			st.Close()
			if err != nil {
				return err
			}
			return g.onChanges(cmd, changeTarget{data: data, create: true}, func(ctx context.Context, ch *changes) error {
				reg, err := ch.RegisterApp(ctx, byTheOperator(), d.Manifest, alias)
				if err != nil {
					return &exitError{code: exitNo, err: err}
				}
				doc, _ := manifest.Parse(d.Manifest)
				if asJSON {
					var ids []string
					for _, c := range doc.Manifest().Capabilities {
						ids = append(ids, c.ID)
					}
					return writeJSON(cmd.OutOrStdout(), map[string]any{"app_id": reg.ID, "alias": reg.Alias, "tier": reg.Tier,
						"shape": d.Shape, "truncated": tree.Truncated, "capabilities": ids})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s registered as %q at Tier %d, from %d elements%s:\n", reg.ID, reg.Alias, reg.Tier, tree.Nodes,
					map[bool]string{true: " (the tree was cut short at its bounds)", false: ""}[tree.Truncated])
				for _, c := range doc.Manifest().Capabilities {
					fmt.Fprintf(cmd.OutOrStdout(), "  %-60s %s, %s risk\n", c.ID, c.SideEffects, c.Risk)
				}
				return nil
			})
		},
	}
	add.Flags().StringVar(&alias, "alias", "", "short name agents use for the app (default: the app id's last label)")
	add.Flags().StringVar(&data, "data", "", "data folder (default $CAPGATE_DATA_DIR, else as configured)")
	add.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.AddCommand(list, add)
	return cmd
}

// desktopApps connects to the accessibility bus of the command's session and lists its apps;
// the caller closes the bus. Without a bus, or when it does not answer, the command says no.
func desktopApps(ctx context.Context) (*desktop.Bus, []desktop.App, error) {
	bus, err := desktop.Connect(ctx)
	if err != nil {
		return nil, nil, &exitError{code: exitNo, err: err}
	}
	apps, err := bus.Apps(ctx)
	if err != nil {
		bus.Close()
		return nil, nil, &exitError{code: exitNo, err: err}
	}
	return bus, apps, nil
}
