package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// Recorder writes audit records; audit.Writer is one.
type Recorder interface {
	Append(ctx context.Context, rec audit.Record) (int64, error)
}

// Options configures a Manager. Env's Store and Registry are required.
type Options struct {
	Env
	Audit  Recorder      // nil: stopped tools are only logged
	Logger *slog.Logger  // nil: slog.Default()
	Relist time.Duration // how often each server is listed again; 0: DefaultRelist
}

// Manager runs the connections of a gateway to its tool servers: one MCP client session per
// registered tool server, kept up, listed again on list-changed notifications and every
// Relist, each tool's hash checked against its pin. It is safe for concurrent use.
type Manager struct {
	o       Options
	mu      sync.Mutex
	servers map[string]*server // by app id
	closed  bool
	// running counts the goroutines of every server (its loop, its session's watch): Close
	// waits for them, so that none outlives the Manager.
	running sync.WaitGroup
}

// NewManager returns a Manager with no connection; Sync starts them.
func NewManager(o Options) *Manager {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Relist <= 0 {
		o.Relist = DefaultRelist
	}
	return &Manager{o: o, servers: map[string]*server{}}
}

// Sync brings the connections in line with the store: it starts a connection (and lists its
// tools, before returning) for every tool server registered since the last Sync, restarts
// one whose Config changed, stops one removed, and has every other list again and re-read
// its pins (an accept elsewhere). A server that cannot be reached is logged and retried
// every Relist; meanwhile Provider reports it down (the broker refuses its tools as not
// working right now), and a call that lands as it goes down answers as unresponsive. Sync fails only when the store
// cannot be read.
func (m *Manager) Sync(ctx context.Context) error {
	cfgs, err := ListConfigs(ctx, m.o.Store)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	want := map[string]Config{}
	for _, c := range cfgs {
		want[c.AppID()] = c
	}
	var stop []*server
	var start []*server
	for id, s := range m.servers {
		if c, ok := want[id]; !ok || string(c.marshal()) != string(s.cfg.marshal()) {
			stop = append(stop, s)
			delete(m.servers, id)
		}
	}
	for id, c := range want {
		if s, ok := m.servers[id]; ok {
			s.kickNow()
			continue
		}
		s := newServer(m, c)
		m.servers[id] = s
		start = append(start, s)
	}
	// Counted under mu, so that a Close that takes the servers after this waits for their
	// loops too.
	m.running.Add(len(start))
	m.mu.Unlock()
	for _, s := range stop {
		s.close()
	}
	var wg sync.WaitGroup
	for _, s := range start {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.connect(ctx)
			s.refresh(ctx)
			go func() {
				defer m.running.Done()
				s.loop()
			}()
		}()
	}
	wg.Wait()
	return nil
}

// Provider returns the provider of a tool server's app, and whether it is up: false while
// its session is down or reconnecting (a server that could not be reached, one whose process
// ended), when its calls could not be answered. ok is false for an app that is no tool
// server of this Manager. It never waits on a server.
func (m *Manager) Provider(appID string) (h sdk.Handler, up, ok bool) {
	m.mu.Lock()
	s, ok := m.servers[appID]
	m.mu.Unlock()
	if !ok {
		return nil, false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s, s.sess != nil, true
}

// OperatorRead reports whether the operator's overlay classifies the tool behind capabilityID
// of the tool server app appID as changing nothing (side effects none or read), as of the
// last listing; the gateway's broker.Providers answers TrustedRead with it. A tool the
// overlay does not name counts as the worst case, so it is never a read, whatever the
// server's annotations say.
func (m *Manager) OperatorRead(appID, capabilityID string) bool {
	m.mu.Lock()
	s, ok := m.servers[appID]
	m.mu.Unlock()
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[capabilityID]
}

// Close stops every connection and returns once their goroutines have ended (a Sync still
// connecting returns first). Sync after Close does nothing.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	servers := m.servers
	m.servers = map[string]*server{}
	m.mu.Unlock()
	for _, s := range servers {
		s.close()
	}
	m.running.Wait()
	return nil
}

