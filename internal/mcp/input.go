package mcp

import (
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/consent"
)

// Under 2026-07-28 a server sends the client no requests of its own: a call that needs the
// person answers with an input request (a URL elicitation to capgate's approval page) and the
// client asks again with its answer. capgate's request state names the consent request; it
// proves nothing, since the broker takes only this client's request for this very call (or
// these grants and terms), and an approval once. The client's answer says only whether the
// person went to the page: accept waits for the person's answer, decline and cancel do not
// wait; neither is ever consent.

// ConsentInput is the key of capgate's input request in inputRequests and inputResponses.
const ConsentInput = "capgate_consent"

// statePrefix starts capgate's requestState; the consent request's id follows.
const statePrefix = "capgate-consent:"

// inputs is what a 2026-07-28 tool call brings of the input-request exchange.
type inputs struct {
	on      bool   // the client takes input requests of URL elicitation
	consent string // the consent request of the earlier round, "" on the first
	answer  string // the client's answer: accept, decline, cancel, "" for none
	bad     bool   // a request state that is not capgate's
}

// inputsOf reads the exchange from a tool call.
func inputsOf(req *mcpsdk.CallToolRequest) inputs {
	var in inputs
	if req.ProtocolVersion() < Stateless {
		return in
	}
	if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil {
		in.on = true
	}
	if st := req.Params.RequestState; st != "" {
		id, ok := strings.CutPrefix(st, statePrefix)
		if !ok || !consent.ValidID(id) {
			in.bad = true
			return in
		}
		in.consent = id
	}
	if r, ok := req.Params.InputResponses[ConsentInput].(*mcpsdk.ElicitResult); ok && r != nil {
		switch r.Action {
		case "accept", "decline", "cancel":
			in.answer = r.Action
		}
	}
	return in
}

// waits reports whether the round should wait for the person: the first round never does
// (the client must see the page first), a later one when the client accepted.
func (in inputs) waits() bool { return in.consent != "" && in.answer == "accept" }

// inputRequired is the answer that asks the client to point the person to the approval page
// for the consent request id and ask again.
func (s *session) inputRequired(id string) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{
		InputRequests: mcpsdk.InputRequestMap{ConsentInput: &mcpsdk.ElicitParams{
			Mode: "url",
			Message: "capgate asks the person to approve or deny a request of this agent on its approval page. " +
				"Open the page to decide, then answer; answering here approves nothing.",
			// The URL names the request. elicitationId, which 2026-07-28 dropped with the
			// notifications/elicitation/complete it keyed, names it too, for clients that
			// still read it; the revision's clients ignore it.
			URL:           s.base + "/ui/requests/" + id,
			ElicitationID: id,
		}},
		RequestState: statePrefix + id,
	}
}

// reported is what a result says of the client's answer to the input request, as the URL
// elicitation's outcome says it under the older revisions.
func (in inputs) reported(id string) *elicitation {
	if in.consent == "" || in.consent != id {
		return nil
	}
	action := in.answer
	if action == "" {
		action = "none"
	}
	return &elicitation{id: id, action: action}
}
