package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/client/wire"
)

// callFlags are the flags of call and explain: where the gateway is, the call's params and
// token, and --json.
type callFlags struct {
	clientFlags
	params, tok string
	asJSON      bool
}

func (f *callFlags) register(cmd *cobra.Command, jsonUsage string) {
	f.clientFlags.register(cmd)
	cmd.Flags().StringVar(&f.params, "params", "", "params JSON object")
	cmd.Flags().StringVar(&f.tok, "token", "", "capability token")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, jsonUsage)
}

// call is the call of APP METHOD with the --params JSON ("" is {}) and the --token, and the
// client that makes it.
func (f *callFlags) call(app, method string) (client.Call, *client.Client, error) {
	params := f.params
	if params == "" {
		params = "{}"
	}
	if !json.Valid([]byte(params)) {
		return client.Call{}, nil, usageErr("--params: not JSON")
	}
	cl, err := f.client()
	if err != nil {
		return client.Call{}, nil, err
	}
	return client.Call{App: app, Method: method, Params: json.RawMessage(params), Token: f.tok}, cl, nil
}

// envelopeOf is the envelope the gateway answered a call with, success or error.
func envelopeOf(res *client.Result, err error) (*wire.Response, error) {
	var ce *client.Error
	var pe *client.ProtocolError
	switch {
	case err == nil:
		return res.Envelope, nil
	case errors.As(err, &ce) && ce.Envelope != nil:
		return ce.Envelope, nil
	case errors.As(err, &pe):
		return nil, &exitError{code: exitNo, err: errors.New("the gateway's answer is not an envelope")}
	}
	return nil, gatewayFailure(err)
}

func newCallCmd() *cobra.Command {
	var cf callFlags
	cmd := &cobra.Command{
		Use:   "call APP METHOD [--params JSON] [--token TOKEN] [--json]",
		Short: "Call a capability through the gateway",
		Long: `Call a capability through the gateway's IPC API. With --json, print the response envelope.
Exit 0 on success, 1 when the gateway refuses or the capability fails.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			call, cl, err := cf.call(args[0], args[1])
			if err != nil {
				return err
			}
			resp, err := envelopeOf(cl.Call(context.Background(), call))
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if cf.asJSON {
				_ = writeJSON(w, resp)
			} else if resp.Body.Status == wire.StatusSuccess {
				fmt.Fprintln(w, string(resp.Body.Result))
				if resp.Body.UndoToken != "" {
					fmt.Fprintf(w, "undo token: %s\n", resp.Body.UndoToken)
				}
			} else {
				fmt.Fprintf(w, "%s: %s\n", resp.Body.ErrorCode, resp.Body.ErrorMessage)
			}
			if resp.Body.Status != wire.StatusSuccess {
				return said
			}
			return nil
		},
	}
	cf.register(cmd, "print the response envelope")
	return cmd
}

func newExplainCmd() *cobra.Command {
	var cf callFlags
	cmd := &cobra.Command{
		Use:   "explain APP METHOD [--params JSON] [--token TOKEN] [--json]",
		Short: "Show what a call would get and why, with no side effect",
		Long: `Ask the gateway what a call would get (allow, ask, handoff or deny, with its code) and why,
step by step, without taking a use of the token, asking anyone, recording or running anything.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			call, cl, err := cf.call(args[0], args[1])
			if err != nil {
				return err
			}
			d, err := cl.Explain(context.Background(), call)
			var ce *client.Error
			var pe *client.ProtocolError
			switch {
			case errors.As(err, &ce):
				return &exitError{code: exitNo, err: fmt.Errorf("the gateway refused the question (HTTP %d)", ce.HTTPStatus)}
			case errors.As(err, &pe):
				return &exitError{code: exitNo, err: fmt.Errorf("the gateway refused the question (HTTP %d)", pe.HTTPStatus)}
			case err != nil:
				return gatewayFailure(err)
			}
			w := cmd.OutOrStdout()
			if cf.asJSON {
				return writeJSON(w, d)
			}
			fmt.Fprintf(w, "%s", d.Outcome)
			if d.Code != "" {
				fmt.Fprintf(w, " (%s)", d.Code)
			}
			fmt.Fprintf(w, ": %s\n", d.Explanation)
			for _, line := range d.Trace {
				fmt.Fprintf(w, "  %s\n", line)
			}
			return nil
		},
	}
	cf.register(cmd, "print as JSON")
	return cmd
}

func newUndoCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "undo UNDO_TOKEN",
		Short: "Undo a call within its undo window",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := cf.client()
			if err != nil {
				return err
			}
			resp, err := envelopeOf(cl.Undo(context.Background(), args[0]))
			if err != nil {
				return err
			}
			if resp.Body.Status != wire.StatusSuccess {
				return &exitError{code: exitNo, err: fmt.Errorf("%s: %s", resp.Body.ErrorCode, resp.Body.ErrorMessage)}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "undone")
			return nil
		},
	}
	cf.register(cmd)
	return cmd
}