// server is one running tool server and the sdk.Handler of its app.
type server struct {
	m     *Manager
	cfg   Config
	appID string
	kick  chan struct{}
	ctx   context.Context
	stop  context.CancelFunc
	done  chan struct{}

	refreshMu sync.Mutex // one refresh at a time

	mu     sync.Mutex
	sess   *mcpsdk.ClientSession
	pins   map[string]Pin    // by tool name
	byCap  map[string]string // capability id → tool name
	now    map[string]Listed // the last listing, by tool name
	reads  map[string]bool   // capability id → the operator classified its tool a read
	calls  map[*call]bool    // the tools/call in flight
	asking bool              // a URL request waits for the person
}

var _ sdk.Handler = (*server)(nil)

func newServer(m *Manager, c Config) *server {
	ctx, stop := context.WithCancel(context.Background())
	return &server{m: m, cfg: c, appID: c.AppID(), kick: make(chan struct{}, 1), ctx: ctx, stop: stop,
		done: make(chan struct{}), pins: map[string]Pin{}, byCap: map[string]string{}, now: map[string]Listed{}}
}

func (s *server) log() *slog.Logger { return s.m.o.Logger.With("toolserver", s.cfg.Name) }

func (s *server) kickNow() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// connect starts the session when there is none.
func (s *server) connect(ctx context.Context) {
	s.mu.Lock()
	up := s.sess != nil
	s.mu.Unlock()
	if up {
		return
	}
	cctx, cancel := context.WithCancel(s.ctx)
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	sess, err := connect(cctx, s.cfg, s.m.o.Sandbox, s.m.o.Network, s.m.o.Version, s.kickNow, s.elicit)
	cancel()
	if err != nil {
		s.log().Warn("cannot connect to the tool server; retrying", "err", err)
		return
	}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		// Closed while connecting: close lost this session, so it is closed here.
		s.mu.Unlock()
		_ = sess.Close()
		return
	}
	s.sess = sess
	s.m.running.Add(1)
	s.mu.Unlock()
	rev := RevisionOf(sess, s.m.o.now())
	s.log().Info("connected to the tool server", "revision", rev.Protocol, "stateless", rev.Stateless)
	if err := putRevision(s.ctx, s.m.o.Store, s.cfg.Name, rev); err != nil && s.ctx.Err() == nil {
		s.log().Warn("recording the tool server's revision failed", "err", err)
	}
	go func() {
		defer s.m.running.Done()
		_ = sess.Wait()
		s.mu.Lock()
		if s.sess == sess {
			s.sess = nil
		}
		s.mu.Unlock()
		if s.ctx.Err() == nil {
			s.log().Warn("the tool server's session ended; reconnecting")
			s.kickNow()
		}
	}()
}

func (s *server) loop() {
	defer close(s.done)
	t := time.NewTicker(s.m.o.Relist)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
		s.connect(s.ctx)
		s.refresh(s.ctx)
	}
}

