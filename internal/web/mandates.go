package web

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// mandateView is one permission as the mandates page shows it: the enabled capabilities
// that need it, their ceiling, and the person's mandate. The permission and the capability
// ids and names come from signed manifests, but an app's author wrote them: they are
// rendered as text, revealed.
type mandateView struct {
	Permission string
	Caps       []capView
	Ceiling    string       // the most restrictive autonomy_ceiling of Caps
	Current    string       // the exact mandate's autonomy, "" for none
	Via        string       // a pattern mandate that covers the permission when there is no exact one
	ViaValue   string       // its autonomy
	Agreed     string       // an act_if_agreed mandate's record: wording, when, where from
	Wording    string       // what the person agrees to by choosing act_if_agreed here
	Choices    []choiceView // every autonomy, and "no mandate"
}

// capView is one capability that needs a permission.
type capView struct{ ID, Name string }

// choiceView is one option of a permission's form.
type choiceView struct {
	Value, Label string
	Allowed      bool // not above the ceiling
	Selected     bool
}

// patternView is a stored mandate for a grant pattern ("fs.*") or a permission no enabled
// capability declares.
type patternView struct{ Permission, Autonomy, Updated string }

// mandatesView is the mandates page.
type mandatesView struct {
	Perms    []mandateView
	Patterns []patternView
}

// noMandate is the form value that deletes a permission's mandate.
const noMandate = "none"

// autonomyWords says each autonomy in words.
var autonomyWords = map[manifest.Autonomy]string{
	manifest.AutonomyAct:         "act: do it without asking",
	manifest.AutonomyActIfAgreed: "act if agreed: do it, as I agree here",
	manifest.AutonomyAsk:         "ask: ask me before doing it",
	manifest.AutonomyHandoff:     "handoff: prepare it and hand it to me",
}

// rank is a's place from most to least autonomous: empty is act, an unknown value handoff,
// as the policy reads them.
func rank(a manifest.Autonomy) int {
	if a == "" {
		return 0
	}
	if i := slices.Index(manifest.Autonomies, a); i >= 0 {
		return i
	}
	return len(manifest.Autonomies) - 1
}

// agreeWording is the wording the person agrees to by choosing act_if_agreed for perm on
// this page; it is shown beside the choice and recorded with the mandate.
func agreeWording(perm string) string {
	return "capgate may use the permission " + perm + " without asking me first, within each capability's ceiling."
}

// permissions returns the permissions the enabled apps' capabilities declare, each with
// its capabilities and the most restrictive ceiling among them.
func (s *Server) permissions() map[string]*mandateView {
	out := map[string]*mandateView{}
	ceil := map[string]manifest.Autonomy{}
	for _, app := range s.o.Registry.List() {
		if !app.Enabled || app.Doc == nil || app.Doc.Manifest() == nil {
			continue
		}
		for _, c := range app.Doc.Manifest().Capabilities {
			perm := c.Permission
			if perm == "" {
				perm = c.ID
			}
			v, ok := out[perm]
			if !ok {
				v = &mandateView{Permission: perm}
				out[perm], ceil[perm] = v, manifest.AutonomyAct
			}
			v.Caps = append(v.Caps, capView{ID: c.ID, Name: c.Name})
			if rank(c.AutonomyCeiling) > rank(ceil[perm]) {
				ceil[perm] = manifest.Autonomies[rank(c.AutonomyCeiling)]
			}
			v.Ceiling = string(ceil[perm])
		}
	}
	return out
}

// mandatesPage builds the page from the registry and the stored mandates.
func (s *Server) mandatesPage(r *http.Request) (*mandatesView, error) {
	ms, err := s.o.Store.ListMandates(r.Context())
	if err != nil {
		return nil, err
	}
	perms := s.permissions()
	names := make([]string, 0, len(perms))
	for p := range perms {
		names = append(names, p)
	}
	sort.Strings(names)
	pv := &mandatesView{}
	for _, m := range ms {
		if _, ok := perms[m.Permission]; !ok {
			pv.Patterns = append(pv.Patterns, patternView{Permission: reveal(m.Permission, false),
				Autonomy: reveal(m.Autonomy, false), Updated: showTime(m.Updated)})
		}
	}
	for _, p := range names {
		v := *perms[p]
		var exact, via *store.Mandate
		for i := range ms {
			m := &ms[i]
			switch {
			case m.Permission == p:
				exact = m
			case token.Covers([]string{m.Permission}, p) && (via == nil || len(m.Permission) > len(via.Permission)):
				via = m
			}
		}
		if exact != nil {
			v.Current = exact.Autonomy
			if exact.Autonomy == string(manifest.AutonomyActIfAgreed) && exact.Wording != "" {
				v.Agreed = "agreed to “" + reveal(exact.Wording, true) + "” on " + showTime(exact.AgreedAt) + " (" + reveal(exact.AgreedID, false) + ")"
			}
		} else if via != nil {
			v.Via, v.ViaValue = reveal(via.Permission, false), reveal(via.Autonomy, false)
		}
		v.Wording = reveal(agreeWording(p), false)
		c := rank(manifest.Autonomy(v.Ceiling))
		for _, a := range manifest.Autonomies {
			v.Choices = append(v.Choices, choiceView{Value: string(a), Label: autonomyWords[a], Allowed: rank(a) >= c,
				Selected: v.Current == string(a)})
		}
		v.Choices = append(v.Choices, choiceView{Value: noMandate, Label: "no mandate: the capability's own rules apply",
			Allowed: true, Selected: exact == nil})
		v.Permission = reveal(p, false)
		for i, cv := range v.Caps {
			v.Caps[i] = capView{ID: reveal(cv.ID, false), Name: reveal(cv.Name, false)}
		}
		if len(pv.Perms) == MaxListed {
			break
		}
		pv.Perms = append(pv.Perms, v)
	}
	return pv, nil
}

