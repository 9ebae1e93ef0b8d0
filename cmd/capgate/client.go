package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
)

func newClientCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "client", Short: "Manage the agents that may call the gateway"}
	var trust, data, assistant string
	var neverAsk, requireToken bool
	var uid int64
	add := &cobra.Command{
		Use:   "add NAME [--trust LEVEL] [--uid UID] [--require-token] [--assistant KIND] [--data DIR]",
		Short: "Add a client and print its key (its only line of output)",
		Long: `Add a client (an agent) and print its key as the only line of output. The key is shown once;
capgate keeps only its hash. The agent sends it as "Authorization: Bearer KEY".
Trust levels: public, user (the default), privileged.
--uid binds a unix user id: a process of that user that connects to the gateway's unix socket
without a key is this client (every process of that user, so bind a user that runs only the
agent). --require-token makes every call of the client need a token, even a low-risk read.
--assistant marks another assistant (not an agent of yours): "keeps" when its provider stores
or trains on what it is given, or does not say, "private" when it does neither. Such a client
never reaches a sensitive data class (health, financial, location, ...), and reaches
personal context (memory, preferences, history, ...) only when it is "private".`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := operator.ValidClientName(args[0]); err != nil {
				return usageErr("NAME: %w", err)
			}
			switch trust {
			case "public", "user", "privileged":
			default:
				return usageErr("--trust: must be public, user or privileged")
			}
			switch assistant {
			case "", "keeps", "private":
			default:
				return usageErr("--assistant: must be keeps or private")
			}
			var unixUID *int
			if cmd.Flags().Changed("uid") {
				if uid < 0 || uid > operator.MaxUnixUID {
					return usageErr("--uid: must be a unix user id, 0 to %d", operator.MaxUnixUID)
				}
				u := int(uid)
				unixUID = &u
			}
			return g.onChanges(cmd, changeTarget{data: data, create: true}, func(ctx context.Context, ch *changes) error {
				key, _, err := ch.AddClient(ctx, byTheOperator(), operator.NewClient{Name: args[0], Trust: trust, NeverAsk: neverAsk,
					RequireToken: requireToken, UnixUID: unixUID, Assistant: assistant})
				if err != nil {
					if errors.Is(err, store.ErrExists) {
						return &exitError{code: exitNo, err: fmt.Errorf("a client named %q, or bound to that uid, exists", args[0])}
					}
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), key)
				return nil
			})
		},
	}
	add.Flags().StringVar(&trust, "trust", "user", "trust level: public, user or privileged")
	add.Flags().BoolVar(&neverAsk, "never-ask", false, "refuse calls that would need consent instead of asking")
	add.Flags().StringVar(&data, "data", "", "data folder")
	add.Flags().Int64Var(&uid, "uid", 0, "bind a unix user id: a peer of the gateway's unix socket with this uid is this client")
	add.Flags().BoolVar(&requireToken, "require-token", false, "every call of this client needs a token, even a low-risk read")
	add.Flags().StringVar(&assistant, "assistant", "", `another assistant, not an agent of yours: "keeps" (its provider may store or train on data) or "private" (it does neither)`)
	cmd.AddCommand(add)
	addClientCommands(cmd, g)
	return cmd
}

// clientView is a client as `client list --json` and `client show` print it: never its key
// or the key's hash.
type clientView struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Trust        string    `json:"trust"`
	Disabled     bool      `json:"disabled"`
	NeverAsk     bool      `json:"never_ask"`
	RequireToken bool      `json:"require_token"`
	Assistant    string    `json:"assistant,omitempty"` // "keeps" or "private" for another assistant
	UnixUID      *int      `json:"unix_uid,omitempty"`
	Created      time.Time `json:"created"`
	LiveTokens   int       `json:"live_tokens"` // tokens it can use now (store.Tokens.ListTokens live)
	Removed      bool      `json:"removed,omitempty"`
}

func newClientView(c store.Client, live int) clientView {
	return clientView{ID: c.ID, Name: c.Name, Trust: string(c.Trust), Disabled: c.Disabled, NeverAsk: c.NeverAsk,
		RequireToken: c.RequireToken, Assistant: c.Assistant, UnixUID: c.UnixUID, Created: c.Created.UTC(), LiveTokens: live}
}

// liveTokens counts each client's live tokens.
func liveTokens(ctx context.Context, st store.Store) (map[string]int, error) {
	ts, err := st.ListTokens(ctx, true, time.Now())
	if err != nil {
		return nil, err
	}
	n := map[string]int{}
	for _, t := range ts {
		n[t.ClientID]++
	}
	return n, nil
}

