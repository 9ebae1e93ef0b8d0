package web

import (
	"crypto/ed25519"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/plan"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/internal/trigger"
)

//go:embed assets
var assets embed.FS

// templates are the pages, parsed once.
var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"card": func(csrf string, standalone bool, r requestView) cardData {
		return cardData{CSRF: csrf, Standalone: standalone, R: r}
	},
	"list": func(s ...string) []string { return s },
}).ParseFS(assets, "assets/*.html"))

// cardData is what the "card" template shows: one request and the session's CSRF token for
// its forms.
type cardData struct {
	CSRF       string
	Standalone bool // on the request's own page, not in the list
	R          requestView
}

// Options configure a Server. Consent is required; the rest may be nil.
//
// A page whose parts are nil answers 404 "not available", and a change that would widen what
// runs (accepting a tool, approving a widening) is refused without Audit.
type Options struct {
	// Consent is where the requests are read and answered.
	Consent *consent.Service
	// Store is where the tokens page, the clients page and the activity page read tokens,
	// clients and the audit log, and where the clients page disables, enables and removes
	// clients; nil: those pages answer 404.
	Store store.Store
	// Broker revokes tokens and sets mandates; nil: the tokens and mandates pages answer 404.
	Broker *broker.Broker
	// Registry lists the enabled capabilities whose permissions the mandates page shows;
	// nil: the mandates page answers 404.
	Registry *registry.Registry
	// PublicKey is the gateway's public key, which verifies the audit log's checkpoints;
	// nil: the activity page says the log was not checked.
	PublicKey ed25519.PublicKey
	// AuditHeadFile is the head file kept beside the store (DATA/audit.head), which the
	// activity page's verdict holds the log against with the store's tokens and clients, as
	// `capgate audit verify` does (which also reads the mirror and asks the witness); "":
	// the store's log alone.
	AuditHeadFile string
	// Audit records the changes the person makes here that no other part records: revoking
	// a token, disabling, enabling or removing a client, accepting a tool server's changed
	// or new tool or keeping it stopped, approving a plugin's widening. Each is recorded before it is made, and an accept or
	// an approval whose record cannot be written is not made; nil: they are not offered.
	// (Answers to consent requests are kept by the consent service; undo records itself in
	// the broker.) A revoke, which only takes away, is made even when its record fails.
	Audit Recorder
	// Planner routes a definition's calls among its providers and keeps the person's
	// preference between them, which the preferences page shows and changes (recorded in
	// Operator's audit log); nil, or a Planner that keeps no preferences: the page answers
	// 404.
	Planner *plan.Planner
	// Triggers lists and changes the triggers on the triggers page; nil: it answers 404.
	Triggers *trigger.Engine
	// Operator makes the person's changes (answers, revocations, mandates, accepted tools,
	// approved plugins, client changes), as every front does; nil: one is made of the
	// fields here (Audit, Consent, Broker, Store, ToolServers, Plugins).
	Operator *operator.Service
	// ToolServers is where the apps page reads the tool servers, their pins and their pin
	// requests, and accepts a tool, as `capgate toolserver accept` does (it starts or
	// reaches the server to list its tools); nil: the page lists no tool server.
	ToolServers *toolserver.Env
	// Plugins is the plugin host whose lockfile the apps page lists, with the widenings
	// pending approval; nil: the page lists no plugin.
	Plugins *plugin.Host
	// AllowedHosts are the host names or addresses (no port) the page answers under besides
	// loopback ones, for a gateway reached by another name. A request naming any other Host
	// is refused with 421, so that a web site whose name is rebound to the gateway's address
	// cannot reach the page (DNS rebinding). An entry that is not a host name or address is
	// ignored, and logged.
	AllowedHosts []string
	Logger       *slog.Logger     // nil: slog.Default()
	Now          func() time.Time // nil: time.Now; decides login and session expiry and time left
}

// Server is the approval page. It is safe for concurrent use; its sessions live in memory,
// so a new Server (a restart) signs every browser out.
type Server struct {
	o        Options
	sessions *sessions
	origin   *http.CrossOriginProtection
	hosts    hosts
	verdict  verdictCache      // audit.Verify's last report, by the log's head
	ops      *operator.Service // the person's changes, recorded as every front records them
	// toolsChanged receives after the person accepted a tool (ToolsChanged).
	toolsChanged chan struct{}
}