func (s *server) close() {
	s.stop()
	s.mu.Lock()
	sess := s.sess
	s.sess = nil
	ids := make([]string, 0, len(s.byCap))
	for id := range s.byCap {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	if sess != nil {
		_ = sess.Close()
	}
	for _, id := range ids {
		s.m.o.Registry.SetPinned(id, true) // the app is gone or restarting: forget its stops
	}
}

func (s *server) capID(action string) string { return "tool." + s.appID + "." + action }

// refresh lists the tools and compares them with the pins: a changed tool is stopped, with
// an audit record and a pin request; a tool whose pin request the person approved is pinned
// again; a removed tool loses its pin; the manifest is registered again when it changed.
func (s *server) refresh(ctx context.Context) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	e := &s.m.o.Env
	pins, err := LoadPins(ctx, e.Store, s.cfg.Name)
	if err != nil {
		s.log().Warn("reading the pins failed", "err", err)
		return
	}
	// One read of the overlay gives both the registered manifest and the reads OperatorRead
	// answers, so the two never disagree. One that cannot be read classifies nothing.
	overlay, oerr := ReadOverlay(e.DataDir, s.cfg.Name)
	if oerr != nil {
		s.log().Warn("reading the operator's overlay failed", "err", oerr)
		overlay = nil
	}
	var now map[string]Listed
	if sess != nil {
		tools, cut, err := List(ctx, sess)
		if err != nil {
			s.log().Warn("listing the tools failed", "err", err)
			if ctx.Err() == nil {
				// The server did not answer: it is down, as far as its calls go. Over
				// streamable HTTP nothing else tells (no process ends, and a 2026-07-28
				// session holds no connection), so the session is closed here: the server
				// is reported down and reconnected to every Relist.
				_ = sess.Close()
			}
		} else {
			var ps []Problem
			now, ps = listed(tools)
			for _, p := range ps {
				s.log().Warn("a tool is left out", "tool", p.Tool, "rule", p.Rule)
			}
			if cut {
				s.log().Warn("the server lists more tools than capgate takes", "max", MaxTools)
			}
		}
	}
	if now == nil {
		// Not listed: keep the last listing, so that the handler can tell; nothing changes.
		s.setPins(pins, nil, overlay)
		return
	}
	if changed, err := s.approved(ctx, pins, now); err != nil {
		s.log().Warn("reading the pin requests failed", "err", err)
	} else if changed {
		if pins, err = LoadPins(ctx, e.Store, s.cfg.Name); err != nil {
			s.log().Warn("reading the pins failed", "err", err)
			return
		}
	}
	open, err := loadPending(ctx, e.Store, s.cfg.Name)
	if err != nil {
		s.log().Warn("reading the pin requests failed", "err", err)
	}
	var keep []Pin
	for _, ch := range Compare(pins, now) {
		switch ch.Kind {
		case Same:
			keep = append(keep, *ch.Pin)
			e.Registry.SetPinned(s.capID(ch.Pin.Action), true)
		case Changed:
			keep = append(keep, *ch.Pin)
			e.Registry.SetPinned(s.capID(ch.Pin.Action), false)
			if open[ch.Tool].Hash != ch.Listed.Hash {
				s.ask(ctx, ch)
			}
		case New:
			if open[ch.Tool].Hash != ch.Listed.Hash {
				s.ask(ctx, ch)
			}
		case Removed:
			e.Registry.SetPinned(s.capID(ch.Pin.Action), true)
			if err := deletePin(ctx, e.Store, s.cfg.Name, ch.Tool); err != nil {
				s.log().Warn("dropping a removed tool's pin failed", "tool", ch.Tool, "err", err)
			}
			s.log().Info("a tool was removed by its server", "tool", ch.Tool)
		}
	}
	s.setPins(keep, now, overlay)
	if oerr != nil {
		return // register would refuse the overlay too; the manifest stays as it was
	}
	if _, err := e.registerWith(ctx, s.cfg.Name, keep, overlay); err != nil {
		s.log().Warn("registering the tool server's manifest failed", "err", err)
	}
}

func (s *server) setPins(pins []Pin, now map[string]Listed, overlay Overlay) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pins = make(map[string]Pin, len(pins))
	s.byCap = make(map[string]string, len(pins))
	s.reads = make(map[string]bool)
	for _, p := range pins {
		s.pins[p.Tool] = p
		s.byCap[s.capID(p.Action)] = p.Tool
		if c, ok := overlay[p.Tool]; ok && (c.SideEffects == manifest.SideEffectNone || c.SideEffects == manifest.SideEffectRead) {
			s.reads[s.capID(p.Action)] = true
		}
	}
	if now != nil {
		s.now = now
	}
}

