package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/capgate/capgate/client/wire"
)

// Call is one call of a capability: App's Method with Params, under Token.
type Call struct {
	// App is the app's alias (as Tool.App names it, such as "settings") or its app id.
	App string
	// Method is the capability's action (Tool.Method, such as "get_setting") or its full id.
	Method string
	// Params are the call's params, sent as a JSON object: a value encoding/json makes one
	// of (a map, a struct), or a json.RawMessage sent as it stands. nil, and a value other
	// than a json.RawMessage that encodes as null (a nil map), send none: the gateway takes {}.
	Params any
	// Token is a capability token's wire form (Token.Wire); "" calls without one, which runs
	// a low-risk read and asks the person about anything else.
	Token string
	// RequestID names the request in the envelope, the answer and the audit log: 1 to 128
	// letters, digits and _.:- ; "" makes a random one.
	RequestID string
}

// Result is a call's success.
type Result struct {
	// RequestID is the request the answer is for.
	RequestID string
	// Data is the capability's result as the app returned it (JSON null when it returned
	// none; {"undone": true} for an undo).
	Data json.RawMessage
	// UndoToken undoes a reversible call (Undo) until UndoUntil; "" when it cannot be undone.
	UndoToken string
	// UndoUntil is the end of the undo window; the zero Time when there is none.
	UndoUntil time.Time
	// Compensation is the remedy of a compensable call, in its manifest's words.
	Compensation string
	// Envelope is the answer as it came.
	Envelope *wire.Response
}

// Decode decodes the result's data into v, as json.Unmarshal does.
func (r *Result) Decode(v any) error {
	if err := json.Unmarshal(r.Data, v); err != nil {
		return fmt.Errorf("client: the call's result does not decode into %T: %w", v, err)
	}
	return nil
}

// Call calls a capability that acts (POST /v1/ipc, action execute). A call the gateway
// refuses, or that fails, is an *Error: CONSENT_REQUIRED when the person has yet to answer
// (Error.Consent names the request: retry the call once they have), CAPABILITY_DENIED when no
// token covers it, and so on. A call that waits for the person holds the request open while
// they decide (up to 2 minutes); one that cannot be undone may also wait out a delayed-commit
// window of a few seconds, in which the person can still cancel it.
func (c *Client) Call(ctx context.Context, call Call) (*Result, error) {
	return c.call(ctx, wire.ActionExecute, call)
}

// Query is Call with the action query, as the token document sends reads. The gateway
// decides both alike: the capability, not the action, says what a call may do.
func (c *Client) Query(ctx context.Context, call Call) (*Result, error) {
	return c.call(ctx, wire.ActionQuery, call)
}

// Undo undoes a reversible call by its Result.UndoToken, within its undo window (POST
// /v1/ipc, action undo). An unknown or another client's undo token is INVALID_TOKEN, one
// past its window TOKEN_EXPIRED.
func (c *Client) Undo(ctx context.Context, undoToken string) (*Result, error) {
	req, err := newRequest("")
	if err != nil {
		return nil, err
	}
	req.Body = wire.Body{Action: wire.ActionUndo, UndoToken: undoToken}
	return c.send(ctx, req)
}

// Explain asks what call would get and why (POST /v1/explain): the outcome, the code it would
// be refused with, and each step's finding. Nothing happens: no use of the token is taken, no
// one is asked, nothing is recorded or run. An envelope the gateway cannot read is an *Error
// (INVALID_REQUEST, HTTP 400).
func (c *Client) Explain(ctx context.Context, call Call) (*Explanation, error) {
	req, err := callRequest(wire.ActionExecute, call)
	if err != nil {
		return nil, err
	}
	var x Explanation
	a, err := c.doJSON(ctx, http.MethodPost, "/v1/explain", req, &x, call.Token)
	if err != nil {
		return nil, err
	}
	if x.Outcome == "" {
		return nil, a.protocol("the explanation has no outcome")
	}
	return &x, nil
}

// Explanation is what a call would get, and why.
type Explanation = wire.Explanation

func (c *Client) call(ctx context.Context, action string, call Call) (*Result, error) {
	req, err := callRequest(action, call)
	if err != nil {
		return nil, err
	}
	return c.send(ctx, req)
}

// callRequest is the envelope of call with action.
func callRequest(action string, call Call) (wire.Request, error) {
	req, err := newRequest(call.RequestID)
	if err != nil {
		return req, err
	}
	req.Body = wire.Body{Action: action, App: call.App, Method: call.Method, CapabilityToken: call.Token}
	switch p := call.Params.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(p) {
			return req, fmt.Errorf("client: Call.Params: not valid JSON")
		}
		req.Body.Params = p
	default:
		b, err := json.Marshal(p)
		if err != nil {
			// The encoder's words could quote a value: say only what would not encode.
			return req, fmt.Errorf("client: Call.Params: a %T does not encode as JSON", p)
		}
		if string(b) != "null" { // a nil map is no params, not a null the gateway refuses
			req.Body.Params = b
		}
	}
	return req, nil
}

// newRequest is an envelope with its header: id, or a random one.
func newRequest(id string) (wire.Request, error) {
	if id == "" {
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return wire.Request{}, fmt.Errorf("client: a request id: %w", err)
		}
		id = "req_" + hex.EncodeToString(b[:])
	}
	return wire.Request{Header: wire.Header{MsgType: wire.MsgRequest, Version: wire.Version, RequestID: id, Timestamp: time.Now().Unix()}}, nil
}

// send posts req to POST /v1/ipc: a success is a Result, an error envelope an *Error.
func (c *Client) send(ctx context.Context, req wire.Request) (*Result, error) {
	a, err := c.do(ctx, http.MethodPost, "/v1/ipc", req, true, req.Body.CapabilityToken, req.Body.UndoToken)
	if err != nil {
		return nil, err
	}
	switch a.status {
	case http.StatusOK, http.StatusUnauthorized, http.StatusRequestEntityTooLarge:
	default:
		return nil, a.protocol("POST /v1/ipc answers 200, 401 or 413")
	}
	env, err := a.envelope()
	if err != nil {
		return nil, err
	}
	b := env.Body
	// The answer must be this request's: the gateway echoes its id, and leaves it out only
	// when it could not read it (an error).
	if id := env.Header.RequestID; id != req.Header.RequestID && (id != "" || b.Status != wire.StatusError) {
		return nil, a.protocol("the answer is for another request")
	}
	if b.Status == wire.StatusError {
		return nil, a.envelopeError(env)
	}
	if a.status != http.StatusOK {
		return nil, a.protocol("a success envelope with a status that is not 200")
	}
	r := &Result{RequestID: env.Header.RequestID, Data: b.Result, UndoToken: b.UndoToken, Compensation: b.Compensation, Envelope: env}
	if r.Data == nil {
		r.Data = json.RawMessage("null")
	}
	if b.UndoUntil != 0 {
		r.UndoUntil = time.UnixMilli(b.UndoUntil)
	}
	return r, nil
}