// New returns the approval page on opts. It panics without opts.Consent.
func New(opts Options) *Server {
	if opts.Consent == nil {
		panic("web: New without a consent service")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{o: opts, sessions: newSessions(opts.Now), origin: http.NewCrossOriginProtection(), toolsChanged: make(chan struct{}, 1)}
	s.ops = opts.Operator
	if s.ops == nil {
		s.ops = &operator.Service{Consent: opts.Consent, ToolServers: opts.ToolServers, Plugins: opts.Plugins, Now: opts.Now,
			Warn: func(action string, err error) {
				opts.Logger.Warn("web: the person's change", "action", action, "err", err)
			}}
		if opts.Audit != nil {
			s.ops.Audit = opts.Audit
		}
		if opts.Broker != nil {
			s.ops.Tokens, s.ops.Mandates = opts.Broker, opts.Broker
		}
		if opts.Store != nil {
			s.ops.Clients = opts.Store
		}
	}
	var bad []int
	s.hosts, bad = newHosts(opts.AllowedHosts)
	for _, i := range bad {
		opts.Logger.Warn("web: an allowed host is not a host name or address; it is ignored", "field", fmt.Sprintf("AllowedHosts[%d]", i))
	}
	return s
}

// ToolsChanged returns a channel that receives after the person accepted a tool on the apps
// page: the tool's pin is in the store, and a gateway that reads the channel has its running
// tool-server connections read it now rather than at their next listing. Accepts coalesce:
// one value waits at most, standing for every accept since the last receive. Nobody need
// read it.
func (s *Server) ToolsChanged() <-chan struct{} { return s.toolsChanged }

// toolsAccepted tells ToolsChanged's reader, without waiting for it.
func (s *Server) toolsAccepted() {
	select {
	case s.toolsChanged <- struct{}{}:
	default: // one is waiting already
	}
}

// LoginLink returns the path of a new one-time login link, "/ui/login?t=SECRET": it signs
// one browser in, once, within LoginTTL. Whoever holds it can answer the person's requests:
// print it only where the person alone reads it.
func (s *Server) LoginLink() string { return "/ui/login?t=" + s.sessions.newLink() }

// Handler returns the pages, to be mounted at /ui/ of the gateway's HTTP server.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/login", s.login)
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.HandlerFunc(s.static)))
	mux.HandleFunc("GET /ui/{$}", s.authed(s.list))
	mux.HandleFunc("GET /ui/requests", s.authed(s.list))
	mux.HandleFunc("GET /ui/requests.json", s.authed(s.listJSON))
	mux.HandleFunc("GET /ui/requests/{id}", s.authed(s.one))
	mux.HandleFunc("POST /ui/requests/{id}/{verb}", s.authed(s.answer))
	mux.HandleFunc("GET /ui/tokens", s.authed(s.tokens))
	mux.HandleFunc("POST /ui/tokens/{id}/revoke", s.authed(s.revoke))
	mux.HandleFunc("GET /ui/activity", s.authed(s.activity))
	mux.HandleFunc("POST /ui/activity/undo", s.authed(s.undo))
	mux.HandleFunc("GET /ui/apps", s.authed(s.apps))
	mux.HandleFunc("POST /ui/apps/toolservers/{name}/{verb}", s.authed(s.toolAnswer))
	mux.HandleFunc("POST /ui/apps/plugins/{app}/approve", s.authed(s.approvePlugin))
	mux.HandleFunc("GET /ui/clients", s.authed(s.clients))
	mux.HandleFunc("POST /ui/clients/{id}/{verb}", s.authed(s.changeClient))
	mux.HandleFunc("GET /ui/profile", s.authed(s.profilePage))
	mux.HandleFunc("POST /ui/profile", s.authed(s.saveProfile))
	mux.HandleFunc("POST /ui/profile/grants", s.authed(s.grantProfile))
	mux.HandleFunc("POST /ui/requests/{id}/form", s.authed(s.answerForm))
	mux.HandleFunc("GET /ui/mandates", s.authed(s.mandates))
	mux.HandleFunc("POST /ui/mandates", s.authed(s.setMandate))
	mux.HandleFunc("GET /ui/triggers", s.authed(s.triggers))
	mux.HandleFunc("POST /ui/triggers/{id}/{verb}", s.authed(s.changeTrigger))
	mux.HandleFunc("POST /ui/triggers", s.authed(s.createTrigger))
	mux.HandleFunc("GET /ui/preferences", s.authed(s.preferences))
	mux.HandleFunc("POST /ui/preferences/{definition}", s.authed(s.setPreference))
	mux.HandleFunc("/ui/", s.authed(func(w http.ResponseWriter, r *http.Request, _ string) {
		s.message(w, http.StatusNotFound, "Not found", "There is no such page.")
	}))
	return secureHeaders(s.checkHost(mux))
}

