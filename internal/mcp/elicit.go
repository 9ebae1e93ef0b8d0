package mcp

import (
	"context"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitation points the person to capgate's approval page through the client's URL-mode
// elicitation while a call or token request waits for consent. The client's answer says
// only whether the person went there; it is reported, never recorded as consent.
type elicitation struct {
	s      *session
	ss     *mcpsdk.ServerSession // nil: the client cannot take a URL elicitation
	mu     sync.Mutex
	id     string // the consent request pointed to; "" until one is
	action string // the client's answer: accept, decline or cancel; "" before it
	failed bool
}

// elicitor returns the elicitation of one tool call; it does nothing for a client that did
// not declare URL-mode elicitation.
func (s *session) elicitor(req *mcpsdk.CallToolRequest) *elicitation {
	e := &elicitation{s: s}
	if req.ProtocolVersion() >= Stateless {
		return e // a server sends no requests of its own under 2026-07-28: input.go
	}
	if ss := req.Session; ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil && ip.Capabilities.Elicitation.URL != nil {
			e.ss = ss
		}
	}
	return e
}

// start sends the URL elicitation for the consent request id; it does not block (it is the
// broker's OnConsent).
func (e *elicitation) start(id string) {
	if e.ss == nil {
		return
	}
	e.mu.Lock()
	if e.id != "" {
		e.mu.Unlock()
		return
	}
	e.id = id
	e.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), ElicitTimeout)
		defer cancel()
		res, err := e.ss.Elicit(ctx, &mcpsdk.ElicitParams{
			Mode: "url",
			Message: "capgate asks the person to approve or deny a request of this agent on its approval page. " +
				"Open the page to decide; answering here approves nothing.",
			URL:           e.s.base + "/ui/requests/" + id,
			ElicitationID: id,
		})
		e.mu.Lock()
		defer e.mu.Unlock()
		if err != nil {
			e.failed = true
			return
		}
		e.action = res.Action
	}()
}

// finish tells the client the out-of-band interaction is over when the person answered.
func (e *elicitation) finish(ctx context.Context, answered bool) {
	e.mu.Lock()
	id := e.id
	e.mu.Unlock()
	if id == "" || !answered {
		return
	}
	_ = e.ss.NotifyElicitationComplete(context.WithoutCancel(ctx), &mcpsdk.ElicitationCompleteParams{ElicitationID: id})
}

// used is the elicitation when one was sent, else nil.
func (e *elicitation) used() *elicitation {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.id == "" {
		return nil
	}
	return e
}

// outcome says what the client answered, with the reminder that it is not consent.
func (e *elicitation) outcome() map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]any{"sent": true, "note": "the client's answer only says whether the person opened the approval page; it is not consent"}
	switch {
	case e.failed:
		out["client_answer"] = "failed"
	case e.action == "":
		out["client_answer"] = "none yet"
	default:
		out["client_answer"] = e.action // accept, decline and cancel stay distinct
	}
	return out
}
