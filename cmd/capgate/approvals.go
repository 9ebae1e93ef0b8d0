package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
)

// approvalPages makes the address of a consent request's own page on the approval page,
// "URL/ui/requests/ID", when the gateway's address is known (--server, else $CAPGATE_SERVER).
// The zero value knows none and makes none: `capgate approvals` reads the store, and cannot
// guess where a gateway listens.
type approvalPages struct{ base string }

// newApprovalPages resolves the gateway's URL from flag and the environment; one that is not
// an http or https URL is a usage error.
func newApprovalPages(flag string) (approvalPages, error) {
	s := config.Resolve(flag, "CAPGATE_SERVER", "", "")
	if s == "" {
		return approvalPages{}, nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return approvalPages{}, usageErr("--server: must be the gateway's http or https URL, such as http://127.0.0.1:7766")
	}
	return approvalPages{base: strings.TrimRight(s, "/")}, nil
}

// of returns the page of the request id, "" when the gateway's address is unknown.
func (p approvalPages) of(id string) string {
	if p.base == "" {
		return ""
	}
	return p.base + "/ui/requests/" + url.PathEscape(id)
}

// consentView is one request as `approvals list --json` and `approvals show` print it: what
// the person decides on (details: who asks, the capability, its params shown safely, risk,
// reversibility, reason, audit tag, and in words what it means, consent.Describe: a token's
// uses, lifetime, expiry, constraints and that it is revocable, whether a call can be
// undone, the look-alike characters found), its state and times, and its page when known.
type consentView struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	State      string          `json:"state"`
	ClientID   string          `json:"client_id"`
	Created    time.Time       `json:"created"`
	Expires    time.Time       `json:"expires"`
	Answered   *time.Time      `json:"answered,omitempty"`
	AnsweredBy string          `json:"answered_by,omitempty"`
	Agreed     string          `json:"agreed_wording,omitempty"` // the wording an approval agreed to
	Details    consent.Details `json:"details"`
	URL        string          `json:"url,omitempty"`
}

func newConsentView(c store.Consent, r consent.Request, url string) consentView {
	v := consentView{ID: c.ID, Kind: c.Kind, State: c.State, ClientID: c.ClientID, Created: c.Created.UTC(),
		Expires: c.Expires.UTC(), AnsweredBy: c.AnsweredBy, Agreed: c.Wording, Details: consent.Describe(r), URL: url}
	if !c.Answered.IsZero() {
		at := c.Answered.UTC()
		v.Answered = &at
	}
	return v
}

// consentLines is a pending request as `approvals list` prints it, seen at now: a line of who
// asks what, at which risk, whether it can be undone and when the request expires; for a
// token request a line of what the token would be (uses, lifetime, constraints); and a line
// for each text holding look-alike characters. Every line ends in a line feed.
func consentLines(c store.Consent, r consent.Request, now time.Time) string {
	d := consent.Describe(r)
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s  %s asks: %s %s (risk %s; %s)  expires %s\n", c.ID, c.Kind, orNone(r.ClientName),
		r.Summary, strings.Join(r.Grants, ","), orNone(r.Risk), d.Undo, consent.ShowWhen(c.Expires, now))
	if r.Kind == consent.KindToken {
		lasts := d.Lifetime
		if d.ExpiresAt != nil {
			lasts += ", until " + consent.ShowDate(*d.ExpiresAt)
		}
		fmt.Fprintf(&b, "  the token: %s; lasts %s; constraints: %s\n", d.Uses, lasts, strings.Join(d.Constraints, "; "))
	}
	for _, l := range d.Lookalikes {
		fmt.Fprintf(&b, "  look-alike characters in %s: %s", l.Field, strings.Join(l.Flags, "; "))
		if len(l.Shown) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(l.Shown, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func newApprovalsCmd(g *globals) *cobra.Command {
	var data, server string
	var asJSON, remember bool
	cmd := &cobra.Command{
		Use:   "approvals list|show|approve|deny|cancel [ID]",
		Short: "Answer the consent requests waiting for you",
		Long: `List, show and answer the consent requests the gateway holds for the person: approve or deny
a pending request, or cancel an irreversible call during its delayed-commit window.
--remember on approve records an act_if_agreed mandate with the request's wording.
With the gateway's URL (--server, or $CAPGATE_SERVER), list and show print each request's own
page on the approval page, URL/ui/requests/ID.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || (args[0] == "list" && len(args) != 1) || (args[0] != "list" && len(args) != 2) {
				return usageErr("usage: capgate approvals list | show ID | approve ID | deny ID | cancel ID")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.onStore(data, func(ctx context.Context, st store.Store) error {
				cs := consent.New(st, &consent.Options{Surface: true})
				pages, err := newApprovalPages(server)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				var aerr error
				switch args[0] {
				case "list":
					list, err := cs.List(ctx, store.ConsentPending)
					if err != nil {
						return err
					}
					if asJSON {
						out := make([]consentView, 0, len(list))
						for _, c := range list {
							_, r, err := cs.Get(ctx, c.ID)
							if err != nil {
								return err
							}
							out = append(out, newConsentView(c, r, pages.of(c.ID)))
						}
						return writeJSON(w, out)
					}
					for _, c := range list {
						_, r, _ := cs.Get(ctx, c.ID)
						fmt.Fprint(w, consentLines(c, r, time.Now()))
						if u := pages.of(c.ID); u != "" {
							fmt.Fprintf(w, "  answer at %s\n", u)
						}
					}
					if len(list) == 0 {
						fmt.Fprintln(w, "no pending requests")
					}
					return nil
				case "show":
					c, r, err := cs.Get(ctx, args[1])
					if err != nil {
						return &exitError{code: exitNo, err: err}
					}
					return writeJSON(w, newConsentView(c, r, pages.of(c.ID)))
				case "approve", "deny", "cancel":
					if _, _, err := cs.Get(ctx, args[1]); err != nil {
						return &exitError{code: exitNo, err: err}
					}
					ch, err := g.openChanges(ctx, cmd, changeTarget{data: data})
					if err != nil {
						return err
					}
					aerr = ch.Answer(ctx, onTheCommandLine("the person"), args[1], operator.Verb(args[0]), remember)
					ch.close()
				default:
					return usageErr("unknown approvals command %q", args[0])
				}
				if aerr != nil {
					return &exitError{code: exitNo, err: aerr}
				}
				if asJSON {
					// The request as it stands now, answered.
					c, r, err := cs.Get(ctx, args[1])
					if err != nil {
						return err
					}
					return writeJSON(w, newConsentView(c, r, pages.of(c.ID)))
				}
				fmt.Fprintf(w, "%s: %s\n", args[1], map[string]string{"approve": "approved", "deny": "denied", "cancel": "cancelled"}[args[0]])
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON (with approve, deny and cancel: the request as answered)")
	cmd.Flags().BoolVar(&remember, "remember", false, "with approve: remember the agreement (act_if_agreed)")
	cmd.Flags().StringVar(&server, "server", "", "the gateway's URL, to print each request's page (default $CAPGATE_SERVER)")
	return cmd
}
