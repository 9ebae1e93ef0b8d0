package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/capgate/capgate/client/wire"
	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/plan"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/revcache"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/internal/trigger"
)

// Server is the IPC API over HTTP. The same handler serves a TCP listener and the unix socket;
// on the socket a peer whose uid belongs to a client is that client without a key.
type Server struct {
	Broker  *broker.Broker
	Clients store.Clients
	Tokens  store.Tokens // for revocation by the token's own client
	// Audit records what a client changes outside a call (revoking its token), before and
	// after, as the approval page and the CLI record theirs (operator.Change); nil: such a
	// change, which only takes away, is made unrecorded and logged.
	Audit    operator.Recorder
	Registry *registry.Registry
	// Definitions are the host's definitions, which POST /v1/definitions/negotiate
	// intersects with what a client supports; nil: none.
	Definitions *definition.Set
	// Planner answers POST /v1/plan/candidates; nil: the endpoint answers 503.
	Planner *plan.Planner
	// Triggers answers /v1/triggers and the webhooks /v1/hooks/{id}; nil: they answer 503.
	Triggers *trigger.Engine
	Logger   *slog.Logger     // nil: slog.Default()
	Now      func() time.Time // nil: time.Now

	// known holds the clients found by key hash, so that a call does not read the store to
	// learn who is calling, each tagged with the broker's store revision read before the
	// store was: every change to a client (a key rotated, a client disabled or removed)
	// moves the revision, and nothing read before it is served after. Only clients found
	// are held: a key unknown a moment ago may belong to a client added since.
	// It holds only clients the store has, so it is never larger than the store's list.
	known revcache.Map[string, store.Client]
}

// KeyHash is how a client key is known to the store (operator.KeyHash, where keys are minted).
func KeyHash(key string) string { return operator.KeyHash(key) }

type ctxKey int

const peerUIDKey ctxKey = 0

// ConnContext records the peer uid of a unix-socket connection for authentication; use it as
// http.Server.ConnContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if uc, ok := c.(*net.UnixConn); ok {
		if uid, ok := peerUID(uc); ok {
			return context.WithValue(ctx, peerUIDKey, uid)
		}
	}
	return ctx
}

// PeerUIDOf is the peer uid ConnContext recorded in ctx, if the connection had one.
func PeerUIDOf(ctx context.Context) (int, bool) {
	uid, ok := ctx.Value(peerUIDKey).(int)
	return uid, ok
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Server) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Handler returns the API's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/ipc", s.ipc)
	mux.HandleFunc("GET /v1/capabilities", s.capabilities)
	mux.HandleFunc("POST /v1/capabilities/request", s.request)
	mux.HandleFunc("POST /v1/explain", s.explain)
	mux.HandleFunc("POST /v1/definitions/negotiate", s.negotiate)
	mux.HandleFunc("POST /v1/plan/candidates", s.candidates)
	mux.HandleFunc("POST /v1/plan/route", s.route)
	mux.HandleFunc("POST /v1/plan/call", s.callByDefinition)
	mux.HandleFunc("POST /v1/triggers", s.proposeTrigger)
	mux.HandleFunc("GET /v1/triggers", s.listTriggers)
	mux.HandleFunc("GET /v1/triggers/{id}", s.showTrigger)
	mux.HandleFunc("POST /v1/triggers/{id}/reply", s.reply)
	mux.HandleFunc("POST /v1/hooks/{id}", s.hook)
	mux.HandleFunc("POST /v1/tokens/revoke", s.revoke)
	mux.HandleFunc("POST /v1/tokens/derive", s.derive)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	return mux
}

// Authenticate finds the client of r as every IPC route does (a bearer key, else the unix
// peer's uid), for another front on the same listener (MCP); false means unknown or disabled.
func (s *Server) Authenticate(r *http.Request) (broker.Caller, bool) { return s.authenticate(r) }

