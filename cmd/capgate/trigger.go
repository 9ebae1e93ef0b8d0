package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/trigger"
)

func newTriggerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trigger",
		Short: "List, show, pause, resume and delete triggers (\"when X happens, do Y\")",
		Long: `A trigger is proposed by an agent (POST /v1/triggers, or the MCP tool capgate__propose_trigger)
and fires only once the person approved it on the approval page. Each firing is decided afresh
under the person's mandate of the moment, within its budget and before its end date.

These commands work on the data folder's store (--data, or --store for PostgreSQL), beside a
running gateway: its engine reads every trigger again at each step, so a pause or a delete
holds from its next step on. Every change is recorded in the audit log as the operator's.`,
	}
	var data string
	var asJSON bool
	flags := func(c *cobra.Command) {
		c.Flags().StringVar(&data, "data", "", "data folder (default $CAPGATE_DATA_DIR, else as configured)")
		c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	}
	list := &cobra.Command{
		Use:   "list [--json] [--data DIR]",
		Short: "List every trigger: its state, source, action, budget left and next firing",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.onTriggers(cmd, data, func(ctx context.Context, en *trigger.Engine) error {
				vs, err := en.List(ctx, "")
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, vs)
				}
				if len(vs) == 0 {
					fmt.Fprintln(w, "no triggers: an agent proposes one, and the person approves it on the approval page")
				}
				for _, v := range vs {
					printTrigger(w, v)
				}
				return nil
			})
		},
	}
	flags(list)
	show := &cobra.Command{
		Use:   "show TRIGGER [--json] [--data DIR]",
		Short: "Show one trigger with its recent firings",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.onTriggers(cmd, data, func(ctx context.Context, en *trigger.Engine) error {
				v, err := en.Get(ctx, args[0], "")
				if err != nil {
					return triggerErr(args[0], err)
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, v)
				}
				printTrigger(w, v)
				if len(v.Recent) == 0 {
					fmt.Fprintln(w, "  no firings yet")
				}
				for _, f := range v.Recent {
					line := fmt.Sprintf("  %s  %-11s %s", f.At.UTC().Format(time.RFC3339), f.State, f.ID)
					if f.Why != "" {
						line += ": " + f.Why
					}
					fmt.Fprintln(w, line)
				}
				return nil
			})
		},
	}
	flags(show)
	cmd.AddCommand(list, show)
	for _, c := range []struct {
		name, short string
		change      func(*trigger.Engine, context.Context, string, string) (trigger.View, error)
	}{
		{"pause", "Pause a trigger: its scheduled times pass unrun, its webhook and events are refused", (*trigger.Engine).Pause},
		{"resume", "Resume a paused trigger: it fires again from now on (the times it missed paused are not run)", (*trigger.Engine).Resume},
		{"delete", "Delete a trigger for good: its token is revoked and it never fires again (the audit log keeps its history)", (*trigger.Engine).Delete},
	} {
		sub := &cobra.Command{
			Use:   c.name + " TRIGGER [--json] [--data DIR]",
			Short: c.short,
			Args:  exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return g.onTriggers(cmd, data, func(ctx context.Context, en *trigger.Engine) error {
					v, err := c.change(en, ctx, args[0], approver())
					if err != nil {
						return triggerErr(args[0], err)
					}
					if asJSON {
						return writeJSON(cmd.OutOrStdout(), v)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", v.ID, map[string]string{"pause": "paused", "resume": "resumed", "delete": "deleted"}[c.name])
					return nil
				})
			},
		}
		flags(sub)
		cmd.AddCommand(sub)
	}
	return cmd
}

// onTriggers runs fn with a trigger engine on the data folder's store, which changes
// triggers and records each change in the folder's audit log, and fires nothing.
func (g *globals) onTriggers(cmd *cobra.Command, data string, fn func(ctx context.Context, en *trigger.Engine) error) error {
	ctx := context.Background()
	st, dir, err := g.localStore(ctx, data)
	if err != nil {
		return err
	}
	defer st.Close()
	l := gateway.OpenOperatorLog(st, dir, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
	en := trigger.New(trigger.Options{Store: st, Consent: consent.New(st, &consent.Options{Surface: true}), Audit: l.Recorder()})
	err = fn(ctx, en)
	if cerr := l.Close(); cerr != nil {
		warnOn(cmd)("audit", cerr)
	}
	return err
}

// triggerErr is a trigger command's error: exit 1 for no such trigger or a state that does
// not allow the change.
func triggerErr(id string, err error) error {
	switch {
	case errors.Is(err, trigger.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return &exitError{code: exitNo, err: fmt.Errorf("no trigger %s", id)}
	case errors.Is(err, trigger.ErrState):
		return &exitError{code: exitNo, err: err}
	}
	return err
}

// printTrigger prints one trigger in a few lines.
func printTrigger(w io.Writer, v trigger.View) {
	state := v.State
	if v.Stopped != "" {
		state += ": " + v.Stopped
	}
	fmt.Fprintf(w, "%s  %s  (client %s)\n", v.ID, state, v.ClientName)
	src := v.Source.Kind
	switch v.Source.Kind {
	case trigger.SourceSchedule:
		src += " " + v.Source.Cron + " in " + v.Source.TimeZone
	case trigger.SourceWebhook:
		src += " POST " + v.HookPath
	case trigger.SourceEvent:
		src += " " + v.Source.Event + " of " + v.Source.App
	case trigger.SourceReply:
		src += " from client " + v.Source.From
	}
	fmt.Fprintf(w, "  when   %s\n", src)
	if v.Condition != "" {
		fmt.Fprintf(w, "  if     %s\n", v.Condition)
	}
	fmt.Fprintf(w, "  then   %s %s\n", v.Capability, strings.TrimSpace(string(v.Params)))
	fmt.Fprintf(w, "  budget %d of %d firings left, until %s\n", v.Left, v.MaxFirings, v.EndsAt.UTC().Format(time.RFC3339))
	if v.Next != nil {
		fmt.Fprintf(w, "  next   %s\n", v.Next.UTC().Format(time.RFC3339))
	}
}
