package ipc

import (
	"encoding/json"
	"net/http"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/jcs"
)

// callByDefinition answers POST /v1/plan/call: a call by meaning. The body names a definition
// (name@major.minor) and the call's params, and may carry a request id, a capability token
// and dry_run as the envelope does. capgate routes it (plan.Planner.Route over what the
// caller's trust reaches: by path, a lower one only when every higher one is missing or not
// working) and calls the first provider's capability as any call, decided afresh; every
// audit record of the call begins its explanation with the route ("by definition X on the P
// path"). When no path works the answer is HANDOFF, recorded as such, with what was prepared
// (the definition and the params) for the person to do themselves and why each provider was
// left out. The answer is the envelope's, its details naming the definition, the path and
// the capability that ran.
func (s *Server) callByDefinition(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RequestID  string          `json:"request_id"`
		Definition string          `json:"definition"`
		Params     json.RawMessage `json:"params"`
		Token      string          `json:"capability_token"`
		DryRun     bool            `json:"dry_run"`
	}
	const shape = `{"definition": "name@major.minor", "params": {...}, "request_id": "...", "capability_token": "...", "dry_run": false}`
	caller, ok := s.jsonRequest(w, r, &req, shape)
	if !ok {
		return
	}
	switch {
	case req.Definition == "":
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, "definition: required, name@major.minor")
		return
	case req.RequestID != "" && !requestIDPattern.MatchString(req.RequestID):
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, "request_id: must match "+requestIDPattern.String())
		return
	case req.Token != "" && !tokenPattern.MatchString(req.Token):
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, "capability_token: must match "+tokenPattern.String())
		return
	case s.Planner == nil:
		failJSON(w, http.StatusServiceUnavailable, broker.CodeExecutionFailed, "planning is not served here")
		return
	}
	params, value, ok := objectParams(req.Params)
	if !ok {
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, "params: must be an object")
		return
	}
	rt, err := s.Planner.Route(req.Definition, s.Broker.ListAll(caller))
	if err != nil {
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, "definition: not name@major.minor of a definition this host has loaded")
		return
	}
	prepared := map[string]any{"definition": req.Definition, "params": params}
	call := broker.Request{RequestID: req.RequestID, Action: ActionExecute, Params: params, ParamsValue: value, Token: req.Token, DryRun: req.DryRun}
	if rt.Handoff || len(rt.Order) == 0 {
		call.App, call.Method = "definition", req.Definition
		call.Route = "by definition " + req.Definition + " on the " + string(definition.PathHandoff) + " path"
		res := s.Broker.HandOff(r.Context(), caller, call, "no provider of "+req.Definition+" can take it now: it is handed to the person")
		s.answer(w, req.RequestID, res, prepared, map[string]any{"definition": req.Definition, "path": definition.PathHandoff, "left": rt.Left})
		return
	}
	first := rt.Order[0]
	call.App, call.Method = first.Provider, first.Capability
	call.Route = "by definition " + req.Definition + " on the " + string(first.Path) + " path"
	res := s.Broker.Call(r.Context(), caller, call)
	s.answer(w, req.RequestID, res, prepared, map[string]any{"definition": req.Definition, "path": first.Path, "capability": first.Capability})
}

// objectParams reads params as the envelope reads them: absent is {}, else an object, parsed
// strictly and kept as canonical JSON beside its decoded value.
func objectParams(raw json.RawMessage) (json.RawMessage, any, bool) {
	if len(raw) == 0 {
		return json.RawMessage("{}"), map[string]any{}, true
	}
	v, err := jcsCheck(raw)
	if err != nil || v.Kind != jcs.Object {
		return nil, nil, false
	}
	c, err := v.AppendCanonical(nil)
	if err != nil {
		return nil, nil, false
	}
	return c, v.Interface(), true
}
