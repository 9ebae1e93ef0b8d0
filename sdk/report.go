package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/capgate/capgate/manifest"
)

// Effect is a side effect a call had, as its handler reports it: the manifest's side_effects
// value ("none", "read", "write", "network", "destructive", "system") and what it touched, in words. The host
// compares each with the capability's declared side_effects: one above it fails the call.
type Effect struct {
	Effect string `json:"effect"`
	Target string `json:"target,omitempty"` // untrusted text
}

// Evidence is an evidence record a call emitted: a type the capability declares and its JSON
// body. A declared type the call did not emit makes its outcome PARTIAL.
type Evidence struct {
	Type string          `json:"type"`
	Body json.RawMessage `json:"body,omitempty"`
}

// Report is what a handler tells the host about one call beside its result: the effects it
// had and the evidence it emitted, and whether the call is a dry run. The host puts one in
// the call's context (WithReport); a handler reaches it with the functions below, which do
// nothing when the context holds none. Safe for concurrent use.
type Report struct {
	// DryRun is set when the call must show what it would do and change nothing.
	DryRun bool
	// Progress, when not nil, receives progress reports (ReportProgress).
	Progress func(message string, fraction float64)
	// EgressProxy is the proxy the call's network requests go through, with the call's own
	// credential ("": the call has no network). HTTPClient uses it.
	EgressProxy string
	// Credential, when not nil, asks the host for a handle to a credential intent
	// (RequestCredential).
	Credential func(ctx context.Context, intent string) (string, error)

	mu       sync.Mutex
	effects  []Effect
	evidence []Evidence
}

// Effects returns the effects reported so far.
func (r *Report) Effects() []Effect {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Effect(nil), r.effects...)
}

// Evidence returns the evidence emitted so far.
func (r *Report) Evidence() []Evidence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Evidence(nil), r.evidence...)
}

type reportKey struct{}

// WithReport returns ctx carrying r, for the handler of one call.
func WithReport(ctx context.Context, r *Report) context.Context {
	return context.WithValue(ctx, reportKey{}, r)
}

func reportOf(ctx context.Context) *Report {
	r, _ := ctx.Value(reportKey{}).(*Report)
	return r
}

// IsDryRun reports whether the call of ctx is a dry run: the handler must change nothing and
// report the effects it would have had.
func IsDryRun(ctx context.Context) bool {
	r := reportOf(ctx)
	return r != nil && r.DryRun
}

// ReportEffect tells the host the call had (or, in a dry run, would have had) effect on
// target.
func ReportEffect(ctx context.Context, effect, target string) {
	if r := reportOf(ctx); r != nil {
		r.mu.Lock()
		r.effects = append(r.effects, Effect{Effect: effect, Target: target})
		r.mu.Unlock()
	}
}

// EmitEvidence records an evidence record of type typ with the JSON body.
func EmitEvidence(ctx context.Context, typ string, body json.RawMessage) {
	if r := reportOf(ctx); r != nil {
		r.mu.Lock()
		r.evidence = append(r.evidence, Evidence{Type: typ, Body: body})
		r.mu.Unlock()
	}
}

// ReportProgress tells the host how far the call has come: message is untrusted text for
// people, fraction 0 to 1 (0 when unknown).
func ReportProgress(ctx context.Context, message string, fraction float64) {
	if r := reportOf(ctx); r != nil && r.Progress != nil {
		r.Progress(message, fraction)
	}
}

// HTTPClient returns the client a handler makes the call's network requests with: through the
// host's egress proxy, which lets it reach only the capability's declared network_intents,
// resolves each name once and refuses special-purpose addresses. Outside such a call (no proxy
// for it) the client reaches nothing. A request carrying a credential handle
// (RequestCredential) goes to http://HOST/PATH with the handle in the CredentialHeader: the
// proxy opens the TLS connection to HOST itself and adds the secret there.
func HTTPClient(ctx context.Context) *http.Client {
	r := reportOf(ctx)
	var proxy *url.URL
	if r != nil && r.EgressProxy != "" {
		proxy, _ = url.Parse(r.EgressProxy)
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy: func(*http.Request) (*url.URL, error) {
				if proxy == nil {
					return nil, errNoNetwork
				}
				return proxy, nil
			},
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				// Only the proxy is ever dialled.
				if proxy == nil || addr != proxy.Host {
					return nil, errNoNetwork
				}
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			},
			MaxIdleConnsPerHost: 4,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CredentialHeader is the request header that carries a credential handle to the egress proxy.
const CredentialHeader = "Capgate-Credential"

var errNoNetwork = errors.New("sdk: this call has no network: its capability declares no network_intents")

// RequestCredential asks the host for a handle to the credential intent, one the calling
// capability declares in its credential_intents and the call's grant allows. The handle is
// opaque: it is never credential material, and only the host's egress proxy can use it. An
// intent the capability does not declare is refused (permission_denied), and recorded.
func RequestCredential(ctx context.Context, intent string) (string, error) {
	r := reportOf(ctx)
	if r == nil || r.Credential == nil {
		return "", PermissionDenied("the host offers this call no credentials")
	}
	return r.Credential(ctx, intent)
}

// Unheld checks the effects a call reports against its capability's declared side effects,
// and in a dry run against read, as the host does after every call: it returns the rule the
// effects break, or "". The reported target is not quoted: it is the handler's own text.
func Unheld(declared manifest.SideEffect, dryRun bool, effects []Effect) string {
	for _, e := range effects {
		got := manifest.SideEffect(e.Effect)
		switch {
		case !got.Valid():
			return "the capability reported an effect that is no side_effects value"
		case got.Rank() > declared.Rank():
			return fmt.Sprintf("the capability reported a %s effect, above its declared side_effects %s", got, declared)
		case dryRun && got.Rank() > manifest.SideEffectRead.Rank():
			return fmt.Sprintf("the capability reported a %s effect in a dry run", got)
		}
	}
	return ""
}
