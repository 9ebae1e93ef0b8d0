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
