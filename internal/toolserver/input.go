package toolserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/profile"
	"github.com/capgate/capgate/internal/store"
)

// KindURL is the kind of consent request that shows the person the page a tool server asks
// them to open (a URL-mode information request), store.Consent.Kind. Its Params hold the
// URL exactly as the server sent it and the server's message, both untrusted; the approval
// page shows the URL in full, its host highlighted and look-alike characters flagged, and
// never opens it.
const KindURL = "toolserver_url"

// The answers to an information request, as MCP names them; they stay distinct.
const (
	AnswerAccept  = "accept"
	AnswerDecline = "decline"
	AnswerCancel  = "cancel"
)

// Reasons capgate gives for declining an information request without asking the person.
const (
	// ReasonFormShape is why a form capgate would not show the person as a form is declined:
	// MCP's form mode asks for a flat object of string, number, integer and boolean fields.
	ReasonFormShape = "the form is not one capgate shows the person"
	// ReasonFormSecret is why a form asking for a password, a token, a secret, an API key or
	// payment details is declined: such a field is never filled, and the request is flagged
	// in the audit log.
	ReasonFormSecret = "the form asks for a password, a token, a secret, an API key or payment details, which capgate never gives a tool server"
	ReasonNoPerson   = "capgate asks the person only while a running gateway makes a call; this connection makes none"
	ReasonNoCall     = "capgate asks the person only for the call a request comes with, and this request names no call capgate is making (none, or several, are in flight)"
	ReasonBusy       = "another information request of this server waits for the person; capgate shows one at a time"
	reasonMode       = "capgate knows no information request of this mode"
)

// ReasonBadURL is why capgate declines a URL request whose URL it would not show the person.
var ReasonBadURL = fmt.Sprintf("the URL is not one capgate shows the person: an http or https address with a host, no credentials in it, no control characters, at most %d bytes", MaxURLBytes)

// ReasonMeta is the _meta key of a declined answer that says why capgate declined it.
const ReasonMeta = "capgate/reason"

func decline(reason string) *mcpsdk.ElicitResult {
	return &mcpsdk.ElicitResult{Action: AnswerDecline, Meta: mcpsdk.Meta{ReasonMeta: reason}}
}

// callKey carries the call an information request belongs to in the context of
// ClientSession.CallTool: under 2026-07-28 the go-sdk client answers a tool call's input
// requests with the call's own context.
type callKey struct{}

// call is one tools/call in flight, and what capgate answered to its information requests.
type call struct {
	capabilityID, clientID, callID string
	ctx                            context.Context // the call's: it ends when the call does

	mu      sync.Mutex
	answers []string // "declined a form request: REASON", "the person declined a URL request", ...
}

func (c *call) note(s string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.answers) < MaxInputRequests {
		c.answers = append(c.answers, s)
	}
}

// said is what capgate answered during the call, in words, "" for nothing.
func (c *call) said() string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.answers, "; ")
}

// elicit answers one information request of the server: a URL request of a call goes to the
// person as a consent request of kind KindURL, answered on the approval page (approve:
// accept, deny: decline, cancelled or unanswered: cancel), one at a time per server; any
// other mode, a URL capgate would not show, or a request that names no call is declined
// with its reason in the answer's _meta (ReasonMeta). The server's message and URL are
// untrusted: they are shown, never followed. Each answer is audited.
func (s *server) elicit(ctx context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil {
		// Under the handshake revisions the request comes on its own (elicitation/create),
		// naming no call: it is the call's when only one is in flight.
		c = s.onlyCall()
	}
	p := req.Params
	if p == nil {
		p = &mcpsdk.ElicitParams{}
	}
	mode := p.Mode
	if mode == "" {
		mode = "form"
	}
	switch mode {
	case "url":
		switch {
		case !showableURL(p.URL):
			return s.declined(ctx, c, "url", ReasonBadURL), nil
		case c == nil:
			// The person opening the page must be the one whose call asked: a request that
			// names no call is asked of nobody.
			return s.declined(ctx, c, "url", ReasonNoCall), nil
		}
		if !s.openURL() {
			return s.declined(ctx, c, "url", ReasonBusy), nil
		}
		defer s.closeURL()
		return s.askPerson(ctx, c, p)
	case "form":
		if asksForSecrets(p.RequestedSchema) {
			return s.declined(ctx, c, "form", ReasonFormSecret+" (flagged)"), nil
		}
		fields, why := formFields(p.RequestedSchema)
		switch {
		case why != "":
			return s.declined(ctx, c, "form", ReasonFormShape+": "+why), nil
		case c == nil:
			return s.declined(ctx, c, "form", ReasonNoCall), nil
		}
		// Only the person's low-sensitivity profile is ever filled in by capgate itself, and
		// only for a server the person granted it to; the rest is the person's to give.
		if st := s.m.o.Env.Store; profile.Granted(ctx, st, s.cfg.Name) {
			if prof, err := profile.Load(ctx, st); err != nil {
				s.log().Warn("the person's profile cannot be read: the form goes to the person unfilled", "err", err)
			} else if fillFromProfile(fields, prof) {
				return s.filledFromProfile(ctx, c, fields), nil
			}
		}
		if !s.openURL() {
			return s.declined(ctx, c, "form", ReasonBusy), nil
		}
		defer s.closeURL()
		return s.askForm(ctx, c, p, fields)
	}
	return s.declined(ctx, c, "unknown", reasonMode), nil
}

