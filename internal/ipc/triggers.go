package ipc

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/trigger"
)

// proposeTrigger answers POST /v1/triggers: the body is a trigger.Spec, proposed as the
// calling client's; the answer (201) is the trigger, proposed and waiting for the person,
// with its webhook's secret, shown this once.
func (s *Server) proposeTrigger(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.triggerCaller(w, r)
	if !ok {
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, trigger.MaxSpecBytes))
	if err != nil {
		failJSON(w, http.StatusRequestEntityTooLarge, CodeInvalidRequest, "the proposal is too large")
		return
	}
	spec, err := trigger.ParseSpec(data)
	if err != nil {
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return
	}
	p, err := s.Triggers.Propose(r.Context(), caller, spec)
	if err != nil {
		s.triggerError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, p)
}

// triggerCaller authenticates the caller of a trigger route, answering 401, or 503 when no
// triggers are served, itself.
func (s *Server) triggerCaller(w http.ResponseWriter, r *http.Request) (broker.Caller, bool) {
	caller, ok := s.authenticate(r)
	if !ok {
		s.unauthorized(w, "")
		return broker.Caller{}, false
	}
	if s.Triggers == nil {
		failJSON(w, http.StatusServiceUnavailable, broker.CodeExecutionFailed, "triggers are not served here")
		return broker.Caller{}, false
	}
	return caller, true
}

// triggerError answers an error of the trigger engine.
func (s *Server) triggerError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, trigger.ErrInvalid):
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
	case errors.Is(err, trigger.ErrRefused):
		failJSON(w, http.StatusForbidden, policy.CodeCapabilityDenied, err.Error())
	case errors.Is(err, trigger.ErrTooMany):
		failJSON(w, http.StatusTooManyRequests, CodeInvalidRequest, err.Error())
	case errors.Is(err, trigger.ErrNotFound):
		failJSON(w, http.StatusNotFound, CodeInvalidRequest, "no such trigger")
	case errors.Is(err, trigger.ErrState):
		failJSON(w, http.StatusConflict, CodeInvalidRequest, err.Error())
	default:
		s.log().Error("triggers", "err", err)
		failJSON(w, http.StatusInternalServerError, broker.CodeExecutionFailed, "the trigger could not be handled")
	}
}

// listTriggers answers GET /v1/triggers: the calling client's own triggers, oldest first.
func (s *Server) listTriggers(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.triggerCaller(w, r)
	if !ok {
		return
	}
	vs, err := s.Triggers.List(r.Context(), caller.ClientID)
	if err != nil {
		s.triggerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"triggers": vs})
}

// showTrigger answers GET /v1/triggers/{id}: one of the calling client's triggers, with its
// recent firings; another client's is not found.
func (s *Server) showTrigger(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.triggerCaller(w, r)
	if !ok {
		return
	}
	v, err := s.Triggers.Get(r.Context(), r.PathValue("id"), caller.ClientID)
	if err != nil {
		s.triggerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// hook answers POST /v1/hooks/{id}, a trigger's webhook: no client key, the request is
// authenticated by its signature (trigger.VerifyHook). 202 with the firing's id once it is
// taken; 401 for a signature that does not verify (whatever the reason, alike), 404 for no
// such webhook, 409 for a replay or a trigger that does not fire now, 413 for a body over
// trigger.MaxHookBody.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	if s.Triggers == nil {
		failJSON(w, http.StatusServiceUnavailable, broker.CodeExecutionFailed, "triggers are not served here")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, trigger.MaxHookBody))
	if err != nil {
		failJSON(w, http.StatusRequestEntityTooLarge, CodeInvalidRequest, "the body is too large")
		return
	}
	f, err := s.Triggers.Hook(r.Context(), r.PathValue("id"), r.Header.Get(trigger.HookSignatureHeader), body)
	switch {
	case err == nil:
		writeJSON(w, http.StatusAccepted, map[string]any{"status": "accepted", "firing": f.ID})
	case errors.Is(err, trigger.ErrHookSignature):
		failJSON(w, http.StatusUnauthorized, policy.CodeInvalidToken, err.Error())
	case errors.Is(err, trigger.ErrNotFound), errors.Is(err, store.ErrNotFound):
		failJSON(w, http.StatusNotFound, CodeInvalidRequest, "no such webhook")
	case errors.Is(err, trigger.ErrReplay):
		failJSON(w, http.StatusConflict, CodeInvalidRequest, "this request was taken already: a replay is refused")
	case errors.Is(err, trigger.ErrInactive):
		failJSON(w, http.StatusConflict, CodeInvalidRequest, err.Error())
	case errors.Is(err, trigger.ErrInvalid):
		failJSON(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
	default:
		s.log().Error("triggers: a webhook", "err", err)
		failJSON(w, http.StatusInternalServerError, broker.CodeExecutionFailed, "the webhook could not be handled")
	}
}

// reply answers POST /v1/triggers/{id}/reply: a typed reply of the calling client to a
// trigger waiting for one from it, the body {"id": "...", "reply": {...}}; 202 with the
// firing's id once it is taken, 404 for a trigger that waits for no reply of this client's,
// 409 for a reply id taken already or a trigger that does not fire now.
func (s *Server) reply(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID    string          `json:"id"`
		Reply json.RawMessage `json:"reply"`
	}
	caller, ok := s.jsonRequest(w, r, &req, `{"id": "...", "reply": {...}}`)
	if !ok {
		return
	}
	if s.Triggers == nil {
		failJSON(w, http.StatusServiceUnavailable, broker.CodeExecutionFailed, "triggers are not served here")
		return
	}
	f, err := s.Triggers.Reply(r.Context(), caller, r.PathValue("id"), req.ID, req.Reply)
	switch {
	case err == nil:
		writeJSON(w, http.StatusAccepted, map[string]any{"status": "accepted", "firing": f.ID})
	case errors.Is(err, trigger.ErrReplay):
		failJSON(w, http.StatusConflict, CodeInvalidRequest, "this reply was taken already")
	case errors.Is(err, trigger.ErrInactive):
		failJSON(w, http.StatusConflict, CodeInvalidRequest, err.Error())
	default:
		s.triggerError(w, err)
	}
}
