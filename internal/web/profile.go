package web

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/profile"
	"github.com/capgate/capgate/internal/toolserver"
)

// onProfilePage is who makes the profile page's changes, as the audit log names them.
var onProfilePage = operator.Actor{ID: person, Who: "the person", Where: "on the profile page"}

// profileView is the profile page: the person's low-sensitivity profile and, for each tool
// server, whether it may have it in its forms.
type profileView struct {
	profile.Profile
	Servers []grantView
	Problem string // what could not be read
}

// grantView is one tool server and whether the person lets it have the profile.
type grantView struct {
	Name    string
	Granted bool
}

// profileAvailable answers 404 and reports false when the page lacks what it needs.
func (s *Server) profileAvailable(w http.ResponseWriter) bool {
	if s.o.Store == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway serves no profile page.")
		return false
	}
	return true
}

// profilePage shows the person's profile and the tool servers' grants.
func (s *Server) profilePage(w http.ResponseWriter, r *http.Request, csrf string) {
	if !s.profileAvailable(w) {
		return
	}
	ctx := r.Context()
	v := &profileView{}
	p, err := profile.Load(ctx, s.o.Store)
	if err != nil {
		s.o.Logger.Warn("web: the profile cannot be read", "err", err)
		v.Problem = "capgate could not read the saved profile; saving it again replaces it."
	}
	v.Profile = profile.Profile{DisplayName: reveal(p.DisplayName, false), Language: reveal(p.Language, false), TimeZone: reveal(p.TimeZone, false)}
	if cfgs, err := toolserver.ListConfigs(ctx, s.o.Store); err == nil {
		for _, c := range cfgs {
			v.Servers = append(v.Servers, grantView{Name: reveal(c.Name, false), Granted: profile.Granted(ctx, s.o.Store, c.Name)})
		}
	} else {
		s.o.Logger.Warn("web: listing the tool servers failed", "err", err)
	}
	slices.SortFunc(v.Servers, func(a, b grantView) int { return strings.Compare(a.Name, b.Name) })
	s.render(w, http.StatusOK, "profile.html", page{Title: "Your profile", Nav: "profile", CSRF: csrf, Profile: v, Now: s.o.Now()})
}

// saveProfile saves the profile the page posted (display_name, language, time_zone).
func (s *Server) saveProfile(w http.ResponseWriter, r *http.Request, _ string) {
	if !s.profileAvailable(w) {
		return
	}
	p := profile.Profile{DisplayName: r.PostForm.Get("display_name"), Language: r.PostForm.Get("language"), TimeZone: r.PostForm.Get("time_zone")}
	switch err := s.ops.SetProfile(r.Context(), onProfilePage, p); {
	case errors.Is(err, profile.ErrInvalid):
		s.message(w, http.StatusBadRequest, "Not saved", err.Error())
	case errors.Is(err, operator.ErrNotRecorded):
		s.message(w, http.StatusInternalServerError, "Not saved", "capgate could not write the change to its audit log, so it did not make it. Its log says why.")
	case err != nil:
		s.fail(w, err)
	default:
		http.Redirect(w, r, "/ui/profile", http.StatusSeeOther)
	}
}

// grantProfile gives or takes back a tool server's grant of the profile (server, and grant
// "true" or "false").
func (s *Server) grantProfile(w http.ResponseWriter, r *http.Request, _ string) {
	if !s.profileAvailable(w) {
		return
	}
	name, grant := r.PostForm.Get("server"), r.PostForm.Get("grant")
	if grant != "true" && grant != "false" {
		s.message(w, http.StatusBadRequest, "Not a choice", "The field grant must be true or false.")
		return
	}
	if _, err := toolserver.LoadConfig(r.Context(), s.o.Store, name); err != nil {
		s.message(w, http.StatusBadRequest, "No such tool server", "The field server must name a tool server capgate has.")
		return
	}
	switch err := s.ops.SetProfileGrant(r.Context(), onProfilePage, name, grant == "true"); {
	case errors.Is(err, operator.ErrNotRecorded):
		s.message(w, http.StatusInternalServerError, "Not changed", "capgate could not write the change to its audit log, so it did not make it. Its log says why.")
	case err != nil:
		s.fail(w, err)
	default:
		http.Redirect(w, r, "/ui/profile", http.StatusSeeOther)
	}
}