// asksForSecrets reports whether a form's requested schema has a field that would carry a
// password, a token, a secret, an API key or payment details, by name or format, at any
// depth, in English or Turkish (definition.AsksForSecrets, the lint definitions are held to).
func asksForSecrets(schema any) bool {
	raw, err := json.Marshal(schema)
	if err != nil {
		return true // what cannot be read is not given either
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return true
	}
	return definition.AsksForSecrets(v)
}

// onlyCall is the one call in flight, nil when there are none or several.
func (s *server) onlyCall() *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) != 1 {
		return nil
	}
	for c := range s.calls {
		return c
	}
	return nil
}

// openURL takes the server's one place for a URL request waiting for the person, and
// reports whether it was free: a server cannot fill the approval page with requests.
func (s *server) openURL() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asking {
		return false
	}
	s.asking = true
	return true
}

func (s *server) closeURL() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asking = false
}

// track counts c in flight until the returned function is called.
func (s *server) track(c *call) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[*call]bool{}
	}
	s.calls[c] = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.calls, c)
	}
}

// declined records and returns a decline capgate gave without asking the person.
func (s *server) declined(ctx context.Context, c *call, mode, reason string) *mcpsdk.ElicitResult {
	c.note("capgate declined a " + mode + " request: " + reason)
	s.log().Warn("declined an information request of the tool server", "mode", mode, "reason", reason)
	s.auditInput(ctx, c, "", AnswerDecline, "capgate declined the tool server's "+mode+"-mode information request: "+reason)
	return decline(reason)
}

// askPerson opens a consent request showing the URL and waits for the person's answer,
// within the call c.
func (s *server) askPerson(ctx context.Context, c *call, p *mcpsdk.ElicitParams) (*mcpsdk.ElicitResult, error) {
	summary := fmt.Sprintf("The MCP tool server %q asks you to open a page, during the call of %s by the client %s. "+
		"capgate does not open it: the address below is exactly what the server sent, its host highlighted. "+
		"Open it yourself only if you trust it, and only in your own browser; then approve to tell the server you did, "+
		"or deny to decline. The server's message is its own words, untrusted.", s.cfg.Name, c.capabilityID, c.clientID)
	params, err := json.Marshal(map[string]string{"url": p.URL, "message": clipText(strings.ToValidUTF8(p.Message, "\uFFFD"), consent.MaxTextBytes)})
	if err == nil {
		params, err = jcs.Canonicalize(params)
	}
	if err != nil {
		return s.declined(ctx, c, "url", ReasonBadURL), nil
	}
	id, answer, err := s.askInput(ctx, c, KindURL, summary, params, "high")
	if err != nil || id == "" {
		return &mcpsdk.ElicitResult{Action: AnswerCancel}, err
	}
	var said string
	switch answer {
	case AnswerAccept:
		said = "the person approved the server's URL request (they say they opened the page)"
	case AnswerDecline:
		said = "the person declined the server's URL request"
	default:
		said = "the server's URL request went unanswered (cancelled)"
	}
	c.note(said)
	s.auditInput(ctx, c, id, answer, said+"; what the person did on the page is not known to capgate")
	return &mcpsdk.ElicitResult{Action: answer}, nil
}

