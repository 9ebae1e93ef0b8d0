package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
)

// answeredBy names the person's answers given on this page in the consent record.
const answeredBy = "person (approval page)"

// pending returns the requests waiting for an answer at now, newest first, at most MaxListed.
func (s *Server) pending(r *http.Request, now time.Time) ([]requestView, error) {
	cs, err := s.o.Consent.List(r.Context(), store.ConsentPending)
	if err != nil {
		return nil, err
	}
	out := make([]requestView, 0, len(cs))
	for _, c := range slices.Backward(cs) {
		if len(out) == MaxListed {
			break
		}
		if !now.Before(c.Expires) {
			continue // expired, not yet swept
		}
		var req consent.Request
		if err := json.Unmarshal(c.Payload, &req); err != nil {
			s.o.Logger.Warn("web: a consent request's payload does not decode", "id", c.ID, "err", err)
			continue
		}
		out = append(out, newView(c, req, now))
	}
	return out, nil
}

// list is the page of pending requests.
func (s *Server) list(w http.ResponseWriter, r *http.Request, csrf string) {
	now := s.o.Now()
	views, err := s.pending(r, now)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, http.StatusOK, "requests.html", page{Title: "Requests waiting for you", Nav: "requests", CSRF: csrf, Requests: views, Now: now})
}

// listJSON is the pending requests for the page's script.
func (s *Server) listJSON(w http.ResponseWriter, r *http.Request, _ string) {
	now := s.o.Now()
	views, err := s.pending(r, now)
	if err != nil {
		s.o.Logger.Warn("web: listing consent requests failed", "err", err)
		http.Error(w, `{"error":"capgate could not list the requests"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// The encoder's default HTML escaping stays on: <, > and & go out as \u003c, \u003e, \u0026.
	_ = json.NewEncoder(w).Encode(struct {
		Now      int64         `json:"now_ms"`
		Requests []requestView `json:"requests"`
	}{now.UnixMilli(), views})
}

// one is a request's own page, the link the IPC and MCP answers give: pending or answered.
func (s *Server) one(w http.ResponseWriter, r *http.Request, csrf string) {
	c, req, err := s.o.Consent.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	now := s.o.Now()
	v := newView(c, req, now)
	s.render(w, http.StatusOK, "request.html", page{Title: "Request", Nav: "requests", CSRF: csrf, One: &v, Now: now})
}

// answer approves, denies or cancels a request, then shows its page with the outcome.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, _ string) {
	id, ctx, verb := r.PathValue("id"), r.Context(), r.PathValue("verb")
	if verb != "approve" && verb != "deny" && verb != "cancel" {
		s.message(w, http.StatusNotFound, "Not found", "There is no such action.")
		return
	}
	if verb == "approve" {
		// A form is answered with what the person fills in (answerForm), never a bare approval.
		if c, _, err := s.o.Consent.Get(ctx, id); err == nil && c.Kind == toolserver.KindForm {
			s.message(w, http.StatusBadRequest, "Not possible", "This request is a form: fill it in on its page to send it, or deny it.")
			return
		}
	}
	remember := verb == "approve" && r.PostForm.Get("remember") == "true"
	// The answer is recorded in the audit log, its decision before it is given and its
	// outcome after (operator.Service.Answer, as capgate approvals records it). An approval
	// whose record cannot be written is not given; a denial or a cancellation, which only
	// stops something, is given all the same.
	err := s.ops.Answer(ctx, onThePage, id, operator.Verb(verb), remember)
	if errors.Is(err, operator.ErrNotRecorded) {
		s.o.Logger.Warn("web: an approval could not be recorded; not given", "err", err)
		s.message(w, http.StatusInternalServerError, "Not approved", "capgate could not write the approval to its audit log, so it did not give it. Its log says why.")
		return
	}
	if errors.Is(err, consent.ErrInvalidRequest) {
		s.message(w, http.StatusBadRequest, "Not possible", "This request cannot be answered that way: a delayed commit can only be cancelled.")
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	http.Redirect(w, r, "/ui/requests/"+id, http.StatusSeeOther)
}

// answerForm answers a tool server's form request with what the person filled in: the answer
// is checked against the form (toolserver.ParseFormAnswer), kept beside the request for the
// call that waits on it, and the request approved, recorded as any answer. A form whose
// answer does not fit is shown what is wrong, and nothing is sent.
func (s *Server) answerForm(w http.ResponseWriter, r *http.Request, _ string) {
	id, ctx := r.PathValue("id"), r.Context()
	c, req, err := s.o.Consent.Get(ctx, id)
	if err != nil {
		s.fail(w, err)
		return
	}
	if c.Kind != toolserver.KindForm || c.State != store.ConsentPending || !s.o.Now().Before(c.Expires) {
		s.message(w, http.StatusConflict, "Not possible", "This request is not a form waiting for you.")
		return
	}
	fr, err := toolserver.FormRequestOf(req.Params)
	if err != nil {
		s.fail(w, err)
		return
	}
	texts := map[string]string{}
	for _, f := range fr.Fields {
		if vs, ok := r.PostForm["field:"+f.Name]; ok && len(vs) == 1 {
			texts[f.Name] = vs[0]
		} else if ok {
			s.message(w, http.StatusBadRequest, "Not sent", "A field of the form was given more than once.")
			return
		}
	}
	content, err := toolserver.ParseFormAnswer(fr.Fields, texts)
	if err != nil {
		s.message(w, http.StatusBadRequest, "Not sent", "The form's answer does not fit it, so nothing was sent: "+err.Error())
		return
	}
	if err := toolserver.SaveFormAnswer(ctx, s.o.Store, id, content); err != nil {
		s.fail(w, err)
		return
	}
	err = s.ops.Answer(ctx, onThePage, id, operator.Approve, false)
	if errors.Is(err, operator.ErrNotRecorded) {
		_ = toolserver.SaveFormAnswer(ctx, s.o.Store, id, nil)
		s.message(w, http.StatusInternalServerError, "Not sent", "capgate could not write the answer to its audit log, so it did not send it. Its log says why.")
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	http.Redirect(w, r, "/ui/requests/"+id, http.StatusSeeOther)
}