// addClientCommands adds list, show, disable, enable and remove to the client command.
func addClientCommands(cmd *cobra.Command, g *globals) {
	var data string
	var asJSON bool
	flags := func(c *cobra.Command) {
		c.Flags().StringVar(&data, "data", "", "data folder (default $CAPGATE_DATA_DIR, else as configured)")
		c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	}
	list := &cobra.Command{
		Use:   "list [--json] [--data DIR]",
		Short: "List the clients: id, name, trust, enabled or disabled, live tokens",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.onStore(data, func(ctx context.Context, st store.Store) error {
				cs, err := st.ListClients(ctx)
				if err != nil {
					return err
				}
				live, err := liveTokens(ctx, st)
				if err != nil {
					return err
				}
				out := make([]clientView, 0, len(cs))
				for _, c := range cs {
					out = append(out, newClientView(c, live[c.ID]))
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, out)
				}
				if len(out) == 0 {
					fmt.Fprintln(w, "no clients: add one with capgate client add NAME")
				}
				for _, v := range out {
					printClient(w, v)
				}
				return nil
			})
		},
	}
	flags(list)
	show := &cobra.Command{
		Use:   "show CLIENT [--data DIR]",
		Short: "Show one client (by id or name) as JSON",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.onStore(data, func(ctx context.Context, st store.Store) error {
				c, err := findClient(ctx, st, args[0])
				if err != nil {
					return err
				}
				live, err := liveTokens(ctx, st)
				if err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), newClientView(c, live[c.ID]))
			})
		},
	}
	show.Flags().StringVar(&data, "data", "", "data folder (default $CAPGATE_DATA_DIR, else as configured)")
	cmd.AddCommand(list, show)

	for _, a := range []struct {
		action operator.ClientAction
		short  string
		done   string
	}{
		{operator.ClientDisable, "Disable a client (by id or name): its key, its uid and its tokens are refused until it is enabled", "disabled"},
		{operator.ClientEnable, "Enable a disabled client again: its key, its uid and its live tokens work again", "enabled"},
		{operator.ClientRemove, "Remove a client (by id or name) for good, and revoke its tokens and every token derived from them", "removed"},
	} {
		c := &cobra.Command{
			Use:   string(a.action) + " CLIENT [--json] [--data DIR]",
			Short: a.short,
			Long: a.short + `.

With a gateway serving the data folder, the gateway makes the change; otherwise it is made in
the folder's store directly (--data, or --store for PostgreSQL): every replica refuses a
disabled or removed client at its very next call. It is recorded in the audit log as the operator's (client.` + string(a.action) + `), a decision
before and its outcome after; a disable or a removal is made even when the log cannot record
it, an enable is not. With --json, prints the client as it is after (a removed one as it was,
with "removed": true).`,
			Args: exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return g.onStore(data, func(ctx context.Context, st store.Store) error {
					cl, err := findClient(ctx, st, args[0])
					if err != nil {
						return err
					}
					live, err := liveTokens(ctx, st)
					if err != nil {
						return err
					}
					ch, err := g.openChanges(ctx, cmd, changeTarget{data: data})
					if err != nil {
						return err
					}
					_, err = ch.ChangeClient(ctx, byTheOperator(), cl.ID, a.action)
					ch.close()
					if err != nil {
						if errors.Is(err, store.ErrNotFound) {
							return &exitError{code: exitNo, err: errors.New("no such client")}
						}
						return &exitError{code: exitNo, err: err}
					}
					v := newClientView(cl, live[cl.ID])
					if a.action == operator.ClientRemove {
						v.Removed = true
					} else if now, err := st.GetClient(ctx, cl.ID); err == nil {
						v = newClientView(now, live[cl.ID])
					}
					w := cmd.OutOrStdout()
					if asJSON {
						return writeJSON(w, v)
					}
					fmt.Fprintf(w, "%s (%s) %s\n", cl.ID, printable(cl.Name), a.done)
					if a.action == operator.ClientRemove && live[cl.ID] > 0 {
						fmt.Fprintf(w, "revoked its %d live token(s)\n", live[cl.ID])
					}
					return nil
				})
			},
		}
		flags(c)
		cmd.AddCommand(c)
	}
}

// findClient finds a client by id or name; none is exit 1.
func findClient(ctx context.Context, st store.Store, ref string) (store.Client, error) {
	c, err := operator.FindClient(ctx, st, ref)
	if errors.Is(err, store.ErrNotFound) {
		return c, &exitError{code: exitNo, err: errors.New("no such client")}
	}
	return c, err
}

// printClient prints one client on one line.
func printClient(w io.Writer, v clientView) {
	state := "enabled"
	if v.Disabled {
		state = "disabled"
	}
	var extra []string
	if v.UnixUID != nil {
		extra = append(extra, "uid "+strconv.Itoa(*v.UnixUID))
	}
	if v.RequireToken {
		extra = append(extra, "require-token")
	}
	if v.NeverAsk {
		extra = append(extra, "never-ask")
	}
	if v.Assistant != "" {
		extra = append(extra, "assistant "+v.Assistant)
	}
	fmt.Fprintf(w, "%s  %s  trust %s  %s  %d live token(s)  added %s", v.ID, printable(v.Name), v.Trust, state, v.LiveTokens,
		v.Created.Format(time.RFC3339))
	if len(extra) > 0 {
		fmt.Fprintf(w, "  %s", strings.Join(extra, ", "))
	}
	fmt.Fprintln(w)
}

// printable is s as it stands when every character is a printable one other than a space,
// else quoted, so that a name cannot move the terminal's cursor or pass for two columns.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}
