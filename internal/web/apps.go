package web

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/delta"
	"github.com/capgate/capgate/internal/desktop"
	"github.com/capgate/capgate/internal/lock"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/manifest"
)

// appsView is the apps page: every registered app with its tier and why, the tool servers
// with their pinned tools and the changed or new tools waiting for the person, and the
// plugins under the lockfile with the widenings waiting for approval. Every string an app, a
// tool server or a plugin wrote is rendered as text, revealed.
type appsView struct {
	Apps        []appView
	ToolServers []toolServerView
	// ToolServersOff and PluginsOff say why a section is empty because the gateway gave the
	// page no way to read it.
	ToolServersOff, PluginsOff bool
	Plugins                    []pluginView
	Pending                    []widenView
	PluginsProblem             string // the lockfile could not be read: what to run
	// CanChange is set when the page can record the person's changes (Options.Audit):
	// accept and approve are offered only then.
	CanChange bool
}

// appView is one registered app.
type appView struct {
	ID, Alias, Version string
	Kind               string // "app", "tool server", "plugin"
	Tier               int
	TierWhy            string // capgate's words for why this tier
	Tier2              bool
	Enabled            bool
	Caps               int
	// NotWorking: the app's provider cannot take calls right now (a built-in app whose
	// handler could not start, a tool server that is down): its calls are refused and no
	// agent is shown it.
	NotWorking bool
	// Why says why a provider process is not working (its program or manifest is not the one
	// installed, it keeps exiting, ...), in capgate's words, when it recorded why.
	Why string
	// Failed are the app's capabilities whose last evaluation failed: not working right
	// now, and never offered, until a run passes.
	Failed []failedView
	// Review is the open review of a desktop app whose accessibility tree changed: the
	// consent request that asks the person to accept what it offers now.
	Review string
}

// failedView is a capability whose last evaluation failed, and why in the host's words.
type failedView struct{ ID, Why string }

// toolServerView is one tool server and its tools.
type toolServerView struct {
	Name, AppID string
	Where       string // the command and its arguments, or the URL, as the operator added it
	Reach       string // what a stdio server's sandbox lets it reach
	Revision    string // the MCP revision capgate last spoke to it, in words
	Registered  bool
	Down        bool // registered, and down or reconnecting: its tools are not working
	TierWhy     string
	Tools       []toolView       // pinned
	Waiting     []pinRequestView // changed and new tools waiting for the person
	Problem     string           // what could not be read
}

// toolView is one pinned tool. Tool, Title and Description are the server's words.
type toolView struct {
	Anchor                   string // the element id: tool-NAME-ACTION, capgate's characters only
	Tool, Title, Description string
	Capability, Hash, Pinned string
	Stopped                  bool // its definition no longer matches its pin
	Kept                     bool // stopped, and the person chose to keep it so
}

// pinRequestView is a changed or new tool waiting for the person: the difference the pin
// request shows, and what accepting it takes.
type pinRequestView struct {
	ConsentID  string // the pin request's id: the forms name the request, never the tool
	Tool       string // the server's name for it, revealed
	Kind       string // "changed" or "new"
	Capability string // a changed tool's capability
	Hash       string // the definition the difference leads to: what accepting pins
	State      string // the pin request's: pending, denied (kept stopped), approved, expired
	Pending    bool
	Lines      []diffLine
}

// diffLine is one line of a tool's difference: Sign "-" for the pinned value, "+" for the
// new one, "" for a note.
type diffLine struct {
	Sign string `json:"sign,omitempty"` // "-" pinned, "+" now, "" a note
	Text string `json:"text"`
}

// pluginView is one plugin as the lockfile holds it, installed or pending.
type pluginView struct {
	AppID, Version, Tier string
	Signer, Digest       string
	Installed            string
	ApprovedBy, Source   string
	Caps                 []capView
	// Running says whether its provider works, and Why not; Tests are its capabilities'
	// conformance results (installed plugins only, when recorded).
	Running string
	Why     string
	Tests   []string
}

