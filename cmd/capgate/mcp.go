package main

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/mcp"
)

func newMCPCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "mcp [--server URL] [--client-key KEY]",
		Short: "Serve MCP over stdio, as a client of the running gateway",
		Long: `Serve the Model Context Protocol over stdin and stdout, for MCP clients that launch their
servers. It speaks to the running gateway (--server, else $CAPGATE_SERVER) as the client whose
key it holds (--client-key, else $CAPGATE_CLIENT_KEY), through the gateway's /mcp endpoint,
and offers the same tools: only the capabilities that client may use, every call through the
gateway's checks, consent and audit. It serves MCP 2026-07-28 and the revisions with the
initialize handshake (2025-11-25, 2025-06-18, 2025-03-26), as the gateway does. Nothing but
MCP is written to stdout.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// MCP, not the IPC API: the forwarder is an MCP client of the gateway's /mcp.
			server, key, err := cf.resolve()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			err = mcp.Forward(ctx, mcp.ForwardOptions{URL: server, Key: key, Version: version, Logger: logger})
			if errors.Is(err, mcp.ErrGateway) {
				return &exitError{code: exitNo, err: err}
			}
			return err
		},
	}
	cf.register(cmd)
	return cmd
}
