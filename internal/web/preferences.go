package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/plan"
	"github.com/capgate/capgate/manifest"
)

// preferenceView is one definition with two or more providers, as the preferences page
// shows it: its providers in the order they would be tried, and the person's preference.
// The definition's text is signed by a key the host trusts; the provider and capability ids
// follow their grammars. All are rendered as text, revealed.
type preferenceView struct {
	Ref         string // name@major.minor: where the form posts
	Key         string // name@major: what the preference is kept under, and the card's id
	Description string
	Set         string         // the identity of the providers shown, posted back with a choice
	Order       []providerView // the route: those that would be tried, best first, then the rest
	Providers   []string       // the distinct providers, the form's choices
	Preferred   string         // the kept preference's provider while it applies, else ""
	Kept        bool           // a preference is kept, applying or not
	Stale       bool           // the kept preference was made among other providers: ignored
	Unreadable  bool           // the kept preference cannot be read: ignored
	Paths       bool           // the providers are on more than one path
}

// providerView is one provider's capability in a definition's route.
type providerView struct {
	Place      int // 1 for the one chosen, 0 for one not tried now
	Provider   string
	Capability string
	Path       string
	Why        string // why it is not tried now
	Preferred  bool
}

// preferencesView is the preferences page.
type preferencesView struct {
	Defs []preferenceView
}

// onPreferencePage is the person, as the audit log names them for a change made here.
var onPreferencePage = operator.Actor{ID: person, Who: "the person", Where: "on the preferences page"}

// thePersonsView is the caller whose listing the page shows the providers' state by: the
// widest trust a client can have, since the person chooses among every provider.
var thePersonsView = broker.Caller{Name: "the person", Trust: manifest.AuthPrivileged}

// preferencesAvailable answers 404 and reports false when the page lacks what it needs.
func (s *Server) preferencesAvailable(w http.ResponseWriter) bool {
	if s.o.Planner == nil || s.o.Planner.Preferences == nil || s.o.Broker == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway serves no preferences page.")
		return false
	}
	return true
}

// preferencesPage lists every loaded definition (the highest minor of each major) that has
// two or more providers on this host.
func (s *Server) preferencesPage(ctx context.Context) (*preferencesView, error) {
	listed := s.o.Broker.ListAll(thePersonsView)
	v := &preferencesView{}
	seen := map[string]bool{}
	for _, def := range s.o.Planner.Definitions.All() {
		key := plan.PreferenceKey(def)
		if seen[key] {
			continue
		}
		seen[key] = true
		ch, err := s.o.Planner.RouteChoices(ctx, def.Ref(), listed)
		unreadable := errors.Is(err, plan.ErrStoredPreference)
		if err != nil && !unreadable {
			return nil, err
		}
		if unreadable {
			s.o.Logger.Warn("web: a kept preference is not one; it is ignored", "definition", key, "err", err)
		}
		pv := preferenceView{Ref: ch.Definition.Ref(), Key: ch.Key, Description: reveal(ch.Definition.Description["en"], false),
			Set: ch.Set, Kept: ch.Preference != nil, Stale: ch.Route.StalePreference, Unreadable: unreadable}
		for _, c := range ch.Candidates {
			if !slices.Contains(pv.Providers, c.Provider) {
				pv.Providers = append(pv.Providers, c.Provider)
			}
			if c.Path != ch.Candidates[0].Path {
				pv.Paths = true
			}
		}
		if len(pv.Providers) < 2 {
			continue
		}
		if ch.Route.Preferred {
			pv.Preferred = ch.Preference.Provider
		}
		for i, c := range ch.Route.Order {
			pv.Order = append(pv.Order, providerView{Place: i + 1, Provider: c.Provider, Capability: c.Capability, Path: string(c.Path),
				Preferred: c.Provider == pv.Preferred})
		}
		for _, c := range ch.Route.Left {
			pv.Order = append(pv.Order, providerView{Provider: c.Provider, Capability: c.Capability, Path: string(c.Path),
				Why: reveal(c.Why, false), Preferred: c.Provider == pv.Preferred})
		}
		if len(v.Defs) == MaxListed {
			break
		}
		v.Defs = append(v.Defs, pv)
	}
	return v, nil
}

// preferences is the page of the person's preferences between the providers of one
// definition.
func (s *Server) preferences(w http.ResponseWriter, r *http.Request, csrf string) {
	if !s.preferencesAvailable(w) {
		return
	}
	v, err := s.preferencesPage(r.Context())
	if err != nil {
		s.o.Logger.Warn("web: listing the providers of the definitions failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not list the providers. Its log says why.")
		return
	}
	s.render(w, http.StatusOK, "preferences.html", page{Title: "Preferences", Nav: "preferences", CSRF: csrf, Preferences: v, Now: s.o.Now()})
}