// approved pins every tool whose open pin request the person approved, when the server
// still lists the definition the person saw. It reports whether it pinned any.
func (s *server) approved(ctx context.Context, pins []Pin, now map[string]Listed) (bool, error) {
	e := &s.m.o.Env
	open, err := loadPending(ctx, e.Store, s.cfg.Name)
	if err != nil {
		return false, err
	}
	taken := map[string]bool{}
	actions := map[string]string{}
	for _, p := range pins {
		taken[p.Action] = true
		actions[p.Tool] = p.Action
	}
	pinned := false
	for tool, o := range open {
		c, err := e.Store.GetConsent(ctx, o.ConsentID)
		if err != nil || c.State != store.ConsentApproved {
			continue
		}
		l, ok := now[tool]
		if !ok || l.Hash != o.Hash {
			continue // the definition changed again since the person saw it: ask again
		}
		act, ok := actions[tool]
		if !ok {
			act = actionFor(tool, taken)
			taken[act] = true
		}
		p := Pin{Tool: tool, Action: act, Hash: l.Hash, Definition: l.Canonical, Accepted: e.now()}
		if err := putPin(ctx, e.Store, s.cfg.Name, p); err != nil {
			return pinned, err
		}
		if err := e.Store.PutState(ctx, s.appID, statePending+tool, nil); err != nil {
			return pinned, err
		}
		s.log().Info("a tool was accepted by the person", "tool", tool, "consent", o.ConsentID)
		pinned = true
	}
	return pinned, nil
}

// ask records a changed or new tool: an audit record (for a changed one) and a consent
// request of kind KindPin showing the difference, remembered as the tool's open request.
func (s *server) ask(ctx context.Context, ch Change) {
	e := &s.m.o.Env
	id := newConsentID()
	what, capID, perm := "new", "", ""
	if ch.Pin != nil {
		what, capID, perm = "changed", s.capID(ch.Pin.Action), AppPrefix+s.cfg.Name+"."+ch.Pin.Action
	}
	summary := fmt.Sprintf("The MCP tool server %q %s %q. ", s.cfg.Name, map[string]string{"new": "offers a new tool", "changed": "changed the tool"}[what], printable(ch.Tool, false))
	if ch.Pin != nil {
		summary += "It is stopped until you accept its new definition. "
	} else {
		summary += "It cannot be called until you accept it. "
	}
	summary += "Approve to accept it (or run: capgate toolserver accept " + s.cfg.Name + " " + shownJSON(ch.Tool) + ")."
	// The difference is shown as what it is, line by line, never as a reason: the agent's
	// words and the server's change are not to be mistaken for each other.
	lines := make([]string, 0, len(ch.Lines))
	for _, l := range ch.Lines {
		lines = append(lines, clipText(l, consent.MaxTextBytes))
	}
	req := consent.Request{
		ClientID: "capgate:toolserver", ClientName: "capgate (tool server " + s.cfg.Name + ")", Kind: KindPin,
		CapabilityID: capID, Permission: perm, Summary: clipText(summary, consent.MaxTextBytes), Difference: lines,
		SideEffects: "system", Risk: "high", Reversibility: consent.Irreversible,
	}
	payload, err := json.Marshal(req)
	if err != nil {
		s.log().Warn("the pin request cannot be written", "err", err)
		return
	}
	// The audit record comes first: the log knows of the stop before anyone is asked.
	if ch.Pin != nil && s.m.o.Audit != nil {
		rec := audit.Record{
			Action: "toolserver.pin", App: s.appID, Method: ch.Pin.Action, Capability: capID, Permission: perm,
			Decision: audit.DecisionDeny, Code: "METHOD_NOT_FOUND", Kind: audit.KindDecision, Result: "stopped",
			Explanation: "the tool's definition no longer matches its pin (" + ch.Pin.Hash + " is now " + ch.Listed.Hash + "); it is stopped until accepted",
			ClientID:    req.ClientID, ConsentID: id,
		}
		if _, err := s.m.o.Audit.Append(ctx, rec); err != nil {
			s.log().Warn("the audit record of a stopped tool cannot be written", "err", err)
		}
	}
	at := e.now()
	err = e.Store.PutConsent(ctx, store.Consent{ID: id, ClientID: req.ClientID, Kind: KindPin, Payload: payload,
		State: store.ConsentPending, Created: at, Expires: at.Add(PinRequestTTL)})
	if err != nil {
		s.log().Warn("the pin request cannot be written", "err", err)
		return
	}
	if err := putPending(ctx, e.Store, s.cfg.Name, ch.Tool, pending{Hash: ch.Listed.Hash, ConsentID: id}); err != nil {
		s.log().Warn("the pin request cannot be remembered", "err", err)
	}
	s.log().Warn("a tool's definition does not match its pin; it is stopped until accepted",
		"tool", ch.Tool, "change", what, "consent", id)
}

