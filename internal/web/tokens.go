package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
)

// tokenView is one live token as the tokens page shows it. It never holds the token's wire
// form or its hash: whoever reads the page must not be able to use the token. Its strings
// (scopes, constraints, audit tag, client name) came from an agent or the person's own
// answers and are rendered as text, revealed.
type tokenView struct {
	ID          string // capgate's token_id
	Client      string // the client's name, else its id
	Scopes      string // comma-separated grants, or capgate's words when not recorded
	Constraints string // in words, "none" for none
	UsesLeft    string // "3 of 5", or "no limit"
	Issued      string
	Expires     string // the time left, then the date (consent.ShowWhen)
	AuditTag    string
	ParentID    string // the token it was derived from, "" for a root token
	Depth       int    // 0 for a token whose parent is not listed; 1, 2, ... below its listed parent
}

// tokenBody is what the tokens page reads of a token's canonical JSON (store.Token.Body):
// the members of token.Token it shows. Unknown members are ignored: this is display, not
// verification, and the store holds the signed token's own canonical form.
type tokenBody struct {
	Capabilities []string `json:"capabilities"`
	Constraints  struct {
		MaxUses         int64    `json:"max_uses"`
		AllowedPaths    []string `json:"allowed_paths"`
		AllowedCommands []string `json:"allowed_commands"`
		DeniedCommands  []string `json:"denied_commands"`
		DeniedPatterns  []string `json:"denied_patterns"`
		Condition       string   `json:"condition"`
	} `json:"constraints"`
	AuditTag string `json:"audit_tag"`
}

// notRecorded is shown for scopes and constraints of a token whose body the store lacks.
const notRecorded = "not recorded by the gateway"

// liveTokens returns the live tokens at now, each derived token right under its parent.
func (s *Server) liveTokens(r *http.Request, now time.Time) ([]tokenView, error) {
	ts, err := s.o.Store.ListTokens(r.Context(), true, now)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	clientName := func(id string) string {
		if n, ok := names[id]; ok {
			return n
		}
		n := id
		if c, err := s.o.Store.GetClient(r.Context(), id); err == nil && c.Name != "" {
			n = c.Name
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.o.Logger.Warn("web: reading a token's client failed", "token", id, "err", err)
		}
		names[id] = reveal(n, false)
		return names[id]
	}
	listed := make(map[string]bool, len(ts))
	children := map[string][]store.Token{}
	for _, t := range ts {
		listed[t.ID] = true
	}
	var roots []store.Token
	for _, t := range ts {
		if t.ParentID != "" && listed[t.ParentID] {
			children[t.ParentID] = append(children[t.ParentID], t)
		} else {
			roots = append(roots, t)
		}
	}
	out := make([]tokenView, 0, len(ts))
	var walk func(t store.Token, depth int)
	walk = func(t store.Token, depth int) {
		if len(out) == MaxListed {
			return
		}
		out = append(out, newTokenView(t, clientName(t.ClientID), depth, now))
		for _, c := range children[t.ID] {
			walk(c, depth+1)
		}
	}
	for _, t := range roots {
		walk(t, 0)
	}
	return out, nil
}

// newTokenView builds the view of the stored token t at now.
func newTokenView(t store.Token, client string, depth int, now time.Time) tokenView {
	v := tokenView{ID: reveal(t.ID, false), Client: client, ParentID: reveal(t.ParentID, false), Depth: min(depth, maxDepthShown),
		AuditTag: reveal(t.AuditTag, true), Scopes: notRecorded, Constraints: notRecorded,
		Issued: consent.ShowDate(t.IssuedAt), Expires: consent.ShowWhen(t.ExpiresAt, now)}
	if t.MaxUses > 0 {
		v.UsesLeft = strconv.FormatInt(max(0, t.MaxUses-t.Uses), 10) + " of " + strconv.FormatInt(t.MaxUses, 10)
	} else {
		v.UsesLeft = "no limit"
	}
	var b tokenBody
	if len(t.Body) > 0 && json.Unmarshal(t.Body, &b) == nil {
		v.Scopes = revealList(b.Capabilities)
		v.Constraints = constraintsText(b)
		if v.AuditTag == "" {
			v.AuditTag = reveal(b.AuditTag, true)
		}
	}
	return v
}

// constraintsText says a token's constraints in words, as a token request says them
// (consent.UsesWords, consent.ConstraintWords), "none" when there are none.
func constraintsText(b tokenBody) string {
	c := b.Constraints
	var parts []string
	if c.MaxUses > 0 {
		parts = append(parts, consent.UsesWords(c.MaxUses))
	}
	for _, w := range consent.ConstraintWords(consent.TokenTerms{AllowedPaths: c.AllowedPaths, AllowedCommands: c.AllowedCommands,
		DeniedCommands: c.DeniedCommands, DeniedPatterns: c.DeniedPatterns, Condition: c.Condition}) {
		parts = append(parts, reveal(w, false))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// revealList joins ss with ", ", each revealed.
func revealList(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = reveal(s, false)
	}
	return strings.Join(out, ", ")
}

// showTime is t in UTC, to the second.
func showTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// tokens is the page of live tokens.
func (s *Server) tokens(w http.ResponseWriter, r *http.Request, csrf string) {
	if s.o.Store == nil || s.o.Broker == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway serves no token list.")
		return
	}
	now := s.o.Now()
	views, err := s.liveTokens(r, now)
	if err != nil {
		s.o.Logger.Warn("web: listing tokens failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not list the tokens. Its log says why.")
		return
	}
	s.render(w, http.StatusOK, "tokens.html", page{Title: "Live tokens", Nav: "tokens", CSRF: csrf, Tokens: views, Now: now})
}

// revoke revokes a token and every token derived from it, recorded in the audit log as the
// person's, then shows the tokens page. A revoke only takes away: it is made even when its
// record cannot be written.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request, _ string) {
	if s.o.Broker == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway serves no token list.")
		return
	}
	id, ctx := r.PathValue("id"), r.Context()
	if len(id) > maxIDBytes {
		s.message(w, http.StatusNotFound, "No such token", "There is no token with this id.")
		return
	}
	// The same change, recorded the same way, as POST /v1/tokens/revoke and capgate token
	// revoke make it (operator.Service.Revoke).
	err := s.ops.Revoke(ctx, onThePage, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.message(w, http.StatusNotFound, "No such token", "There is no token with this id.")
	case err != nil:
		s.o.Logger.Warn("web: revoking a token failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not revoke the token. Its log says why.")
	default:
		http.Redirect(w, r, "/ui/tokens", http.StatusSeeOther)
	}
}