// widenView is a widening waiting for approval, with the difference capgate computed.
type widenView struct {
	pluginView
	Seen     string // plugin.PendingHash: the form's value
	Since    string
	Verdict  string
	Changes  []changeView
	Reasons  []string
	Approval bool // the verdict allows approving (not a reject)
}

// changeView is one change of a widening.
type changeView struct {
	Path, Change string
	Widening     bool
}

// tier2Why says why every tool server is Tier 2.
const tier2Why = "Tier 2: derived from an MCP server's tool list, which nothing signs; its capabilities never act above read without your consent"

// tierWords says an app's tier and why, in capgate's words.
func tierWords(a *registry.App) string {
	if a.Tier == manifest.Tier1 {
		return "Tier 1: its manifest's signature verified against the trusted key for its app id"
	}
	if _, ok := toolserver.NameOf(a.ID.String()); ok && a.Reason == manifest.ReasonUnsigned {
		return tier2Why
	}
	why := a.Detail
	if why == "" {
		why = string(a.Reason)
	}
	return "Tier 2: " + reveal(why, false) + "; its capabilities never act above read without your consent"
}

// appsPage builds the page.
func (s *Server) appsPage(r *http.Request) *appsView {
	ctx := r.Context()
	v := &appsView{CanChange: s.o.Audit != nil, ToolServersOff: s.o.ToolServers == nil, PluginsOff: s.o.Plugins == nil}
	var lf *lock.File
	if s.o.Plugins != nil {
		f, err := s.o.Plugins.List()
		if err != nil {
			s.o.Logger.Warn("web: reading the lockfile failed", "err", err)
			v.PluginsProblem = "capgate could not read the lockfile; capgate plugin list says why."
		} else {
			lf = f
			s.plugins(ctx, f, v)
		}
	}
	for _, a := range s.o.Registry.List() {
		av := appView{ID: reveal(a.ID.String(), false), Alias: reveal(a.Alias, false), Tier: int(a.Tier), TierWhy: tierWords(a),
			Tier2: a.Tier != manifest.Tier1, Enabled: a.Enabled, Kind: "app", NotWorking: s.notWorking(a.ID)}
		if av.NotWorking && s.o.Store != nil {
			if st, err := providers.LoadStatus(ctx, s.o.Store, a.ID.String()); err == nil && !st.Working {
				av.Why = reveal(st.Why, false)
			}
		}
		if m := a.Doc.Manifest(); m != nil {
			av.Version, av.Caps = reveal(m.Version, false), len(m.Capabilities)
			for _, c := range m.Capabilities {
				if s.o.Broker == nil {
					break
				}
				if why, failed := s.o.Broker.EvaluationFailed(c.ParsedID()); failed {
					av.Failed = append(av.Failed, failedView{ID: reveal(c.ID, false), Why: reveal(why, false)})
				}
			}
		}
		if _, ok := toolserver.NameOf(a.ID.String()); ok {
			av.Kind = "tool server"
		} else if strings.HasPrefix(a.ID.String(), desktop.AppPrefix) {
			av.Kind = "desktop app"
			if s.o.Store != nil {
				if r, err := desktop.LoadReview(ctx, s.o.Store, a.ID.String()); err == nil {
					av.Review = r.ConsentID
					av.Why = "its accessibility tree changed since it was added: review what it offers now"
				}
			}
		} else if lf != nil && locked(lf, a.ID.String()) {
			av.Kind = "plugin"
		}
		v.Apps = append(v.Apps, av)
		if len(v.Apps) == MaxListed {
			break
		}
	}
	slices.SortFunc(v.Apps, func(a, b appView) int { return strings.Compare(a.ID, b.ID) })
	if s.o.ToolServers != nil {
		cfgs, err := toolserver.ListConfigs(ctx, s.o.ToolServers.Store)
		if err != nil {
			s.o.Logger.Warn("web: listing the tool servers failed", "err", err)
			v.ToolServers = append(v.ToolServers, toolServerView{Problem: "capgate could not list the tool servers; its log says why."})
		}
		for _, c := range cfgs {
			v.ToolServers = append(v.ToolServers, s.toolServer(ctx, c))
		}
	}
	return v
}

