package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/web"
)

func newUICmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "ui", Short: "The approval page: a fresh login link"}
	var data, server string
	link := &cobra.Command{
		Use:   "link [--data DIR] [--server URL]",
		Short: "Print a fresh one-time login link to the approval page",
		Long: `Print a fresh one-time login link to the approval page, for the person at this machine: it is
made in the gateway's store, so only someone who can read the data folder's store can make
one. It works once, for 10 minutes, on any replica of the gateway. The link printed names
--server (default $CAPGATE_SERVER, else http://127.0.0.1:7766); open it in the browser the
person uses.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, _, err := g.localStore(cmd.Context(), data)
			if err != nil {
				return err
			}
			defer st.Close()
			path, err := web.StoreLoginLink(cmd.Context(), st, time.Now())
			if err != nil {
				return err
			}
			base := strings.TrimRight(config.Resolve(server, "CAPGATE_SERVER", "", "http://"+gateway.DefaultListen), "/")
			fmt.Fprintln(cmd.OutOrStdout(), base+path)
			fmt.Fprintf(cmd.ErrOrStderr(), "works once, for %s: open it in the person's browser\n", web.LoginTTL)
			return nil
		},
	}
	link.Flags().StringVar(&data, "data", "", "data folder (default $CAPGATE_DATA_DIR, else $XDG_DATA_HOME/capgate)")
	link.Flags().StringVar(&server, "server", "", "the gateway's URL the link names (default $CAPGATE_SERVER, else http://127.0.0.1:7766)")
	cmd.AddCommand(link)
	return cmd
}
