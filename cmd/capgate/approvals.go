package main

import (
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
// reversibility, reason, audit tag), its state and times, and its page when known.
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
	Details    consent.Request `json:"details"`
	URL        string          `json:"url,omitempty"`
}

func newConsentView(c store.Consent, r consent.Request, url string) consentView {
	v := consentView{ID: c.ID, Kind: c.Kind, State: c.State, ClientID: c.ClientID, Created: c.Created.UTC(),
		Expires: c.Expires.UTC(), AnsweredBy: c.AnsweredBy, Agreed: c.Wording, Details: r, URL: url}
	if !c.Answered.IsZero() {
		at := c.Answered.UTC()
		v.Answered = &at
	}
	return v
}