// locked reports whether the lockfile f holds the plugin appID, installed or pending.
func locked(f *lock.File, appID string) bool {
	_, installed := f.Plugins[appID]
	_, pending := f.Pending[appID]
	return installed || pending
}

// toolServer builds the view of the tool server c: its pins, whether each is stopped, and the
// pin requests of the tools stopped or new, with their differences.
func (s *Server) toolServer(ctx context.Context, c toolserver.Config) toolServerView {
	tv := toolServerView{Name: c.Name, AppID: c.AppID(), TierWhy: tier2Why}
	tv.Where = reveal(c.URL, false)
	if tv.Where == "" {
		tv.Where = reveal(strings.Join(append([]string{c.Command}, c.Args...), " "), false)
	}
	tv.Reach = reveal(c.Reach(), false)
	st := s.o.ToolServers.Store
	if rev, _, err := toolserver.LoadRevision(ctx, st, c.Name); err == nil {
		tv.Revision = rev.String()
	} else {
		s.o.Logger.Warn("web: reading a tool server's revision failed", "toolserver", c.Name, "err", err)
	}
	if a, ok := s.o.Registry.App(c.AppID()); ok {
		tv.Registered, tv.TierWhy, tv.Down = true, tierWords(a), s.notWorking(a.ID)
	}
	pins, err := toolserver.LoadPins(ctx, st, c.Name)
	if err != nil {
		s.o.Logger.Warn("web: reading a tool server's pins failed", "toolserver", c.Name, "err", err)
		tv.Problem = "capgate could not read this server's pins; its log says why."
		return tv
	}
	reqs, err := toolserver.PinRequests(ctx, st, c.Name)
	if err != nil {
		s.o.Logger.Warn("web: reading a tool server's pin requests failed", "toolserver", c.Name, "err", err)
		tv.Problem = "capgate could not read this server's pin requests; its log says why."
	}
	byTool := map[string]toolserver.PinRequest{}
	for _, pr := range reqs {
		byTool[pr.Tool] = pr
	}
	for _, p := range pins {
		capID := "tool." + c.AppID() + "." + p.Action
		v := toolView{Anchor: "tool-" + c.Name + "-" + p.Action, Tool: reveal(p.Tool, false), Capability: capID,
			Hash: p.Hash, Pinned: showTime(p.Accepted), Stopped: !s.o.Registry.Pinned(capID)}
		var d struct{ Title, Description string }
		if json.Unmarshal(p.Definition, &d) == nil {
			v.Title, v.Description = reveal(d.Title, false), reveal(clipText(d.Description, maxDescriptionShown), true)
		}
		tv.Tools = append(tv.Tools, v)
		if len(tv.Tools) == MaxListed {
			break
		}
	}
	pinned := make(map[string]*toolView, len(tv.Tools)) // by the server's name of the tool
	for i, p := range pins[:len(tv.Tools)] {
		pinned[p.Tool] = &tv.Tools[i]
	}
	for _, pr := range reqs {
		p, isPinned := pinned[pr.Tool]
		if isPinned && !p.Stopped {
			continue // the tool matches its pin again: the request is moot
		}
		w := pinRequestView{ConsentID: pr.ConsentID, Tool: reveal(pr.Tool, false), Kind: "new", Hash: pr.Hash}
		if isPinned {
			w.Kind, w.Capability = "changed", p.Capability
		}
		cr, req, err := s.o.Consent.Get(ctx, pr.ConsentID)
		switch {
		case err == nil:
			w.State = cr.State
			w.Pending = cr.State == store.ConsentPending && s.o.Now().Before(cr.Expires)
			if cr.State == store.ConsentPending && !w.Pending {
				w.State = store.ConsentExpired
			}
			w.Lines = diffLines(pinDifference(req))
		case errors.Is(err, store.ErrNotFound):
			w.State = "gone"
		default:
			s.o.Logger.Warn("web: reading a pin request failed", "toolserver", c.Name, "err", err)
			w.State = "unreadable"
		}
		if isPinned && w.State == store.ConsentDenied {
			p.Kept = true
		}
		tv.Waiting = append(tv.Waiting, w)
		if len(tv.Waiting) == MaxListed {
			break
		}
	}
	return tv
}