// csp is the Content-Security-Policy of every answer: the page's own script and style only,
// no inline code, no framing, forms posting only back to the page.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secureHeaders sets the headers every answer carries.
func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}

// cookieName is the session cookie. It cannot take the __Host- prefix, which needs Secure,
// and the page is served over plain HTTP on loopback.
const cookieName = "capgate_session"

// login spends a one-time link and opens a session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	t := r.URL.Query().Get("t")
	id, ok := s.sessions.login(t)
	if !ok && spendStoredLink(r.Context(), s.o.Store, t, s.o.Now()) {
		id, ok = s.sessions.openSession(), true
	}
	if !ok {
		s.message(w, http.StatusUnauthorized, "This login link does not work",
			"A login link works once, for "+LoginTTL.String()+". "+signInHelp)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: "/ui/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(SessionIdle.Seconds())})
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// signInHelp tells the person how to sign in.
const signInHelp = "Open the link that capgate serve printed (\"approve requests at http://…/ui/login?t=…\") in this browser. " +
	"To get a new link, run capgate ui link on this machine."

// authed wraps a page that needs a session: without one it answers 401 with a plain page;
// a POST must also carry the session's CSRF token and come from this page's own origin.
func (s *Server) authed(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var id string
		if c, err := r.Cookie(cookieName); err == nil {
			id = c.Value
		}
		csrf, ok := s.sessions.get(id)
		if !ok {
			s.message(w, http.StatusUnauthorized, "Sign in to the approval page", signInHelp)
			return
		}
		if r.Method == http.MethodPost {
			if err := s.origin.Check(r); err != nil {
				s.message(w, http.StatusForbidden, "Refused", "This request came from another site.")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
			if err := r.ParseForm(); err != nil || !sameToken(r.PostForm.Get("csrf"), csrf) {
				s.message(w, http.StatusForbidden, "Refused", "This form is out of date or did not come from this page. Reload the page and try again.")
				return
			}
		}
		h(w, r, csrf)
	}
}

// static serves the embedded stylesheet and script.
func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	var ctype string
	switch r.URL.Path {
	case "app.css":
		ctype = "text/css; charset=utf-8"
	case "app.js":
		ctype = "text/javascript; charset=utf-8"
	default:
		http.NotFound(w, r)
		return
	}
	data, err := assets.ReadFile("assets/" + r.URL.Path)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(data)
}

// page is what a full page template gets.
type page struct {
	Title       string
	Nav         string // the nav bar's current page: requests, tokens, clients, mandates, profile, preferences, triggers, apps, activity
	CSRF        string
	Requests    []requestView    // the list page
	One         *requestView     // a request's own page
	Tokens      []tokenView      // the tokens page
	Clients     []clientView     // the clients page
	Activity    *activityView    // the activity page
	Mandates    *mandatesView    // the mandates page
	Profile     *profileView     // the profile page
	Preferences *preferencesView // the preferences page
	Triggers    *triggersView    // the triggers page
	Apps        *appsView        // the apps page
	Text        string           // a message page
	Now         time.Time
}

// render writes the template name with data, or a plain 500 when it fails.
func (s *Server) render(w http.ResponseWriter, status int, name string, data page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := templates.ExecuteTemplate(w, name, data); err != nil {
		s.o.Logger.Warn("web: rendering a page failed", "page", name, "err", err)
	}
}

// message answers with a plain page: a title and a sentence.
func (s *Server) message(w http.ResponseWriter, status int, title, text string) {
	s.render(w, status, "message.html", page{Title: title, Text: text, Now: s.o.Now()})
}

// errStatus is the page for an error of the consent service.
func (s *Server) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, consent.ErrInvalidID), errors.Is(err, store.ErrNotFound):
		s.message(w, http.StatusNotFound, "No such request", "There is no request with this id.")
	case errors.Is(err, consent.ErrNotPending):
		s.message(w, http.StatusConflict, "Already answered", "This request is no longer waiting for an answer: it was answered, cancelled or it expired.")
	case errors.Is(err, consent.ErrCannotRemember):
		s.message(w, http.StatusBadRequest, "Nothing to remember", "This request carries no wording to agree to; approve it without remembering.")
	default:
		s.o.Logger.Warn("web: consent service failed", "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not read or answer the request. Its log says why.")
	}
}
