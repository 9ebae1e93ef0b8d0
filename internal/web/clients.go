package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
)

// clientView is one client as the clients page shows it: never its key or the key's hash.
// The name came from the operator's command line and is rendered as text, revealed.
type clientView struct {
	ID         string
	Name       string
	Trust      string
	Disabled   bool
	Settings   string // require-token, never-ask, the unix uid, in words; "" for none
	Created    string
	LiveTokens int
}

// clientsAvailable answers 404 when the page has no store to read the clients from.
func (s *Server) clientsAvailable(w http.ResponseWriter) bool {
	if s.o.Store == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway serves no client list.")
		return false
	}
	return true
}

// clients is the page of the clients: each with a disable or enable button and a remove
// button.
func (s *Server) clients(w http.ResponseWriter, r *http.Request, csrf string) {
	if !s.clientsAvailable(w) {
		return
	}
	ctx, now := r.Context(), s.o.Now()
	cs, err := s.o.Store.ListClients(ctx)
	var ts []store.Token
	if err == nil {
		ts, err = s.o.Store.ListTokens(ctx, true, now)
	}
	if err != nil {
		s.o.Logger.Warn("web: listing clients failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not list the clients. Its log says why.")
		return
	}
	live := map[string]int{}
	for _, t := range ts {
		live[t.ClientID]++
	}
	views := make([]clientView, 0, min(len(cs), MaxListed))
	for _, c := range cs {
		if len(views) == MaxListed {
			break
		}
		var set []string
		if c.RequireToken {
			set = append(set, "needs a token for every call")
		}
		if c.NeverAsk {
			set = append(set, "never asks you: what would need your consent is refused")
		}
		if c.UnixUID != nil {
			set = append(set, "is also the unix user "+strconv.Itoa(*c.UnixUID)+" on the gateway's socket")
		}
		switch c.Assistant {
		case "":
		case "private":
			set = append(set, "is another assistant whose provider neither stores nor trains on data: never your sensitive data")
		default:
			set = append(set, "is another assistant that may keep what it is given: never your personal context or sensitive data")
		}
		v := clientView{ID: reveal(c.ID, false), Name: reveal(c.Name, false), Trust: reveal(string(c.Trust), false), Disabled: c.Disabled,
			Settings: strings.Join(set, "; "), Created: showTime(c.Created), LiveTokens: live[c.ID]}
		views = append(views, v)
	}
	s.render(w, http.StatusOK, "clients.html", page{Title: "Clients", Nav: "clients", CSRF: csrf, Clients: views, Now: now})
}

// changeClient disables, enables or removes a client, recorded in the audit log as the
// person's (operator.Service.ChangeClient, as `capgate client` records the operator's), then shows
// the clients page. A disable or a removal only takes away: it is made even when its record
// cannot be written; an enable whose record cannot be written is not made.
func (s *Server) changeClient(w http.ResponseWriter, r *http.Request, _ string) {
	if !s.clientsAvailable(w) {
		return
	}
	action, ok := operator.ParseClientAction(r.PathValue("verb"))
	if !ok {
		s.message(w, http.StatusNotFound, "Not found", "There is no such action.")
		return
	}
	id, ctx := r.PathValue("id"), r.Context()
	if len(id) > maxIDBytes {
		s.message(w, http.StatusNotFound, "No such client", "There is no client with this id.")
		return
	}
	if _, err := s.o.Store.GetClient(ctx, id); errors.Is(err, store.ErrNotFound) {
		s.message(w, http.StatusNotFound, "No such client", "There is no client with this id: it may have been removed. Reload the clients page.")
		return
	}
	_, err := s.ops.ChangeClient(ctx, onThePage, id, action)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.message(w, http.StatusNotFound, "No such client", "There is no client with this id: it may have been removed. Reload the clients page.")
	case err != nil && action == operator.ClientEnable:
		s.o.Logger.Warn("web: enabling a client failed", "err", err)
		s.message(w, http.StatusServiceUnavailable, "Not enabled", "capgate could not record the change in the audit log, or could not make it, so the client stays disabled. Its log says why.")
	case err != nil:
		s.o.Logger.Warn("web: changing a client failed", "action", action, "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not change the client. Its log says why.")
	default:
		http.Redirect(w, r, "/ui/clients", http.StatusSeeOther)
	}
}