// mandatesAvailable answers 404 and reports false when the page lacks what it needs.
func (s *Server) mandatesAvailable(w http.ResponseWriter) bool {
	if s.o.Store == nil || s.o.Broker == nil || s.o.Registry == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway serves no mandates page.")
		return false
	}
	return true
}

// mandates is the page of the person's autonomy per permission.
func (s *Server) mandates(w http.ResponseWriter, r *http.Request, csrf string) {
	if !s.mandatesAvailable(w) {
		return
	}
	v, err := s.mandatesPage(r)
	if err != nil {
		s.o.Logger.Warn("web: listing mandates failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not list the mandates. Its log says why.")
		return
	}
	s.render(w, http.StatusOK, "mandates.html", page{Title: "Mandates", Nav: "mandates", CSRF: csrf, Mandates: v, Now: s.o.Now()})
}

// setMandate sets or deletes the mandate of one permission, through the broker so that the
// next decision sees it at once. A permission no enabled capability declares can only lose
// its mandate; a choice above the ceiling of the permission's capabilities is refused.
func (s *Server) setMandate(w http.ResponseWriter, r *http.Request, _ string) {
	if !s.mandatesAvailable(w) {
		return
	}
	perm, choice := r.PostForm.Get("permission"), r.PostForm.Get("autonomy")
	if choice == noMandate {
		if len(perm) > audit.MaxFieldBytes {
			s.message(w, http.StatusBadRequest, "No such permission", "The field permission is longer than any permission.")
			return
		}
		switch err := s.ops.DeleteMandate(r.Context(), onMandatePage, perm); {
		case err == nil:
			http.Redirect(w, r, "/ui/mandates", http.StatusSeeOther)
		default:
			s.mandateFailed(w, err)
		}
		return
	}
	a := manifest.Autonomy(choice)
	if !a.Valid() {
		s.message(w, http.StatusBadRequest, "Not a choice", "The field autonomy must be one of act, act_if_agreed, ask, handoff or none.")
		return
	}
	v, ok := s.permissions()[perm]
	if !ok {
		s.message(w, http.StatusBadRequest, "No such permission", "The field permission must name a permission an enabled capability declares.")
		return
	}
	if rank(a) < rank(manifest.Autonomy(v.Ceiling)) {
		s.message(w, http.StatusBadRequest, "Above the ceiling",
			"The field autonomy is above the capability's ceiling: this permission allows at most "+v.Ceiling+".")
		return
	}
	now := s.o.Now()
	m := store.Mandate{Permission: perm, Autonomy: string(a), Updated: now}
	if a == manifest.AutonomyActIfAgreed {
		m.Wording, m.AgreedAt, m.AgreedID = agreeWording(perm), now, "ui:"+sessionTag(r)
	}
	if err := s.ops.SetMandate(r.Context(), onMandatePage, m); err != nil {
		s.mandateFailed(w, err)
		return
	}
	http.Redirect(w, r, "/ui/mandates", http.StatusSeeOther)
}

// mandateFailed answers a mandate change that was not made, or made and failed.
func (s *Server) mandateFailed(w http.ResponseWriter, err error) {
	if errors.Is(err, operator.ErrNotRecorded) {
		s.o.Logger.Warn("web: a mandate change could not be recorded; not made", "err", err)
		s.message(w, http.StatusInternalServerError, "Not changed", "capgate could not write the change to its audit log, so it did not make it. Its log says why.")
		return
	}
	s.o.Logger.Warn("web: changing a mandate failed", "err", err)
	s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not change the mandate. Its log says why.")
}

// sessionTag names the session a change came from without revealing its id: the first
// hex digits of the id's SHA-256.
func sessionTag(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return "session"
	}
	sum := sha256.Sum256([]byte(c.Value))
	return "session-" + strings.ToLower(hex.EncodeToString(sum[:6]))
}