// authenticate finds the calling client: a bearer key, else the unix peer's uid.
func (s *Server) authenticate(r *http.Request) (broker.Caller, bool) {
	ctx := r.Context()
	var c store.Client
	var err error
	if auth := r.Header.Get("Authorization"); auth != "" {
		// The scheme name is case-insensitive (RFC 7235); the key is not.
		scheme, key, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" {
			return broker.Caller{}, false
		}
		kh := KeyHash(key)
		rev := s.Broker.Revision()
		var hit bool
		if c, hit = s.known.Get(rev, kh); !hit {
			if c, err = s.Clients.ClientByKeyHash(ctx, kh); err == nil {
				s.known.Put(rev, kh, c)
			}
		}
	} else if uid, ok := ctx.Value(peerUIDKey).(int); ok {
		c, err = s.Clients.ClientByUID(ctx, uid)
	} else {
		return broker.Caller{}, false
	}
	if err != nil || c.Disabled {
		return broker.Caller{}, false
	}
	return broker.Caller{ClientID: c.ID, Name: c.Name, Trust: c.Trust, NeverAsk: c.NeverAsk, RequireToken: c.RequireToken,
		Assistant: policy.Assistant(c.Assistant)}, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// envelopeRequest authenticates the caller and reads the body of an envelope endpoint,
// answering 401 or 413 itself when it cannot.
func (s *Server) envelopeRequest(w http.ResponseWriter, r *http.Request) (broker.Caller, []byte, bool) {
	caller, ok := s.authenticate(r)
	if !ok {
		s.unauthorized(w, "")
		return broker.Caller{}, nil, false
	}
	data, ok := readBody(w, r)
	if !ok {
		writeJSON(w, http.StatusRequestEntityTooLarge, Error("", s.now(), CodeInvalidRequest, "the request is too large", nil))
		return broker.Caller{}, nil, false
	}
	return caller, data, true
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body := http.MaxBytesReader(w, r.Body, MaxEnvelopeBytes)
	if n := r.ContentLength; n >= 0 && n <= MaxEnvelopeBytes {
		// The length is known (net/http holds the body to it): read it into one buffer of
		// its size, not one grown as it is read.
		data := make([]byte, n)
		if _, err := io.ReadFull(body, data); err != nil {
			return nil, false
		}
		return data, true
	}
	data, err := io.ReadAll(body)
	return data, err == nil
}

