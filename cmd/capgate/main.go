// Command capgate is the capability gateway between AI agents and the apps they act through.
// This file and its siblings only wire flags to the packages that do the work.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// version is the release this binary was built from; set with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit codes: 0 success, 1 a check or call that says no, 2 a usage error.
const (
	exitNo    = 1
	exitUsage = 2
)

// exitError ends the command with a code; a nil err prints nothing more.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// said is a "no" that has already been printed.
var said = &exitError{code: exitNo}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "capgate:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "capgate:", err)
	// Flag and argument errors arrive as usage errors already; of cobra's own, only an
	// unknown command is left. Anything else is a failure of the work itself.
	if strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintln(stderr, "Run 'capgate --help' for usage.")
		return exitUsage
	}
	return exitNo
}

type globals struct {
	config string
	store  string // --store
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "capgate",
		Short: "The capability gateway between AI agents and the apps they act through",
		Long: `capgate verifies the signed manifests in which apps declare their capabilities, gives
agents capability tokens, asks the person before risky actions, and records every decision.

Exit codes: 0 success, 1 a check that says no, 2 a usage error.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.config, "config", "", "configuration file (default $CAPGATE_CONFIG, else $XDG_CONFIG_HOME/capgate/config.yaml)")
	root.PersistentFlags().StringVar(&g.store, "store", "", "where the gateway keeps its state: empty for SQLite in the data folder (default $CAPGATE_STORE, else store in the config file), sqlite:PATH, or a postgres:// URL shared by replicas")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%w", err) })
	root.AddCommand(newServeCmd(g), newClientCmd(g), newAppCmd(g), newTokenCmd(g), newCallCmd(), newExplainCmd(), newUndoCmd(), newApprovalsCmd(g), newAuditCmd(g),
		newManifestCmd(g), newPluginCmd(g), newPolicyCmd(g), newCanonCmd(), newKeygenCmd(), newBenchCmd(g))
	root.AddCommand(newDemoCmd(g))
	root.AddCommand(newMCPCmd())
	root.AddCommand(newToolServerCmd(g))
	root.AddCommand(newUICmd(g))
	root.AddCommand(newDefinitionCmd(g), newNegotiateCmd(g))
	root.AddCommand(newTriggerCmd(g), newDesktopCmd(g))
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command that only groups others (capgate audit,
// capgate client) print its help when run alone and refuse anything else as a usage error
// naming the nearest subcommand: cobra would print the help and exit 0 for capgate audit
// verfy, as though the check had passed.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Run != nil || c.RunE != nil || !c.HasParent() {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		hint := ""
		cmd.SuggestionsMinimumDistance = 2
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			hint = "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageErr("unknown command %q for %q%s (run '%s --help' for its commands)", args[0], cmd.CommandPath(), hint, cmd.CommandPath())
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// exactArgs is cobra.ExactArgs as a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageErr("%s: %w", cmd.CommandPath(), err)
		}
		return nil
	}
}

func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MaximumNArgs(n)(cmd, args); err != nil {
			return usageErr("%s: %w", cmd.CommandPath(), err)
		}
		return nil
	}
}