// Manifest returns the app's manifest as registered, nil when it is not.
func (s *server) Manifest() *manifest.Document {
	if a, ok := s.m.o.Registry.App(s.appID); ok {
		return a.Doc
	}
	return nil
}

// Labelled is what a tool call returns: the tool server's output, labelled as untrusted.
type Labelled struct {
	UntrustedOutput   bool            `json:"untrusted_output"` // always true
	Server            string          `json:"server"`
	Tool              string          `json:"tool"`
	Content           json.RawMessage `json:"content"`
	StructuredContent any             `json:"structured_content,omitempty"`
}

// Invoke calls the tool behind capabilityID, only while the server lists it with the
// definition its pin holds.
func (s *server) Invoke(ctx context.Context, capabilityID string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	look := func() (tool string, ok bool, pin Pin, l Listed, listed bool, sess *mcpsdk.ClientSession) {
		s.mu.Lock()
		defer s.mu.Unlock()
		tool, ok = s.byCap[capabilityID]
		pin = s.pins[tool]
		l, listed = s.now[tool]
		return tool, ok, pin, l, listed, s.sess
	}
	tool, ok, pin, l, listed, sess := look()
	if !ok || !listed || l.Hash != pin.Hash {
		// The registry may be ahead of this connection (an accept by another process that
		// the gateway reloaded): list and read the pins again before refusing.
		s.refresh(ctx)
		tool, ok, pin, l, listed, sess = look()
	}
	switch {
	case !ok:
		return sdk.Result{}, sdk.NotFound(capabilityID)
	case !listed || l.Hash != pin.Hash:
		return sdk.Result{}, &sdk.Error{Code: sdk.CodeNotFound, CapabilityID: capabilityID,
			Reason: "the tool no longer matches its pin: it is stopped until accepted"}
	case sess == nil:
		return sdk.Result{}, sdk.AppUnresponsive(s.appID)
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	// The call's context carries the call, so that the information requests the server sends
	// with it (2026-07-28: input requests the go-sdk client answers and retries the call
	// with) are shown to the person as this call's.
	c := &call{capabilityID: capabilityID, clientID: ic.ClientID, callID: ic.CallID}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, callKey{}, c), CallTimeout)
	defer cancel()
	c.ctx = cctx
	defer s.track(c)()
	start := time.Now()
	res, err := sess.CallTool(cctx, &mcpsdk.CallToolParams{Name: tool, Arguments: params})
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return sdk.Result{}, sdk.Timeout(capabilityID, time.Since(start).Milliseconds())
		}
		return sdk.Result{}, sdk.ExecutionFailed(withSaid("the tool server did not answer the call", c), true)
	}
	if res.IsError {
		return sdk.Result{}, sdk.ExecutionFailed(withSaid("the tool reported an error (its text is untrusted and not shown)", c), false)
	}
	content, err := json.Marshal(res.Content)
	if err != nil || string(content) == "null" {
		content = json.RawMessage("[]")
	}
	data, err := json.Marshal(Labelled{UntrustedOutput: true, Server: s.cfg.Name, Tool: tool, Content: content, StructuredContent: res.StructuredContent})
	if err != nil {
		return sdk.Result{}, sdk.ExecutionFailed("the tool's output is not JSON", false)
	}
	return sdk.Result{Success: true, Data: data}, nil
}

// withSaid is msg and, when capgate answered information requests of the call, what it
// answered (capgate's own words: nothing of the server's).
func withSaid(msg string, c *call) string {
	if said := c.said(); said != "" {
		return msg + "; " + said
	}
	return msg
}