func (s *Server) unauthorized(w http.ResponseWriter, requestID string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="capgate"`)
	writeJSON(w, http.StatusUnauthorized, Error(requestID, s.now(), "PERMISSION_DENIED", "unknown client: send the client key as a bearer token", nil))
}

func (s *Server) ipc(w http.ResponseWriter, r *http.Request) {
	caller, data, ok := s.envelopeRequest(w, r)
	if !ok {
		return
	}
	req, err := ParseRequest(data)
	if err != nil {
		var re *RequestError
		errors.As(err, &re)
		details := map[string]any{}
		if re != nil {
			details["problems"] = re.Problems
		}
		id := ""
		if re != nil {
			id = re.RequestID
		}
		writeJSON(w, http.StatusOK, Error(id, s.now(), CodeInvalidRequest, "the request envelope is not valid", details))
		return
	}
	if req.Body.Action == ActionUndo {
		s.undo(w, r, caller, req)
		return
	}
	res := s.Broker.Call(r.Context(), caller, broker.Request{
		RequestID: req.Header.RequestID, Action: req.Body.Action, App: req.Body.App, Method: req.Body.Method,
		Params: req.Body.Params, ParamsDecode: req.ParamsDecode, ParamsCanonical: true, Token: req.Body.CapabilityToken, DryRun: req.Body.DryRun,
	})
	// One structured line per call: who, what, the decision and its code; never params or tokens.
	s.log().LogAttrs(r.Context(), slog.LevelDebug, "call", slog.String("client", caller.ClientID), slog.String("app", req.Body.App),
		slog.String("method", req.Body.Method), slog.String("decision", string(res.Decision.Outcome)), slog.String("code", res.Code),
		slog.String("call_id", res.CallID))
	var prepared map[string]any // what a handoff gives the person to do themselves
	if res.Decision.Outcome == policy.Handoff {
		prepared = map[string]any{"app": req.Body.App, "method": req.Body.Method, "params": req.Body.Params}
	}
	s.answer(w, req.Header.RequestID, res, prepared, nil)
}

// answer writes the envelope of a call's result. A handoff hands back prepared, for the
// person to do themselves: the call as the agent made it, which is the agent's own to see.
// more are details every refusal carries besides the decision and the call id.
func (s *Server) answer(w http.ResponseWriter, requestID string, res broker.Result, prepared, more map[string]any) {
	if res.OK() && len(more) == 0 && writeSuccess(w, requestID, s.now(), res) {
		return
	}
	if res.OK() {
		resp := Success(requestID, s.now(), res.Data)
		resp.Body.UndoToken, resp.Body.Compensation = res.UndoToken, res.Compensation
		if !res.UndoUntil.IsZero() {
			resp.Body.UndoUntil = res.UndoUntil.UnixMilli()
		}
		if len(more) > 0 {
			resp.Body.Details = more
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	details := map[string]any{"decision": res.Decision.Outcome, "call_id": res.CallID}
	for k, v := range more {
		details[k] = v
	}
	if res.Decision.Outcome == policy.Handoff {
		details["prepared"] = prepared
	}
	resp := Error(requestID, s.now(), res.Code, res.Message, details)
	if res.ConsentID != "" {
		resp.Body.Consent = &ConsentRef{ID: res.ConsentID, URL: "/ui/requests/" + res.ConsentID}
	}
	writeJSON(w, http.StatusOK, resp)
}

// revoke revokes one of the caller's own tokens (its wire form or its id) and every token
// derived from it. A token of another client is answered as unknown.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.authenticate(r)
	if !ok {
		s.unauthorized(w, "")
		return
	}
	data, ok := readBody(w, r)
	var body struct {
		Token string `json:"token"`
	}
	if !ok || json.Unmarshal(data, &body) != nil || body.Token == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "error_code": CodeInvalidRequest, "error_message": `the body must be {"token": "..."}`})
		return
	}
	id := body.Token
	if t, err := token.Parse(body.Token); err == nil {
		id = t.ID
	}
	notFound := func() {
		writeJSON(w, http.StatusNotFound, map[string]any{"status": "error", "error_code": "INVALID_TOKEN", "error_message": "no such token of this client"})
	}
	if len(id) > audit.MaxFieldBytes {
		notFound() // no token has such an id, and the log would not take it
		return
	}
	// The revocation is the client's change, recorded as the CLI and the page record theirs:
	// the decision before, the outcome after. Another client's token is answered and
	// recorded as unknown. A revocation only takes away: it is made even unrecorded.
	ops := operator.Service{Audit: s.Audit, Tokens: ownTokens{s, caller.ClientID}, Warn: func(_ string, err error) {
		s.log().Warn("ipc: a client's revocation", "client", caller.ClientID, "err", err)
	}}
	err := ops.Revoke(r.Context(), operator.Actor{ID: caller.ClientID, Who: "the client", Where: "through the IPC API"}, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		notFound()
	case err != nil:
		s.log().Error("revoke failed", "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]any{"status": "error", "error_code": "EXECUTION_FAILED", "error_message": "the token could not be revoked"})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": "success", "token_id": id})
	}
}

// ownTokens revokes a client's own tokens only: another client's token is as unknown as one
// that does not exist.
type ownTokens struct {
	s      *Server
	client string
}

func (o ownTokens) Revoke(ctx context.Context, id string) error {
	st, err := o.s.Tokens.GetToken(ctx, id)
	switch {
	case err != nil:
		return err
	case st.ClientID != o.client:
		return fmt.Errorf("ipc: another client's token: %w", store.ErrNotFound)
	}
	return o.s.Broker.Revoke(ctx, id)
}

// explain answers what a call would get and why, with no side effect: no use taken, no
// consent asked, nothing recorded, nothing run.
func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	caller, data, ok := s.envelopeRequest(w, r)
	if !ok {
		return
	}
	req, err := ParseRequest(data)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, Error("", s.now(), CodeInvalidRequest, "the request envelope is not valid", nil))
		return
	}
	d := s.Broker.Explain(r.Context(), caller, broker.Request{RequestID: req.Header.RequestID, Action: req.Body.Action,
		App: req.Body.App, Method: req.Body.Method, Params: req.Body.Params, ParamsDecode: req.ParamsDecode, Token: req.Body.CapabilityToken})
	writeJSON(w, http.StatusOK, map[string]any{"outcome": d.Outcome, "code": d.Code, "explanation": d.Explanation, "step": d.Step, "trace": d.Trace})
}

func (s *Server) undo(w http.ResponseWriter, r *http.Request, caller broker.Caller, req Request) {
	err := s.Broker.Undo(r.Context(), caller, req.Body.UndoToken)
	if err == nil {
		writeJSON(w, http.StatusOK, Success(req.Header.RequestID, s.now(), json.RawMessage(`{"undone":true}`)))
		return
	}
	code, msg := "EXECUTION_FAILED", "the undo failed"
	switch {
	case errors.Is(err, broker.ErrUndoUnknown), errors.Is(err, broker.ErrUndoClient):
		code, msg = "INVALID_TOKEN", "no such undo token for this client"
	case errors.Is(err, broker.ErrUndoExpired):
		code, msg = "TOKEN_EXPIRED", "the undo window has passed"
	case errors.Is(err, broker.ErrUndoNotSupp):
		code, msg = "METHOD_NOT_FOUND", "the app cannot undo"
	}
	writeJSON(w, http.StatusOK, Error(req.Header.RequestID, s.now(), code, msg, nil))
}

// Tool is one capability as the caller sees it: the definition an agent's planner needs.
type Tool = wire.Tool

// capabilities lists what the caller may use: never a capability it would be refused
// outright (unknown, disabled, or above its trust level). The rule is broker.UsableBy, which
// MCP's tools/list shares.
func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.authenticate(r)
	if !ok {
		s.unauthorized(w, "")
		return
	}
	tools := []Tool{}
	switch all := r.URL.Query().Get("all"); all {
	case "":
		for _, u := range s.Broker.UsableBy(caller) {
			tools = append(tools, toolOf(u))
		}
	case "1", "true":
		// Everything the caller's trust reaches, what cannot run shown as not working right
		// now: for the person's view and for a planner that reports why a tool is missing.
		for _, l := range s.Broker.ListAll(caller) {
			t := toolOf(l.Usable)
			if !l.Working {
				t.Status, t.Why = broker.NotWorkingRightNow, l.Why
			}
			tools = append(tools, t)
		}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "error_code": CodeInvalidRequest, "error_message": "all: must be 1 or true"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"capabilities": tools})
}

// toolOf is a usable capability as GET /v1/capabilities lists it.
func toolOf(u broker.Usable) Tool {
	c := u.Cap
	return Tool{
		ID: u.ID.String(), App: u.App.Alias, Method: u.Method, Name: c.Name, Description: c.Description,
		Parameters: c.Parameters, Returns: c.Returns, SideEffects: string(c.SideEffects), Risk: string(c.Risk),
		Permission: u.Permission.String(), Reversibility: string(policy.Reversibility(c)), Tier: int(u.App.Tier), NeedsConsent: u.NeedsConsent,
	}
}

// failJSON answers a JSON endpoint's error: status, code and a message for the client.
func failJSON(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"status": "error", "error_code": code, "error_message": msg})
}

// jsonRequest authenticates the caller of a JSON endpoint and decodes its body strictly
// (strict JSON, no unknown member) into v, answering 401, 413 or 400 (naming shape, the
// body's documented form) itself when it cannot.
func (s *Server) jsonRequest(w http.ResponseWriter, r *http.Request, v any, shape string) (broker.Caller, bool) {
	caller, ok := s.authenticate(r)
	if !ok {
		s.unauthorized(w, "")
		return broker.Caller{}, false
	}
	data, ok := readBody(w, r)
	if !ok {
		failJSON(w, http.StatusRequestEntityTooLarge, CodeInvalidRequest, "the request is too large")
		return broker.Caller{}, false
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if _, err := jcsCheck(data); err != nil || dec.Decode(v) != nil {
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, "the body must be "+shape)
		return broker.Caller{}, false
	}
	return caller, true
}

// candidates answers POST /v1/plan/candidates: for the body {"task": "...", "limit": N}, the
// few capabilities the caller may use that best match the task (plan.Planner), best first,
// each as GET /v1/capabilities lists it with its score.
func (s *Server) candidates(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Task  string `json:"task"`
		Limit int    `json:"limit"`
	}
	caller, ok := s.jsonRequest(w, r, &req, `{"task": "...", "limit": N}`)
	if !ok {
		return
	}
	if s.Planner == nil {
		failJSON(w, http.StatusServiceUnavailable, broker.CodeExecutionFailed, "planning is not served here")
		return
	}
	if req.Limit < 0 || req.Limit > plan.MaxCandidates {
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("limit: must be 1 to %d (0 or absent: %d)", plan.MaxCandidates, plan.DefaultCandidates))
		return
	}
	plannable, err := s.Broker.Plannable(r.Context(), caller)
	if err != nil {
		s.log().Error("planning: the mandates could not be read", "err", err)
		failJSON(w, http.StatusInternalServerError, broker.CodeExecutionFailed, "planning failed: the person's mandates could not be read")
		return
	}
	cands, err := s.Planner.Candidates(req.Task, plannable, req.Limit)
	if errors.Is(err, plan.ErrTask) {
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, "task: must be 1 to 4096 bytes of text")
		return
	}
	if err != nil {
		s.log().Error("planning failed", "err", err)
		failJSON(w, http.StatusInternalServerError, broker.CodeExecutionFailed, "planning failed")
		return
	}
	type scored struct {
		Tool
		Score float64 `json:"score"`
	}
	out := make([]scored, 0, len(cands))
	for _, c := range cands {
		out = append(out, scored{Tool: toolOf(c.Usable), Score: c.Score})
	}
	writeJSON(w, http.StatusOK, map[string]any{"candidates": out})
}

// negotiate answers POST /v1/definitions/negotiate: the body {"supports": ["name@major.minor",
// ...]} intersected with the host's definitions (definition.Negotiate), answered with the
// offered definitions' documents and why each entry was kept or dropped.
func (s *Server) negotiate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Supports []string `json:"supports"`
	}
	const shape = `{"supports": ["name@major.minor", ...]}`
	if _, ok := s.jsonRequest(w, r, &req, shape); !ok {
		return
	}
	switch {
	case req.Supports == nil:
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, "the body must be "+shape)
	case len(req.Supports) > definition.MaxSupports:
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("supports: more than %d entries", definition.MaxSupports))
	default:
		writeJSON(w, http.StatusOK, definition.Negotiate(s.Definitions, req.Supports).Answer())
	}
}

// route answers POST /v1/plan/route: for the body {"definition": "name@major.minor"}, the
// providers of that definition among what the caller's trust reaches, in the order they would
// be tried (plan.Planner.Route): by path, a lower one only when every higher one is missing
// or not working, and a hand-off when none works.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Definition string `json:"definition"`
	}
	const shape = `{"definition": "name@major.minor"}`
	caller, ok := s.jsonRequest(w, r, &req, shape)
	if !ok {
		return
	}
	switch {
	case req.Definition == "":
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, "the body must be "+shape)
		return
	case s.Planner == nil:
		failJSON(w, http.StatusServiceUnavailable, broker.CodeExecutionFailed, "planning is not served here")
		return
	}
	rt, err := s.Planner.Route(req.Definition, s.Broker.ListAll(caller))
	if err != nil {
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, "definition: not name@major.minor of a definition this host has loaded")
		return
	}
	writeJSON(w, http.StatusOK, rt)
}

// The bodies of POST /v1/capabilities/request and POST /v1/tokens/derive are the wire
// form's: what the client encodes is what the server decodes, strictly.
type (
	capabilityRequest = wire.CapabilityRequest
	deriveRequest     = wire.DeriveRequest
	constraintsJSON   = wire.Constraints
)

// derive issues a strictly narrower child of the caller's own token (attenuation).
func (s *Server) derive(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.authenticate(r)
	if !ok {
		s.unauthorized(w, "")
		return
	}
	fail := func(status int, code, msg string) {
		writeJSON(w, status, map[string]any{"status": "error", "error_code": code, "error_message": msg})
	}
	data, ok := readBody(w, r)
	if !ok {
		fail(http.StatusRequestEntityTooLarge, CodeInvalidRequest, "the request is too large")
		return
	}
	var dr deriveRequest
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if _, err := jcsCheck(data); err != nil || dec.Decode(&dr) != nil || dr.Token == "" {
		fail(http.StatusBadRequest, CodeInvalidRequest, "the derive request is not valid JSON of the documented shape")
		return
	}
	cons, ok := decodeConstraints(dr.Constraints)
	if !ok {
		fail(http.StatusBadRequest, CodeInvalidRequest, "constraints: unknown or mistyped member")
		return
	}
	iss, err := s.Broker.Derive(r.Context(), caller, broker.DeriveRequest{
		Parent: dr.Token, Capabilities: dr.Capabilities, Duration: dr.Duration, MaxUses: dr.MaxUses, Reason: dr.Reason,
		Constraints: tokenConstraints(cons),
	})
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, map[string]any{"status": "success", "token": iss.Wire, "token_id": iss.ID, "expires_at": iss.ExpiresAt.Unix()})
	case errors.Is(err, broker.ErrClientRefused):
		s.unauthorized(w, "")
	case errors.Is(err, broker.ErrDeriveParent):
		fail(http.StatusForbidden, "INVALID_TOKEN", err.Error())
	case errors.Is(err, broker.ErrIssueInvalid):
		fail(http.StatusBadRequest, CodeInvalidRequest, err.Error())
	default:
		s.log().Error("derive failed", "err", err)
		fail(http.StatusInternalServerError, "EXECUTION_FAILED", "the token could not be issued")
	}
}

// decodeConstraints reads a constraints object strictly; absent is no constraint.
func decodeConstraints(raw json.RawMessage) (constraintsJSON, bool) {
	var cons constraintsJSON
	if len(raw) == 0 {
		return cons, true
	}
	cd := json.NewDecoder(strings.NewReader(string(raw)))
	cd.DisallowUnknownFields()
	return cons, cd.Decode(&cons) == nil
}

// tokenConstraints is c as a token's constraints; the max uses are the request's to set.
func tokenConstraints(c constraintsJSON) token.Constraints {
	return token.Constraints{AllowedPaths: c.AllowedPaths, AllowedCommands: c.AllowedCommands,
		DeniedCommands: c.DeniedCommands, DeniedPatterns: c.DeniedPatterns, Condition: c.Condition}
}

func (s *Server) request(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.authenticate(r)
	if !ok {
		s.unauthorized(w, "")
		return
	}
	data, ok := readBody(w, r)
	if !ok {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"status": "error", "error_code": CodeInvalidRequest, "error_message": "the request is too large"})
		return
	}
	fail := func(status int, code, msg string, extra map[string]any) {
		body := map[string]any{"status": "error", "error_code": code, "error_message": msg}
		for k, v := range extra {
			body[k] = v
		}
		writeJSON(w, status, body)
	}
	var cr capabilityRequest
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if _, err := jcsCheck(data); err != nil || dec.Decode(&cr) != nil {
		fail(http.StatusBadRequest, CodeInvalidRequest, "the capability request is not valid JSON of the documented shape", nil)
		return
	}
	cons, ok := decodeConstraints(cr.Constraints)
	if !ok {
		fail(http.StatusBadRequest, CodeInvalidRequest, "constraints: unknown or mistyped member", nil)
		return
	}
	maxUses := cr.MaxUses
	if maxUses == 0 {
		maxUses = cons.MaxUses
	}
	iss, err := s.Broker.RequestCapability(r.Context(), caller, broker.CapabilityRequest{
		Capabilities: cr.Capabilities, Duration: cr.Duration, MaxUses: maxUses, Reason: cr.Reason,
		Constraints: tokenConstraints(cons),
	})
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, map[string]any{"status": "success", "token": iss.Wire, "token_id": iss.ID, "expires_at": iss.ExpiresAt.Unix(), "consent_id": iss.ConsentID})
	case errors.Is(err, broker.ErrClientRefused):
		s.unauthorized(w, "")
	case errors.Is(err, broker.ErrIssueInvalid):
		fail(http.StatusBadRequest, CodeInvalidRequest, err.Error(), nil)
	case errors.Is(err, broker.ErrIssuePending):
		fail(http.StatusAccepted, "CONSENT_REQUIRED", "the request waits for the person's consent", map[string]any{"consent": ConsentRef{ID: iss.ConsentID, URL: "/ui/requests/" + iss.ConsentID}})
	case errors.Is(err, broker.ErrIssueNeverAsk):
		fail(http.StatusForbidden, "CONSENT_REQUIRED", "the grants need the person's consent and this client is set never to ask", nil)
	case errors.Is(err, broker.ErrIssueExpired):
		fail(http.StatusForbidden, "CONSENT_DENIED", "no answer came before the request expired", map[string]any{"consent": ConsentRef{ID: iss.ConsentID, URL: "/ui/requests/" + iss.ConsentID}})
	case errors.Is(err, broker.ErrIssueDenied):
		fail(http.StatusForbidden, "CONSENT_DENIED", "the person did not approve the request", nil)
	case errors.Is(err, broker.ErrIssueWithdrawn):
		// Nobody reads this: the client went away. Said all the same.
		fail(http.StatusForbidden, "CONSENT_DENIED", err.Error(), nil)
	default:
		s.log().Error("request_capability failed", "err", err)
		fail(http.StatusInternalServerError, "EXECUTION_FAILED", "the token could not be issued", nil)
	}
}
