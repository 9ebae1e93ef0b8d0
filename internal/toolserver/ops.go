package toolserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/store"
)

// Env is what adding, accepting and running tool servers work with. Store and Registry are
// required; the registry must be on the same store.
type Env struct {
	Store    Store
	Registry *registry.Registry
	DataDir  string // the data folder, for overlays; "" reads none
	Version  string // capgate's version, told to servers in the handshake
	// Sandbox runs each stdio server in a sandbox of its own; nil refuses stdio servers.
	Sandbox *sandbox.Sandbox
	// Network gives a stdio server with Config.Allow its destinations; nil: no network.
	Network Network
	Now     func() time.Time
}

func (e *Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Change kinds, Change.Kind.
const (
	Same    = "same"    // pinned and unchanged
	Changed = "changed" // pinned, and its definition changed: stopped until accepted
	New     = "new"     // listed and not pinned: a new or renamed tool, not callable until accepted
	Removed = "removed" // pinned and no longer listed
)

// Change is one tool compared with its pin.
type Change struct {
	Tool    string
	Kind    string
	Pin     *Pin    // nil for New
	Listed  *Listed // nil for Removed
	Lines   []string
	Problem string // a listed tool left out of the listing (its definition is not JSON)
}

// Compare compares a listing with the pins, ordered by tool name.
func Compare(pins []Pin, now map[string]Listed) []Change {
	var out []Change
	seen := map[string]bool{}
	for i := range pins {
		p := &pins[i]
		seen[p.Tool] = true
		l, ok := now[p.Tool]
		switch {
		case !ok:
			out = append(out, Change{Tool: p.Tool, Kind: Removed, Pin: p})
		case l.Hash == p.Hash:
			out = append(out, Change{Tool: p.Tool, Kind: Same, Pin: p, Listed: &l})
		default:
			out = append(out, Change{Tool: p.Tool, Kind: Changed, Pin: p, Listed: &l, Lines: Diff(p.Definition, l.Canonical)})
		}
	}
	for name, l := range now {
		if !seen[name] {
			out = append(out, Change{Tool: name, Kind: New, Listed: &l, Lines: Diff(nil, l.Canonical)})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Tool, b.Tool) })
	return out
}

// Report is what Add or Accept did.
type Report struct {
	AppID    string
	Accepted []Pin     // pinned now
	Left     []Problem // tools left out, and why
	Cut      bool      // the server listed more than MaxTools tools
	Changes  []Change  // Accept: every tool compared with its pin, before accepting
	Revision Revision  // the MCP revision the session spoke
}

// fetch connects to the server once, lists its tools and closes; it says which revision
// the session spoke.
func (e *Env) fetch(ctx context.Context, c Config) (map[string]Listed, []Problem, bool, Revision, error) {
	s, err := ConnectWith(ctx, c, e.Sandbox, e.Network, e.Version, nil)
	if err != nil {
		return nil, nil, false, Revision{}, err
	}
	defer s.Close()
	rev := RevisionOf(s, e.now())
	tools, cut, err := List(ctx, s)
	if err != nil {
		return nil, nil, false, rev, err
	}
	now, ps := listed(tools)
	return now, ps, cut, rev, nil
}

// Add adds the tool server c: it connects once, lists the tools, pins every one that makes a
// valid capability (the operator accepts them by adding), stores c and the pins, and
// registers the Tier 2 app mcp.NAME with alias NAME. An app of that id already registered,
// or an app whose alias is NAME, is ErrTaken: remove it first.
func Add(ctx context.Context, e *Env, c Config) (Report, error) {
	if err := c.Validate(); err != nil {
		return Report{}, err
	}
	r := Report{AppID: c.AppID()}
	if _, ok := e.Registry.App(r.AppID); ok {
		return r, fmt.Errorf("toolserver %s: the app %s is registered already (capgate toolserver remove %s first): %w", c.Name, r.AppID, c.Name, ErrTaken)
	}
	if a, ok := e.Registry.App(c.Name); ok {
		return r, fmt.Errorf("toolserver %s: the alias %s is the app %s's: %w", c.Name, c.Name, a.ID, ErrTaken)
	}
	now, ps, cut, rev, err := e.fetch(ctx, c)
	if err != nil {
		return r, err
	}
	r.Left, r.Cut, r.Revision = ps, cut, rev
	taken := map[string]bool{}
	var pins []Pin
	for _, name := range slices.Sorted(maps.Keys(now)) {
		l := now[name]
		act := actionFor(name, taken)
		taken[act] = true
		pins = append(pins, Pin{Tool: name, Action: act, Hash: l.Hash, Definition: l.Canonical, Accepted: e.now()})
	}
	pins, left, err := e.valid(c.Name, pins)
	if err != nil {
		return r, err
	}
	r.Left = append(r.Left, left...)
	raw, err := jsonOf(c)
	if err != nil {
		return r, err
	}
	if err := e.Store.PutState(ctx, r.AppID, StateConfig, raw); err != nil {
		return r, fmt.Errorf("toolserver %s: save config: %w", c.Name, err)
	}
	if err := putRevision(ctx, e.Store, c.Name, rev); err != nil {
		return r, fmt.Errorf("toolserver %s: save revision: %w", c.Name, err)
	}
	for _, p := range pins {
		if err := putPin(ctx, e.Store, c.Name, p); err != nil {
			return r, fmt.Errorf("toolserver %s: save pin: %w", c.Name, err)
		}
	}
	if _, err := e.register(ctx, c.Name, pins); err != nil {
		return r, err
	}
	r.Accepted = pins
	return r, nil
}

