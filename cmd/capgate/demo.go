package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/demo"
)

func newDemoCmd(g *globals) *cobra.Command {
	var data string
	var keep, asJSON bool
	cmd := &cobra.Command{
		Use:   "demo [--data DIR] [--keep] [--json]",
		Short: "Watch a scripted agent session against a fresh gateway, step by step",
		Long: `Run a scripted agent session against a fresh capgate serve (a child process on a free
loopback port) and tell each step in plain words: what the agent asks, what capgate answers,
and why. The demo also plays the person, approving from the CLI what needs consent.

The steps: start the gateway; add a client; a read-only token issued at once; list and read
the workspace; a write that needs consent, then its undo; a terminal command refused by the
token's constraints; a delete that waits for the person; a calculation; a Python script;
stopping the gateway and verifying the audit log.

The data folder is a new temporary folder, removed at the end unless --keep; or --data DIR,
which must be empty or not exist, and is kept. Exit 0 when every step went as scripted, 1
when one did not (which, and why, is said).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("demo: cannot find the capgate executable: %w", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o := demo.Options{Exe: exe, DataDir: data, Keep: keep, Config: g.config, Out: cmd.OutOrStdout()}
			if asJSON {
				o.Out = nil
			}
			rep, err := demo.Run(ctx, o)
			if errors.Is(err, demo.ErrNotFresh) {
				return usageErr("--data %s: must be empty or not exist", data)
			}
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			}
			if f := rep.Failed(); f != nil {
				if !asJSON {
					return said // the narration ends with which step, and why
				}
				return &exitError{code: exitNo, err: fmt.Errorf("demo: step %d (%s) did not go as scripted: %s", f.N, f.Title, f.Error)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder, empty or new, kept at the end (default: a temporary folder)")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temporary data folder")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the steps as JSON instead of telling them")
	return cmd
}
