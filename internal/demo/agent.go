package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The agent's side: token requests, calls, undo and explain, each shown as the request it
// sends and the answer it gets.

// tokenDuration is how long the demo's tokens live, in seconds.
const tokenDuration = 600

// reply is the body of an IPC answer (the llm_response envelope's body).
type reply struct {
	Status       string          `json:"status"`
	Result       json.RawMessage `json:"result"`
	ErrorCode    string          `json:"error_code"`
	ErrorMessage string          `json:"error_message"`
	UndoToken    string          `json:"undo_token"`
	UndoUntil    int64           `json:"undo_until"`
	Consent      *struct {
		ID string `json:"id"`
	} `json:"consent"`
}

// requestToken asks for a token (POST /v1/capabilities/request) and keeps it under label.
// With person set, the request waits for consent and the demo approves it as the person.
func (s *session) requestToken(label string, caps []string, maxUses int64, reason string, constraints map[string]any, person bool) error {
	body := map[string]any{"capabilities": caps, "duration": tokenDuration, "max_uses": maxUses, "reason": reason}
	if constraints != nil {
		body["constraints"] = constraints
	}
	raw := compact(body)
	s.line("agent:   POST /v1/capabilities/request " + raw)
	a, err := s.send("/v1/capabilities/request", []byte(raw), person)
	if err != nil {
		return err
	}
	var r struct {
		Status       string `json:"status"`
		Token        string `json:"token"`
		ErrorCode    string `json:"error_code"`
		ErrorMessage string `json:"error_message"`
		ConsentID    string `json:"consent_id"`
	}
	_ = json.Unmarshal(a.body, &r)
	s.cur.Requests = append(s.cur.Requests, Exchange{Endpoint: "POST /v1/capabilities/request", Params: json.RawMessage(raw),
		HTTPStatus: a.status, Status: r.Status, ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, TookMS: a.took.Milliseconds()})
	if a.status != http.StatusOK || r.Token == "" {
		s.line(fmt.Sprintf("capgate: HTTP %d %s %s: %s", a.status, r.Status, r.ErrorCode, r.ErrorMessage))
		return failf("the %s token was not issued: %s", label, orWord(r.ErrorCode, fmt.Sprintf("HTTP %d", a.status)))
	}
	how := "at once, with no one asked"
	if r.ConsentID != "" {
		how = "with the person's consent (" + r.ConsentID + ") recorded in it"
	}
	s.line(fmt.Sprintf("capgate: HTTP 200 success: the %s token %s, issued %s", label, clip(r.Token, 16), how))
	if person != (r.ConsentID != "") {
		return failf("the %s token was issued %s, not as scripted", label, how)
	}
	s.tokens[label] = r.Token
	return nil
}

// call makes one call (POST /v1/ipc, action execute) with the token kept under label ("" for
// none) and shows it. With person set, the call waits for consent and the demo approves it.
func (s *session) call(app, method string, params map[string]any, label string, person bool) (reply, error) {
	p := compact(params)
	body := map[string]any{"action": "execute", "app": app, "method": method, "params": json.RawMessage(p)}
	with := "with no token"
	if label != "" {
		body["capability_token"] = s.tokens[label]
		with = "with the " + label + " token"
	}
	s.line(fmt.Sprintf("agent:   POST /v1/ipc execute %s.%s %s %s", app, method, p, with))
	return s.ipc(body, Exchange{Action: "execute", App: app, Method: method, Params: json.RawMessage(p), Token: label}, person)
}

// undo asks the gateway to undo a call by its undo token.
func (s *session) undo(undoToken string) (reply, error) {
	s.line("agent:   POST /v1/ipc undo " + compact(map[string]string{"undo_token": clip(undoToken, 12)}))
	return s.ipc(map[string]any{"action": "undo", "undo_token": undoToken}, Exchange{Action: "undo"}, false)
}

// ipc sends an envelope and shows the answer's status and code.
func (s *session) ipc(body map[string]any, x Exchange, person bool) (reply, error) {
	s.seq++
	env := map[string]any{"header": map[string]any{"msg_type": "llm_request", "version": "1.0",
		"request_id": fmt.Sprintf("demo-%d", s.seq), "timestamp": time.Now().Unix()}, "body": body}
	a, err := s.send("/v1/ipc", []byte(compact(env)), person)
	if err != nil {
		return reply{}, err
	}
	var resp struct{ Body reply }
	if err := json.Unmarshal(a.body, &resp); err != nil || resp.Body.Status == "" {
		return reply{}, failf("the gateway's answer (HTTP %d) is not an IPC envelope", a.status)
	}
	r := resp.Body
	x.Endpoint, x.HTTPStatus, x.Status, x.ErrorCode, x.ErrorMessage, x.TookMS = "POST /v1/ipc", a.status, r.Status, r.ErrorCode, r.ErrorMessage, a.took.Milliseconds()
	s.cur.Requests = append(s.cur.Requests, x)
	if r.Status == "success" {
		s.line(fmt.Sprintf("capgate: success after %s: %s", a.took.Round(time.Millisecond), clip(string(r.Result), 140)))
	} else {
		s.line(fmt.Sprintf("capgate: error %s: %s", r.ErrorCode, r.ErrorMessage))
	}
	return r, nil
}

// send posts body, waiting for the person when person is set.
func (s *session) send(path string, body []byte, person bool) (answer, error) {
	do := func() answer { return s.post(path, body) }
	a := answer{}
	if person {
		var err error
		if a, err = s.withPerson(do); err != nil {
			return a, err
		}
	} else {
		a = do()
	}
	return a, a.err
}

// explain asks the gateway what a call would get and why (POST /v1/explain), with no side
// effect, and shows its step-by-step trace.
func (s *session) explain(app, method string, params map[string]any, label string) error {
	p := compact(params)
	body := map[string]any{"action": "execute", "app": app, "method": method, "params": json.RawMessage(p), "capability_token": s.tokens[label]}
	env := compact(map[string]any{"header": map[string]any{"msg_type": "llm_request", "version": "1.0", "request_id": "demo-explain"}, "body": body})
	s.line(fmt.Sprintf("agent:   POST /v1/explain %s.%s %s with the %s token", app, method, p, label))
	a := s.post("/v1/explain", []byte(env))
	if a.err != nil {
		return a.err
	}
	var d struct {
		Outcome, Code, Explanation string
		Trace                      []string
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &d) != nil {
		return failf("POST /v1/explain answered HTTP %d", a.status)
	}
	s.cur.Requests = append(s.cur.Requests, Exchange{Endpoint: "POST /v1/explain", Action: "execute", App: app, Method: method,
		Params: json.RawMessage(p), Token: label, HTTPStatus: a.status, Status: d.Outcome, ErrorCode: d.Code, ErrorMessage: d.Explanation,
		TookMS: a.took.Milliseconds()})
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
