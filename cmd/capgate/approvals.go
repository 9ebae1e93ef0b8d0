package main

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/consent"
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