// valid returns the pins that make valid capabilities, and the problems of the others.
func (e *Env) valid(name string, pins []Pin) ([]Pin, []Problem, error) {
	_, left, err := Derive(name, pins, nil)
	if err != nil {
		return nil, left, err
	}
	bad := map[string]bool{}
	for _, p := range left {
		bad[p.Tool] = true
	}
	return slices.DeleteFunc(pins, func(p Pin) bool { return bad[p.Tool] }), left, nil
}

// register derives the manifest from pins and registers it, unless the registry holds that
// manifest already. It reports whether it registered.
func (e *Env) register(ctx context.Context, name string, pins []Pin) (bool, error) {
	overlay, err := ReadOverlay(e.DataDir, name)
	if err != nil {
		return false, err
	}
	return e.registerWith(ctx, name, pins, overlay)
}

// registerWith is register with the overlay already read.
func (e *Env) registerWith(ctx context.Context, name string, pins []Pin, overlay Overlay) (bool, error) {
	doc, _, err := Derive(name, pins, overlay)
	if err != nil {
		return false, err
	}
	canon, err := jcs.Canonicalize(doc)
	if err != nil {
		return false, err
	}
	if a, ok := e.Registry.App(AppPrefix + name); ok && bytes.Equal(a.Doc.Raw(), canon) {
		return false, nil
	}
	if _, err := e.Registry.Register(ctx, canon, name); err != nil {
		return false, fmt.Errorf("toolserver %s: register: %w", name, err)
	}
	return true, nil
}

// ErrNothingToAccept is an Accept that names a tool neither changed nor new.
var ErrNothingToAccept = errors.New("toolserver: nothing to accept")

// ErrTaken is an Add whose app id or alias another app has.
var ErrTaken = errors.New("the name is taken")

// ErrChangedAgain is an AcceptSeen whose tool the server now lists with another definition
// than the one the person was shown: nothing is accepted, and the person must look again.
var ErrChangedAgain = errors.New("toolserver: the tool changed again since it was shown")

// Accept lists the tool server's tools and compares them with the pins (Report.Changes,
// with their differences); unless dryRun, it pins the changed and new tools named by tools
// (every one when tools is empty), drops the pins of removed tools, registers the manifest
// again and records the open pin requests of the accepted tools as approved by by. A named
// tool that is neither changed nor new is ErrNothingToAccept, and nothing is accepted.
func Accept(ctx context.Context, e *Env, name string, tools []string, dryRun bool, by string) (Report, error) {
	return accept(ctx, e, name, tools, nil, dryRun, by)
}

// AcceptSeen is Accept of the one changed or new tool, only when the server lists it now with
// the definition whose hash the person was shown (the hash of its PinRequest): what the
// person accepts is what they read, even if the server changed the tool again meanwhile
// (then ErrChangedAgain, and nothing is accepted).
func AcceptSeen(ctx context.Context, e *Env, name, tool, hash, by string) (Report, error) {
	return accept(ctx, e, name, []string{tool}, map[string]string{tool: hash}, false, by)
}