// diffLines are a pin request's difference (toolserver.Diff's lines) for the page,
// revealed, at most maxDiffLinesShown.
func diffLines(lines []string) []diffLine {
	var out []diffLine
	for _, l := range lines {
		if l == "" {
			continue
		}
		d := diffLine{Text: reveal(l, false)}
		if strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "+ ") {
			d.Sign = l[:1]
		}
		out = append(out, d)
		if len(out) == maxDiffLinesShown {
			break
		}
	}
	return out
}

// clipText cuts s to at most n bytes on a character boundary, marking a cut with "…".
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// plugins fills v with the plugins of the lockfile f and the widenings pending.
func (s *Server) plugins(ctx context.Context, f *lock.File, v *appsView) {
	for _, id := range slices.Sorted(maps.Keys(f.Plugins)) {
		pv := entryOf(f.Plugins[id])
		s.pluginState(ctx, f.Plugins[id], &pv)
		v.Plugins = append(v.Plugins, pv)
		if len(v.Plugins) == MaxListed {
			break
		}
	}
	for _, id := range slices.Sorted(maps.Keys(f.Pending)) {
		p := f.Pending[id]
		w := widenView{pluginView: entryOf(p.Entry), Seen: plugin.PendingHash(p), Since: showTime(p.Since)}
		var res delta.Result
		if err := json.Unmarshal(p.Changes, &res); err != nil {
			w.Verdict = "not readable: run capgate plugin list"
		} else {
			w.Verdict = reveal(string(res.Verdict), false)
			w.Approval = res.Verdict == delta.Widening || res.Verdict == delta.Narrowing || res.Verdict == delta.Neutral
			for _, c := range res.Changes {
				w.Changes = append(w.Changes, changeView{Path: reveal(c.Path, false), Change: reveal(c.Change, false), Widening: c.Widening})
			}
			for _, r := range res.Reasons {
				w.Reasons = append(w.Reasons, reveal(r, false))
			}
		}
		v.Pending = append(v.Pending, w)
		if len(v.Pending) == MaxListed {
			break
		}
	}
}

// pluginState fills in what the store records of the installed plugin e: whether its provider
// works, and why not, and its capabilities' conformance results for this version.
func (s *Server) pluginState(ctx context.Context, e lock.Entry, v *pluginView) {
	if s.o.Store == nil || !plugin.Runs(e) {
		return
	}
	if st, err := providers.LoadStatus(ctx, s.o.Store, e.AppID); err == nil {
		v.Running = "working"
		if !st.Working {
			v.Running, v.Why = "not working", reveal(st.Why, false)
		}
	}
	rec, err := conformance.Load(ctx, s.o.Store, e.AppID)
	if err != nil {
		return
	}
	if doc, err := manifest.Parse(e.Manifest); err == nil && rec.Current(doc) {
		for _, r := range rec.Results {
			v.Tests = append(v.Tests, reveal(r.String(), false))
		}
	}
}

// entryOf is the view of a lock entry, with the capabilities its manifest declares.
func entryOf(e lock.Entry) pluginView {
	v := pluginView{AppID: reveal(e.AppID, false), Version: reveal(e.Version, false), Tier: "Tier " + strconv.Itoa(e.Tier),
		Signer: reveal(e.Signer, false), Digest: reveal(e.Digest, false), Installed: showTime(e.InstalledAt),
		ApprovedBy: reveal(e.ApprovedBy, false), Source: reveal(e.Source, false)}
	if e.Tier == int(manifest.Tier1) {
		v.Tier += ": signed with a trusted key (" + v.Signer + ")"
	} else {
		v.Tier += ": not signed with a trusted key; its capabilities never act above read without your consent"
	}
	if d, err := manifest.Parse(e.Manifest); err == nil && d.Manifest() != nil {
		for _, c := range d.Manifest().Capabilities {
			v.Caps = append(v.Caps, capView{ID: reveal(c.ID, false), Name: reveal(c.Name, false)})
		}
	}
	return v
}

