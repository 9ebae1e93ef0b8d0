package main

import (
	"net/url"
	"strings"

	"github.com/capgate/capgate/internal/config"
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

// listedConsent is one request in `approvals list --json`: the stored request, and its page
// when known.
type listedConsent struct {
	store.Consent
	URL string `json:"url,omitempty"`
}
