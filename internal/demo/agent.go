package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/capgate/capgate/client"
)

// The agent's side: token requests, calls, undo and explain, each shown as the request it
// sends and the answer it gets, all through the public Go client.

// tokenDuration is how long the demo's tokens live.
const tokenDuration = 600 * time.Second

// reply is what a call got: a success or the gateway's error, as the llm_response
// envelope's body says it.
type reply struct {
	Status       string
	Result       json.RawMessage
	ErrorCode    string
	ErrorMessage string
	UndoToken    string
	UndoUntil    int64 // Unix milliseconds
	Consent      *client.ConsentRef
}

// replyOf is the reply of a call's result or error, with its HTTP status; an error that is
// not the gateway's answer fails the step.
func replyOf(res *client.Result, err error) (reply, int, error) {
	var ce *client.Error
	switch {
	case err == nil:
		r := reply{Status: "success", Result: res.Data, UndoToken: res.UndoToken}
		if !res.UndoUntil.IsZero() {
			r.UndoUntil = res.UndoUntil.UnixMilli()
		}
		return r, http.StatusOK, nil
	case errors.As(err, &ce):
		return reply{Status: "error", ErrorCode: ce.Code, ErrorMessage: ce.Message, Consent: ce.Consent}, ce.HTTPStatus, nil
	}
	return reply{}, 0, unanswered(err)
}

// requestToken asks for a token (POST /v1/capabilities/request) and keeps it under label.
// With person set, the request waits for consent and the demo approves it as the person.
func (s *session) requestToken(label string, caps []string, maxUses int64, reason string, constraints *client.Constraints, person bool) error {
	body := map[string]any{"capabilities": caps, "duration": int64(tokenDuration / time.Second), "max_uses": maxUses, "reason": reason}
	if constraints != nil {
		body["constraints"] = constraints
	}
	raw := compact(body)
	s.line("agent:   POST /v1/capabilities/request " + raw)
	var tok *client.Token
	took, callErr, err := s.send(person, func(ctx context.Context) (err error) {
		tok, err = s.cl.RequestCapability(ctx, client.TokenRequest{Capabilities: caps, Duration: tokenDuration, MaxUses: maxUses,
			Reason: reason, Constraints: constraints})
		return err
	})
	if err != nil {
		return err
	}
	x := Exchange{Endpoint: "POST /v1/capabilities/request", Params: json.RawMessage(raw), HTTPStatus: http.StatusOK, Status: "success",
		TookMS: took.Milliseconds()}
	var ce *client.Error
	switch {
	case errors.As(callErr, &ce):
		x.HTTPStatus, x.Status, x.ErrorCode, x.ErrorMessage = ce.HTTPStatus, "error", ce.Code, ce.Message
	case callErr != nil:
		return unanswered(callErr)
	}
	s.cur.Requests = append(s.cur.Requests, x)
	if tok == nil {
		s.line(fmt.Sprintf("capgate: HTTP %d %s %s: %s", x.HTTPStatus, x.Status, x.ErrorCode, x.ErrorMessage))
		return failf("the %s token was not issued: %s", label, orWord(x.ErrorCode, fmt.Sprintf("HTTP %d", x.HTTPStatus)))
	}
	how := "at once, with no one asked"
	if tok.ConsentID != "" {
		how = "with the person's consent (" + tok.ConsentID + ") recorded in it"
	}
	s.line(fmt.Sprintf("capgate: HTTP 200 success: the %s token %s, issued %s", label, clip(tok.Wire, 16), how))
	if person != (tok.ConsentID != "") {
		return failf("the %s token was issued %s, not as scripted", label, how)
	}
	s.tokens[label] = tok.Wire
	return nil
}

// call makes one call (POST /v1/ipc, action execute) with the token kept under label ("" for
// none) and shows it. With person set, the call waits for consent and the demo approves it.
func (s *session) call(app, method string, params map[string]any, label string, person bool) (reply, error) {
	p := compact(params)
	c := client.Call{App: app, Method: method, Params: json.RawMessage(p)}
	with := "with no token"
	if label != "" {
		c.Token = s.tokens[label]
		with = "with the " + label + " token"
	}
	s.line(fmt.Sprintf("agent:   POST /v1/ipc execute %s.%s %s %s", app, method, p, with))
	return s.ipc(func(ctx context.Context) (*client.Result, error) { return s.cl.Call(ctx, c) },
		Exchange{Action: "execute", App: app, Method: method, Params: json.RawMessage(p), Token: label}, person)
}

// undo asks the gateway to undo a call by its undo token.
func (s *session) undo(undoToken string) (reply, error) {
	s.line("agent:   POST /v1/ipc undo " + compact(map[string]string{"undo_token": clip(undoToken, 12)}))
	return s.ipc(func(ctx context.Context) (*client.Result, error) { return s.cl.Undo(ctx, undoToken) }, Exchange{Action: "undo"}, false)
}

// ipc sends an envelope through do and shows the answer's status and code.
func (s *session) ipc(do func(ctx context.Context) (*client.Result, error), x Exchange, person bool) (reply, error) {
	var res *client.Result
	took, callErr, err := s.send(person, func(ctx context.Context) (err error) {
		res, err = do(ctx)
		return err
	})
	if err != nil {
		return reply{}, err
	}
	r, status, err := replyOf(res, callErr)
	if err != nil {
		return reply{}, err
	}
	x.Endpoint, x.HTTPStatus, x.Status, x.ErrorCode, x.ErrorMessage, x.TookMS = "POST /v1/ipc", status, r.Status, r.ErrorCode, r.ErrorMessage, took.Milliseconds()
	s.cur.Requests = append(s.cur.Requests, x)
	if r.Status == "success" {
		s.line(fmt.Sprintf("capgate: success after %s: %s", took.Round(time.Millisecond), clip(string(r.Result), 140)))
	} else {
		s.line(fmt.Sprintf("capgate: error %s: %s", r.ErrorCode, r.ErrorMessage))
	}
	return r, nil
}

// explain asks the gateway what a call would get and why (POST /v1/explain), with no side
// effect, and shows its step-by-step trace.
func (s *session) explain(app, method string, params map[string]any, label string) error {
	p := compact(params)
	s.line(fmt.Sprintf("agent:   POST /v1/explain %s.%s %s with the %s token", app, method, p, label))
	start := time.Now()
	d, err := s.cl.Explain(s.ctx, client.Call{App: app, Method: method, Params: json.RawMessage(p), Token: s.tokens[label]})
	took := time.Since(start)
	var ce *client.Error
	switch {
	case errors.As(err, &ce):
		return failf("POST /v1/explain answered HTTP %d", ce.HTTPStatus)
	case err != nil:
		return unanswered(err)
	}
	s.cur.Requests = append(s.cur.Requests, Exchange{Endpoint: "POST /v1/explain", Action: "execute", App: app, Method: method,
		Params: json.RawMessage(p), Token: label, HTTPStatus: http.StatusOK, Status: d.Outcome, ErrorCode: d.Code, ErrorMessage: d.Explanation,
		TookMS: took.Milliseconds()})
	s.line(fmt.Sprintf("capgate: %s (%s), step by step:", d.Outcome, d.Code))
	for _, t := range d.Trace {
		s.line("  " + t)
	}
	return nil
}

// result decodes a successful call's result into v.
func result(r reply, v any) error {
	if r.Status != "success" {
		return failf("the call failed: %s: %s", r.ErrorCode, r.ErrorMessage)
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		return failf("the call's result is not what its app declares")
	}
	return nil
}

func orWord(s, otherwise string) string {
	if strings.TrimSpace(s) == "" {
		return otherwise
	}
	return s
}
