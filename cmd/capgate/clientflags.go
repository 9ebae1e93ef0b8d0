package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/gateway"
)

// clientFlags are how a client command reaches the gateway: as the client whose key it
// holds, through the public Go client.
type clientFlags struct{ server, key string }

func (c *clientFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.server, "server", "", "gateway URL (default $CAPGATE_SERVER, else http://127.0.0.1:7766)")
	cmd.Flags().StringVar(&c.key, "client-key", "", "client key (default $CAPGATE_CLIENT_KEY)")
}

// resolve is the gateway's URL and the client key, each flag > environment > default; no
// key is a usage error.
func (c *clientFlags) resolve() (server, key string, err error) {
	server = config.Resolve(c.server, "CAPGATE_SERVER", "", "http://"+gateway.DefaultListen)
	key = config.Resolve(c.key, "CAPGATE_CLIENT_KEY", "", "")
	if key == "" {
		return "", "", usageErr("no client key: pass --client-key or set CAPGATE_CLIENT_KEY")
	}
	return server, key, nil
}

// client is the gateway's client for these flags. It has no timeout of its own: a token
// request waits as long as its request lives, and an interrupt ends the process, whose closed
// connection withdraws the request.
func (c *clientFlags) client() (*client.Client, error) {
	server, key, err := c.resolve()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(&client.Options{Server: server, Key: key})
	var oe *client.OptionError
	if errors.As(err, &oe) {
		flag := map[string]string{"Server": "--server", "Key": "--client-key"}[oe.Option]
		return nil, usageErr("%s: %s", flag, oe.Rule)
	}
	return cl, err
}

// gatewayFailure is the error of a client call that got no answer of the gateway's: the
// transport's (exit 1, "cannot reach the gateway"), or an answer that is not the API's.
func gatewayFailure(err error) error {
	var pe *client.ProtocolError
	if errors.As(err, &pe) {
		return &exitError{code: exitNo, err: pe}
	}
	return &exitError{code: exitNo, err: fmt.Errorf("cannot reach the gateway: %w", err)}
}