// askInput puts an information request of the kind (KindURL, KindForm) to the person as a
// consent request with summary and params, within the call c, and waits for the answer
// (waitAnswer). The request expires a little after the call's end, so that capgate's own
// withdrawal at the end (cancelled) is what the record says, rather than an expiry only a
// later sweep records. A request that cannot be shown is "" (told to c, the answer cancel).
func (s *server) askInput(ctx context.Context, c *call, kind, summary string, params []byte, risk string) (id, answer string, err error) {
	e := &s.m.o.Env
	wctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if c.ctx != nil {
		defer context.AfterFunc(c.ctx, cancel)()
	}
	clientID := "capgate:toolserver"
	payload, err := json.Marshal(consent.Request{
		ClientID: clientID, ClientName: "capgate (tool server " + s.cfg.Name + ")", Kind: kind,
		CapabilityID: c.capabilityID, Summary: clipText(summary, consent.MaxTextBytes), Params: params,
		SideEffects: "network", Risk: risk, Reversibility: consent.Irreversible,
	})
	if err != nil {
		return "", "", err
	}
	id = newConsentID()
	at := e.now()
	expires := at.Add(CallTimeout + InputGrace)
	if d, ok := wctx.Deadline(); ok {
		expires = at.Add(time.Until(d) + InputGrace)
	}
	if err := e.Store.PutConsent(ctx, store.Consent{ID: id, ClientID: clientID, Kind: kind, Payload: payload,
		State: store.ConsentPending, Created: at, Expires: expires}); err != nil {
		s.log().Warn("the information request cannot be shown to the person", "kind", kind, "err", err)
		c.note("capgate could not show the server's information request to the person")
		return "", AnswerCancel, nil
	}
	s.log().Info("a tool server asks the person", "kind", kind, "consent", id)
	return id, s.waitAnswer(wctx, id), nil
}

// waitAnswer waits for the person's answer to the consent request id: accept when approved,
// decline when denied, cancel when cancelled, expired or still unanswered when ctx ends
// (the request is then cancelled, so that nobody approves what no call waits for).
func (s *server) waitAnswer(ctx context.Context, id string) string {
	st := s.m.o.Store
	t := time.NewTicker(InputPoll)
	defer t.Stop()
	for {
		c, err := st.GetConsent(context.WithoutCancel(ctx), id)
		if err == nil {
			switch c.State {
			case store.ConsentApproved:
				return AnswerAccept
			case store.ConsentDenied:
				return AnswerDecline
			case store.ConsentPending:
				if !s.m.o.now().Before(c.Expires) {
					_ = st.AnswerConsent(context.WithoutCancel(ctx), id, store.ConsentExpired, "capgate: unanswered", "", s.m.o.now())
					return AnswerCancel
				}
			default:
				return AnswerCancel
			}
		}
		select {
		case <-ctx.Done():
			_ = st.AnswerConsent(context.WithoutCancel(ctx), id, store.ConsentCancelled, "capgate: the call ended", "", s.m.o.now())
			// The person may have answered as the call ended: the store's state is the answer.
			if c, err := st.GetConsent(context.WithoutCancel(ctx), id); err == nil && c.State == store.ConsentApproved {
				return AnswerAccept
			} else if err == nil && c.State == store.ConsentDenied {
				return AnswerDecline
			}
			return AnswerCancel
		case <-t.C:
		}
	}
}

// auditInput writes the audit record of an answer to an information request.
func (s *server) auditInput(ctx context.Context, c *call, consentID, answer, explanation string) {
	if s.m.o.Audit == nil {
		return
	}
	rec := audit.Record{Action: "toolserver.input", App: s.appID, Kind: audit.KindDecision, Result: answer,
		Explanation: explanation, ClientID: "capgate:toolserver", ConsentID: consentID, Decision: audit.DecisionDeny}
	switch {
	case answer == AnswerAccept:
		rec.Decision = audit.DecisionAllow
	case consentID == "":
		rec.Code = "PERMISSION_DENIED" // capgate declined it without asking
	default:
		rec.Code = "CONSENT_DENIED" // the person declined, or did not answer (Result says which)
	}
	if c != nil {
		rec.Capability, rec.CallID = c.capabilityID, c.callID
		rec.ClientID = c.clientID
	}
	if _, err := s.m.o.Audit.Append(context.WithoutCancel(ctx), rec); err != nil {
		s.log().Warn("the audit record of an information request cannot be written", "err", err)
	}
}

// showableURL reports whether u is a URL capgate shows the person: absolute http or https
// with a host, no user information (user:password@ passes for another host), valid UTF-8
// without control characters, at most MaxURLBytes bytes.
func showableURL(u string) bool {
	if u == "" || len(u) > MaxURLBytes || !utf8.ValidString(u) {
		return false
	}
	for _, r := range u {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	p, err := url.Parse(u)
	if err != nil || p.User != nil || p.Host == "" || p.Opaque != "" {
		return false
	}
	return p.Scheme == "https" || p.Scheme == "http"
}