// setPattern is the form of a set of providers as the page shows it (definition.CandidateSet).
var setPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// setPreference keeps the person's preferred provider of one definition, or clears it
// (clear=yes). A choice made among other providers than the definition has now (the set the
// page showed is not theirs) is refused with 409: the person chose without seeing the one
// added, or chose one since removed.
func (s *Server) setPreference(w http.ResponseWriter, r *http.Request, _ string) {
	if !s.preferencesAvailable(w) {
		return
	}
	ref := r.PathValue("definition")
	if _, err := manifest.ParseDefinitionRef(ref); err != nil || len(ref) > maxIDBytes {
		s.message(w, http.StatusNotFound, "No such definition", "The path must name a definition this host has loaded, as name@major.minor.")
		return
	}
	ctx := r.Context()
	if r.PostForm.Get("clear") == "yes" {
		rec := audit.Record{Action: operator.ActionPreferenceClear, Result: "preference removal requested",
			Explanation: fmt.Sprintf("%s cleared the preferred provider of the definition %s %s: its providers go by id within each path again",
				onPreferencePage.Who, ref, onPreferencePage.Where)}
		s.changePreference(w, r, rec, func() error { return s.o.Planner.DeletePreference(ctx, ref) })
		return
	}
	pref := definition.Preference{Provider: r.PostForm.Get("provider"), Set: r.PostForm.Get("set")}
	if _, err := manifest.ParseAppID(pref.Provider); err != nil || len(pref.Provider) > maxIDBytes {
		s.message(w, http.StatusBadRequest, "Not a provider", "The field provider must name one of the definition's providers.")
		return
	}
	if !setPattern.MatchString(pref.Set) {
		s.message(w, http.StatusBadRequest, "Not a set of providers", "The field set must be the set of providers the page showed, as sha256: and 64 hex digits.")
		return
	}
	rec := audit.Record{Action: operator.ActionPreferenceSet, App: pref.Provider, Result: "preference requested",
		Explanation: fmt.Sprintf("%s preferred the provider %s among the providers of the definition %s (set %s) %s: it comes first on its path while they stay the same",
			onPreferencePage.Who, pref.Provider, ref, pref.Set, onPreferencePage.Where)}
	s.changePreference(w, r, rec, func() error { return s.o.Planner.SavePreference(ctx, ref, pref) })
}

// changePreference makes change, recorded as rec says (operator.Change: a decision before, an
// outcome after), and answers. A preference decides which provider later calls by definition
// go to, and so whom the person's data goes to: it is not changed unrecorded.
func (s *Server) changePreference(w http.ResponseWriter, r *http.Request, rec audit.Record, change func() error) {
	err := operator.Change(r.Context(), s.ops.Audit, onPreferencePage.ID, rec, false, func(*audit.Record) error { return change() },
		preferenceCode, func(err error) { s.o.Logger.Warn("web: the person's change", "action", rec.Action, "err", err) })
	switch {
	case err == nil:
		http.Redirect(w, r, "/ui/preferences", http.StatusSeeOther)
	case errors.Is(err, plan.ErrProvidersChanged):
		s.message(w, http.StatusConflict, "The providers changed",
			"The providers of this definition changed since the page showed them: one was added or removed. Reload the page and choose again.")
	case errors.Is(err, plan.ErrNotCandidate):
		s.message(w, http.StatusBadRequest, "Not a provider", "The field provider must name one of the definition's providers.")
	case errors.Is(err, plan.ErrDefinition):
		s.message(w, http.StatusNotFound, "No such definition", "The path must name a definition this host has loaded, as name@major.minor.")
	case errors.Is(err, operator.ErrNotRecorded):
		s.o.Logger.Warn("web: a preference change could not be recorded; not made", "err", err)
		s.message(w, http.StatusInternalServerError, "Not changed", "capgate could not write the change to its audit log, so it did not make it. Its log says why.")
	default:
		s.o.Logger.Warn("web: changing a preference failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not change the preference. Its log says why.")
	}
}

// preferenceCode is the audit code of a preference change that failed: a refusal of the
// planner's (the providers changed, not a provider, no such definition) is INVALID_REQUEST,
// as operator.Code names a change that cannot be made as asked.
func preferenceCode(err error) string {
	if errors.Is(err, plan.ErrProvidersChanged) || errors.Is(err, plan.ErrNotCandidate) || errors.Is(err, plan.ErrDefinition) {
		return operator.CodeInvalidRequest
	}
	return operator.Code(err, operator.CodeInvalidRequest)
}