// appsAvailable answers 404 and reports false when the page lacks what it needs.
func (s *Server) appsAvailable(w http.ResponseWriter) bool {
	if s.o.Registry == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway serves no apps page.")
		return false
	}
	return true
}

// apps is the page of apps, tool servers and plugins.
func (s *Server) apps(w http.ResponseWriter, r *http.Request, csrf string) {
	if !s.appsAvailable(w) {
		return
	}
	s.render(w, http.StatusOK, "apps.html", page{Title: "Apps, tool servers and plugins", Nav: "apps", CSRF: csrf, Apps: s.appsPage(r), Now: s.o.Now()})
}

// pinRequest finds the pin request id of the tool server name, as the page showed it.
func (s *Server) pinRequest(ctx context.Context, name, id string) (toolserver.PinRequest, bool, error) {
	reqs, err := toolserver.PinRequests(ctx, s.o.ToolServers.Store, name)
	if err != nil {
		return toolserver.PinRequest{}, false, err
	}
	for _, pr := range reqs {
		if pr.ConsentID == id {
			return pr, true, nil
		}
	}
	return toolserver.PinRequest{}, false, nil
}

// notWorking reports whether the broker finds appID's provider down (nothing to say
// without a broker).
func (s *Server) notWorking(appID manifest.AppID) bool {
	return s.o.Broker != nil && s.o.Broker.ProviderState(appID) == broker.NotWorking
}

// toolAnswer accepts a tool server's changed or new tool (verb accept: it is pinned again,
// through toolserver.AcceptSeen, as `capgate toolserver accept` pins, and only with the
// definition the page showed) or keeps it stopped (verb keep: its pin request is denied).
// The form names the pin request, never the tool: a tool's name is the server's text.
func (s *Server) toolAnswer(w http.ResponseWriter, r *http.Request, _ string) {
	if s.o.ToolServers == nil || s.o.Registry == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway serves no tool servers here.")
		return
	}
	name, verb, ctx := r.PathValue("name"), r.PathValue("verb"), r.Context()
	if verb != "accept" && verb != "keep" {
		s.message(w, http.StatusNotFound, "Not found", "There is no such action.")
		return
	}
	if toolserver.CheckName(name) != nil {
		s.message(w, http.StatusNotFound, "No such tool server", "There is no tool server of this name.")
		return
	}
	id, hash := r.PostForm.Get("request"), r.PostForm.Get("hash")
	if id == "" || len(id) > maxIDBytes {
		s.message(w, http.StatusBadRequest, "No tool named", "The field request must name the tool's pin request.")
		return
	}
	pr, ok, err := s.pinRequest(ctx, name, id)
	switch {
	case err != nil:
		s.o.Logger.Warn("web: reading a tool server's pin requests failed", "toolserver", name, "err", err)
		s.message(w, http.StatusInternalServerError, "Something broke", "capgate could not read the tool server's pin requests. Its log says why.")
		return
	case !ok:
		s.message(w, http.StatusConflict, "No longer waiting", "This tool is no longer waiting for you: it was accepted, removed, or changed again since the page was shown. Reload the apps page.")
		return
	}
	if verb == "keep" {
		s.keepStopped(w, r, name, pr)
		return
	}
	if hash != pr.Hash {
		s.message(w, http.StatusConflict, "Changed again", "The server changed this tool again since the page was shown: nothing was accepted. Reload the apps page and read the new difference.")
		return
	}
	// Recorded before it is made, and not made unrecorded (operator.Service.AcceptSeenTool).
	_, err = s.ops.AcceptSeenTool(ctx, onThePage, name, pr)
	switch {
	case err == nil:
		s.toolsAccepted()
		http.Redirect(w, r, "/ui/apps#ts-"+name, http.StatusSeeOther)
	case errors.Is(err, toolserver.ErrChangedAgain):
		s.message(w, http.StatusConflict, "Changed again", "The server changed this tool again since the page was shown: nothing was accepted. Its new definition waits for you on the apps page.")
	case errors.Is(err, toolserver.ErrNothingToAccept):
		s.message(w, http.StatusConflict, "Nothing to accept", "The server no longer lists this tool as changed or new: nothing was accepted. Reload the apps page.")
	case errors.Is(err, operator.ErrNotRecorded):
		s.o.Logger.Warn("web: the accept could not be recorded; nothing accepted", "err", err)
		s.message(w, http.StatusServiceUnavailable, "Not accepted", "capgate could not record the accept in the audit log, so it accepted nothing. Its log says why.")
	case errors.Is(err, operator.ErrNoValidTool):
		s.message(w, http.StatusConflict, "Not accepted", "The tool's new definition does not make a valid capability (its schema does not compile, say): it stays stopped. capgate toolserver accept "+name+" --dry-run says why.")
	default:
		s.o.Logger.Warn("web: accepting a tool failed", "toolserver", name, "err", err)
		s.message(w, http.StatusBadGateway, "Not accepted", "capgate could not reach the tool server to list its tools again, or could not save the pin: nothing was accepted. Its log says why.")
	}
}

