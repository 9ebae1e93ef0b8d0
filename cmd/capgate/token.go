package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
)

func newTokenCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Request, derive and revoke capability tokens"}
	var f tokenTerms
	req := &cobra.Command{
		Use:   "request --capabilities LIST --max-uses N --duration D [--reason TEXT] [--constraints JSON]",
		Short: "Request a token and print it (its only line), waiting for consent where needed",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			secs, err := parseDuration(f.duration)
			if err != nil {
				return usageErr("--duration: %v", err)
			}
			raw, err := constraintsFlag(cmd, f.cons, "")
			if err != nil {
				return err
			}
			cl, err := f.cf.client()
			if err != nil {
				return err
			}
			tok, err := cl.RequestCapability(context.Background(), client.TokenRequest{Capabilities: splitList(f.caps),
				Duration: lifetime(secs), MaxUses: f.maxUses, Reason: f.reason, ConstraintsJSON: raw})
			return printToken(cmd, tok, err)
		},
	}
	f.register(req, termsHelp{
		capabilities:    "comma-separated permissions or patterns such as fs.read,app.notes.*",
		maxUses:         "most uses (0: no limit)",
		duration:        "how long the token lives: seconds or a Go duration such as 30m",
		durationDefault: "1h",
		reason:          "why, shown to the person and recorded as the audit tag",
		constraints:     `constraints JSON, e.g. {"allowed_paths":["/home/me/*"]}`,
	})

	var data string
	var rcf clientFlags
	revoke := &cobra.Command{
		Use:   "revoke TOKEN [--server URL --client-key KEY | --data DIR]",
		Short: "Revoke a token (its wire form or its id) and every token derived from it",
		Long: `Revoke a token and every token derived from it. With a client key (--client-key or
$CAPGATE_CLIENT_KEY) the gateway revokes one of that client's own tokens; without one, capgate
revokes any token directly in the data folder's store, as the operator or the person.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if data == "" && config.Resolve(rcf.key, "CAPGATE_CLIENT_KEY", "", "") != "" {
				cl, err := rcf.client()
				if err != nil {
					return err
				}
				id, err := cl.Revoke(context.Background(), args[0])
				var ce *client.Error
				switch {
				case errors.As(err, &ce):
					return &exitError{code: exitNo, err: errors.New(ce.Message)}
				case err != nil:
					return gatewayFailure(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", id)
				return nil
			}
			id := args[0]
			if t, err := token.Parse(args[0]); err == nil {
				id = t.ID
			}
			if len(id) > audit.MaxFieldBytes {
				return &exitError{code: exitNo, err: errors.New("no such token")}
			}
			return g.onChanges(cmd, changeTarget{data: data}, func(ctx context.Context, ch *changes) error {
				if err := ch.Revoke(ctx, byTheOperator(), id); err != nil {
					if errors.Is(err, store.ErrNotFound) {
						return &exitError{code: exitNo, err: errors.New("no such token")}
					}
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", id)
				return nil
			})
		},
	}
	revoke.Flags().StringVar(&data, "data", "", "data folder (revoke directly in the store)")
	rcf.register(revoke)
	cmd.AddCommand(req, revoke, newTokenDeriveCmd())
	return cmd
}

// tokenTerms are the flags of token request and token derive: the gateway to ask and the
// terms of the token asked for.
type tokenTerms struct {
	cf                           clientFlags
	caps, reason, cons, duration string
	maxUses                      int64
}

// termsHelp is what each flag of tokenTerms says in one command, and --duration's default.
type termsHelp struct{ capabilities, maxUses, duration, durationDefault, reason, constraints string }

func (f *tokenTerms) register(cmd *cobra.Command, h termsHelp) {
	f.cf.register(cmd)
	cmd.Flags().StringVar(&f.caps, "capabilities", "", h.capabilities)
	cmd.Flags().Int64Var(&f.maxUses, "max-uses", 0, h.maxUses)
	cmd.Flags().StringVar(&f.duration, "duration", h.durationDefault, h.duration)
	cmd.Flags().StringVar(&f.reason, "reason", "", h.reason)
	cmd.Flags().StringVar(&f.cons, "constraints", "", h.constraints)
}

func newTokenDeriveCmd() *cobra.Command {
	var f tokenTerms
	cmd := &cobra.Command{
		Use:   "derive TOKEN --capabilities LIST [--max-uses N] [--duration D] [--reason TEXT] [--constraints JSON]",
		Short: "Derive a narrower token from one of this client's tokens and print it (its only line)",
		Long: `Derive a child token from TOKEN (attenuation): it may grant only what TOKEN grants, expire
no later, allow no more uses, and its constraints are added to TOKEN's (paths and commands
within TOKEN's, denied lists kept). No consent is asked: the child can do nothing its parent
cannot. Its uses count against the parent, and revoking the parent revokes it.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := client.DeriveRequest{Parent: args[0], Capabilities: splitList(f.caps), MaxUses: f.maxUses, Reason: f.reason}
			if f.duration != "" {
				secs, err := parseDuration(f.duration)
				if err != nil {
					return usageErr("--duration: %v", err)
				}
				r.Duration = lifetime(secs)
			}
			var err error
			if r.ConstraintsJSON, err = constraintsFlag(cmd, f.cons, args[0]); err != nil {
				return err
			}
			cl, err := f.cf.client()
			if err != nil {
				return err
			}
			tok, err := cl.Derive(context.Background(), r)
			return printToken(cmd, tok, err)
		},
	}
	f.register(cmd, termsHelp{
		capabilities: "comma-separated grants, each within a grant of TOKEN",
		maxUses:      "most uses (0: the parent's limit)",
		duration:     "how long the child lives (default: until the parent expires)",
		reason:       "why; recorded as the child's audit tag",
		constraints:  `constraints JSON added to the parent's, e.g. {"allowed_paths":["/home/me/docs/**"]}`,
	})
	return cmd
}

// constraintsFlag is the --constraints JSON cons, sent as it stands for the gateway to decode
// strictly (nil when not given), after the warnings token.RequestWarnings has about it and
// the parent token, if any.
func constraintsFlag(cmd *cobra.Command, cons, parent string) (json.RawMessage, error) {
	if cons != "" && !json.Valid([]byte(cons)) {
		return nil, usageErr("--constraints: not JSON")
	}
	for _, w := range token.RequestWarnings([]byte(cons), parent) {
		fmt.Fprintln(cmd.ErrOrStderr(), "capgate: warning:", w)
	}
	if cons == "" {
		return nil, nil
	}
	return json.RawMessage(cons), nil
}

// printToken prints an issued token as the command's only line; a refusal is exit 1 with the
// code and message, and names the consent request when the person has yet to answer.
func printToken(cmd *cobra.Command, tok *client.Token, err error) error {
	var ce *client.Error
	switch {
	case errors.As(err, &ce):
		msg := ce.Message
		if ce.Consent != nil {
			msg += " (request " + ce.Consent.ID + ": capgate approvals approve " + ce.Consent.ID + ")"
		}
		return &exitError{code: exitNo, err: fmt.Errorf("%s: %s", ce.Code, msg)}
	case err != nil:
		return gatewayFailure(err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), tok.Wire)
	return nil
}

func parseDuration(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return 0, errors.New("must be seconds or a duration such as 30m")
	}
	return int64(d / time.Second), nil
}

// lifetime is secs as the client's Duration, which it sends as whole seconds again. Beyond
// what a Duration holds (292 years) it is held at the most one does, which the gateway
// refuses as too long all the same.
func lifetime(secs int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Second)
	return time.Duration(max(-most, min(secs, most))) * time.Second
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