// accept is Accept; seen, when set, holds the hash each named tool must be listed with.
func accept(ctx context.Context, e *Env, name string, tools []string, seen map[string]string, dryRun bool, by string) (Report, error) {
	c, err := LoadConfig(ctx, e.Store, name)
	if err != nil {
		return Report{}, err
	}
	r := Report{AppID: c.AppID()}
	pins, err := LoadPins(ctx, e.Store, name)
	if err != nil {
		return r, err
	}
	now, ps, cut, rev, err := e.fetch(ctx, c)
	if err != nil {
		return r, err
	}
	r.Left, r.Cut, r.Revision = ps, cut, rev
	if !dryRun {
		if err := putRevision(ctx, e.Store, name, rev); err != nil {
			return r, fmt.Errorf("toolserver %s: save revision: %w", name, err)
		}
	}
	r.Changes = Compare(pins, now)
	want := map[string]bool{}
	for _, t := range tools {
		want[t] = true
	}
	for _, ch := range r.Changes {
		if want[ch.Tool] && ch.Kind != Changed && ch.Kind != New {
			return r, fmt.Errorf("%w: the tool %q is %s", ErrNothingToAccept, ch.Tool, ch.Kind)
		}
		if h, ok := seen[ch.Tool]; ok && want[ch.Tool] && ch.Listed.Hash != h {
			return r, fmt.Errorf("%w: the tool %q", ErrChangedAgain, ch.Tool)
		}
		delete(want, ch.Tool)
	}
	for t := range want {
		return r, fmt.Errorf("%w: the server lists no tool %q", ErrNothingToAccept, t)
	}
	if dryRun {
		return r, nil
	}
	taken := map[string]bool{}
	for _, p := range pins {
		taken[p.Action] = true
	}
	var next, accepted []Pin
	var removed []string
	for _, ch := range r.Changes {
		take := (ch.Kind == Changed || ch.Kind == New) && (len(tools) == 0 || slices.Contains(tools, ch.Tool))
		switch {
		case ch.Kind == Removed:
			removed = append(removed, ch.Tool)
		case take:
			act := ""
			if ch.Pin != nil {
				act = ch.Pin.Action
			} else {
				act = actionFor(ch.Tool, taken)
				taken[act] = true
			}
			p := Pin{Tool: ch.Tool, Action: act, Hash: ch.Listed.Hash, Definition: ch.Listed.Canonical, Accepted: e.now()}
			next = append(next, p)
			accepted = append(accepted, p)
		case ch.Pin != nil:
			next = append(next, *ch.Pin)
		}
	}
	good, left, err := e.valid(name, slices.Clone(accepted))
	if err != nil {
		return r, err
	}
	r.Left = append(r.Left, left...)
	bad := map[string]bool{}
	for _, p := range left {
		bad[p.Tool] = true
	}
	for i, p := range next {
		if bad[p.Tool] && !hasPin(pins, p) {
			// A changed tool whose new definition is refused keeps its old pin: stopped.
			if old := slices.IndexFunc(pins, func(q Pin) bool { return q.Tool == p.Tool }); old >= 0 {
				next[i] = pins[old]
			} else {
				next[i].Tool = ""
			}
		}
	}
	next = slices.DeleteFunc(next, func(p Pin) bool { return p.Tool == "" })
	for _, t := range removed {
		if err := deletePin(ctx, e.Store, name, t); err != nil {
			return r, err
		}
	}
	open, err := loadPending(ctx, e.Store, name)
	if err != nil {
		return r, err
	}
	for _, p := range good {
		if err := putPin(ctx, e.Store, name, p); err != nil {
			return r, fmt.Errorf("toolserver %s: save pin: %w", name, err)
		}
		if o, ok := open[p.Tool]; ok {
			err := e.Store.AnswerConsent(ctx, o.ConsentID, store.ConsentApproved, by, "", e.now())
			if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
				return r, fmt.Errorf("toolserver %s: answer the pin request: %w", name, err)
			}
			if err := e.Store.PutState(ctx, r.AppID, statePending+p.Tool, nil); err != nil {
				return r, err
			}
		}
	}
	if _, err := e.register(ctx, name, next); err != nil {
		return r, err
	}
	r.Accepted = good
	return r, nil
}

func hasPin(pins []Pin, p Pin) bool {
	return slices.ContainsFunc(pins, func(q Pin) bool { return q.Tool == p.Tool && q.Hash == p.Hash })
}

// Remove removes the tool server name: its app and every pin and setting. A running
// gateway stops its connection at its next registry reload.
func Remove(ctx context.Context, e *Env, name string) error {
	if _, err := LoadConfig(ctx, e.Store, name); err != nil {
		return err
	}
	if err := e.Registry.Remove(ctx, AppPrefix+name); err != nil && !errors.Is(err, registry.ErrNotFound) {
		return fmt.Errorf("toolserver %s: remove: %w", name, err)
	}
	return forget(ctx, e.Store, name)
}