// keepStopped denies the pin request pr: the tool stays stopped (a new one uncallable), and
// the request no longer waits on the requests page. Accepting stays possible here. It only
// stops something: it is made even when it cannot be recorded (operator.Service.KeepToolStopped).
func (s *Server) keepStopped(w http.ResponseWriter, r *http.Request, name string, pr toolserver.PinRequest) {
	if err := s.ops.KeepToolStopped(r.Context(), onThePage, name, pr); err != nil {
		s.fail(w, err)
		return
	}
	http.Redirect(w, r, "/ui/apps", http.StatusSeeOther)
}

// approvePlugin approves the widening pending for a plugin, the one the page showed
// (plugin.ApproveSeen), recorded in the audit log first.
func (s *Server) approvePlugin(w http.ResponseWriter, r *http.Request, _ string) {
	if s.o.Plugins == nil {
		s.message(w, http.StatusNotFound, "Not available", "This gateway manages no plugins here.")
		return
	}
	appID, seen, ctx := r.PathValue("app"), r.PostForm.Get("seen"), r.Context()
	if _, err := manifest.ParseAppID(appID); err != nil {
		s.message(w, http.StatusNotFound, "No such plugin", "There is no plugin with this app id.")
		return
	}
	if seen == "" || len(seen) > maxIDBytes {
		s.message(w, http.StatusBadRequest, "Nothing to approve", "The field seen must name the widening the page showed.")
		return
	}
	// Recorded before it is made, and not made unrecorded (operator.Service.ApprovePlugin).
	out, err := s.ops.ApprovePlugin(ctx, onThePage, appID, seen)
	switch {
	case errors.Is(err, operator.ErrNotRecorded):
		s.o.Logger.Warn("web: the approval could not be recorded; nothing approved", "err", err)
		s.message(w, http.StatusServiceUnavailable, "Not approved", "capgate could not record the approval in the audit log, so it approved nothing. Its log says why.")
	case errors.Is(err, plugin.ErrNoPending):
		s.message(w, http.StatusConflict, "Nothing to approve", "No widening is pending for this plugin any more. Reload the apps page.")
	case errors.Is(err, plugin.ErrPendingChanged):
		s.message(w, http.StatusConflict, "Changed since shown", "Another version of this plugin is pending now: nothing was approved. Reload the apps page and read its difference.")
	case err != nil:
		s.o.Logger.Warn("web: approving a widening failed", "app", appID, "err", err)
		s.message(w, http.StatusInternalServerError, "Not approved", "capgate could not update the lockfile. Its log says why.")
	case out.Refused:
		s.message(w, http.StatusConflict, "Refused", "Compared again with what is locked now, this version does not fit: it was refused and is no longer pending. capgate plugin list shows the lock.")
	default:
		http.Redirect(w, r, "/ui/apps#plugins", http.StatusSeeOther)
	}
}
