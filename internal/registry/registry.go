package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

// Registry is the apps capgate knows and their capabilities, indexed. It is safe for
// concurrent use: lookups read an immutable snapshot through an atomic pointer and never
// wait; writes (Register, SetEnabled, Remove, Reload) are serialized, go to the store first,
// and publish a new snapshot only when the store accepted them.
type Registry struct {
	store store.Apps
	keys  manifest.KeySource
	mu    sync.Mutex // serializes writes, so that the snapshot follows the store's order
	snap  atomic.Pointer[snapshot]
	rev   int64 // with mu held: the store revision ReloadAt last loaded at
	now   func() time.Time
	// stopped holds the ids of capabilities whose provider's definition no longer matches
	// its pin (SetPinned): this process's view of its own connections, never stored, and
	// kept across reloads.
	stopped  sync.Map     // capability id → struct{}
	nstopped atomic.Int64 // how many ids stopped holds: Pinned looks only when some are
	version  atomic.Uint64
	// check, when set, holds a manifest to rules beyond its own (SetCheck).
	check atomic.Pointer[func(*manifest.Manifest) manifest.Problems]
}

// SetCheck makes Register hold every manifest it registers to check as well as to the
// manifest's own rules: the gateway holds capabilities that implement a definition to it. A
// manifest check refuses is not registered, and its problems are Register's error.
func (r *Registry) SetCheck(check func(*manifest.Manifest) manifest.Problems) {
	r.check.Store(&check)
}

// publish makes s the registry's state and moves Version.
func (r *Registry) publish(s *snapshot) {
	r.snap.Store(s)
	r.version.Add(1)
}

// Version moves whenever what the registry answers may change: an app registered, changed,
// enabled, disabled or removed, a reload, a capability's pin set either way. It moves after
// the change is visible, so that a reader who reads Version, then the registry, and later
// finds Version unchanged, read what is still current.
func (r *Registry) Version() uint64 { return r.version.Load() }

// New returns a registry of every app in s, each manifest parsed and verified again against
// keys: one that no longer verifies (its key is no longer trusted, say) comes back at Tier 2
// with the reason, and one that no longer parses or passes the format's rules is skipped and
// listed by Skipped. A nil keys trusts no key, so every app is Tier 2. New fails only when
// the store cannot be read.
func New(ctx context.Context, s store.Apps, keys manifest.KeySource) (*Registry, error) {
	if s == nil {
		return nil, errors.New("registry: nil store")
	}
	r := &Registry{store: s, keys: keys, now: time.Now}
	r.publish(build(map[string]*App{}, nil))
	if err := r.Reload(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload replaces the registry's view with the store's, verifying every manifest again as
// New does: for writes made through another Registry on the same store (another replica),
// and for a change of the trusted keys. On error the view is unchanged.
func (r *Registry) Reload(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	recs, err := r.store.ListApps(ctx)
	if err != nil {
		return fmt.Errorf("registry: load apps: %w", err)
	}
	apps := make(map[string]*App, len(recs))
	var skipped []Skipped
	for _, rec := range recs {
		a, err := r.load(rec)
		if err != nil {
			skipped = append(skipped, Skipped{AppID: rec.AppID, Err: err})
			continue
		}
		apps[a.ID.String()] = a
	}
	slices.SortFunc(skipped, func(a, b Skipped) int { return strings.Compare(a.AppID, b.AppID) })
	r.publish(build(apps, skipped))
	return nil
}

// ReloadAt reloads as Reload does when rev, the store's revision read before this call (as
// revcache's caches tag their fills), is newer than the one the view was last loaded at: the
// gateway calls it on every sync, and it reads the store only when the apps may have
// changed. A reload that fails leaves the view and its revision as they were, so the next
// call tries again.
func (r *Registry) ReloadAt(ctx context.Context, rev int64) (bool, error) {
	r.mu.Lock()
	stale := rev > r.rev
	r.mu.Unlock()
	if !stale {
		return false, nil
	}
	if err := r.Reload(ctx); err != nil {
		return false, err
	}
	r.mu.Lock()
	r.rev = max(r.rev, rev)
	r.mu.Unlock()
	return true, nil
}

// load parses and verifies a stored app's manifest.
func (r *Registry) load(rec store.App) (*App, error) {
	doc, err := manifest.Parse(rec.Manifest)
	if err != nil {
		return nil, err
	}
	if ps := doc.Validate(); len(ps) > 0 {
		return nil, ps
	}
	if doc.Manifest().AppID != rec.AppID {
		return nil, ErrStoredAppMismatch
	}
	v := manifest.Verify(doc, r.keys)
	return &App{
		ID: doc.Manifest().ParsedAppID(), Alias: rec.Alias, Tier: v.Tier, Reason: v.Reason, Detail: v.Detail,
		Enabled: rec.Enabled, Doc: doc,
	}, nil
}

// Register verifies an app's manifest and stores it: data is its JSON (the YAML authoring
// form is refused as not JSON, its problem naming the command that signs it into JSON). A
// manifest that does not parse or breaks the format's rules is refused with
// manifest.Problems, and nothing is stored. One that verifies against a trusted key of its
// app_id is Tier 1; any other is Tier 2 with the reason, and usable as such.
//
// alias is the app's short name for the IPC "app" field; it must match
// ^[a-z][a-z0-9_-]{0,31}$ (ErrInvalidAlias) and be no other app's (ErrAliasTaken). "" keeps
// the alias of an app already registered under this app_id, and for a new app means the last
// label of its app_id ("terminal" for "org.capgate.terminal").
//
// Registering an app_id again replaces the app with the new version, keeping whether it is
// enabled (a new app is enabled); its capabilities are re-indexed at once. The returned App
// is a copy.
func (r *Registry) Register(ctx context.Context, data []byte, alias string) (App, error) {
	doc, err := parse(data)
	if err != nil {
		return App{}, err
	}
	if ps := doc.Validate(); len(ps) > 0 {
		return App{}, ps
	}
	if check := r.check.Load(); check != nil {
		if ps := (*check)(doc.Manifest()); len(ps) > 0 {
			return App{}, ps
		}
	}
	v := manifest.Verify(doc, r.keys)
	id := doc.Manifest().ParsedAppID() // valid: Validate passed
	key := id.String()

	r.mu.Lock()
	defer r.mu.Unlock()
	enabled := true
	prev, err := r.store.GetApp(ctx, key)
	switch {
	case err == nil:
		enabled = prev.Enabled
		if alias == "" {
			alias = prev.Alias
		}
	case !errors.Is(err, store.ErrNotFound):
		return App{}, fmt.Errorf("registry: register: %w", err)
	}
	if alias == "" {
		alias = defaultAlias(id)
		if err := checkAlias(alias); err != nil {
			return App{}, fmt.Errorf("registry: register: the last label of the app_id is no alias, give one: %w", err)
		}
	}
	if err := checkAlias(alias); err != nil {
		return App{}, fmt.Errorf("registry: register: alias: %w", err)
	}
	old := r.snap.Load()
	if other, ok := old.aliases[alias]; ok && other.ID != id {
		return App{}, fmt.Errorf("registry: register: alias: %w", ErrAliasTaken)
	}
	a := &App{
		ID: id, Alias: alias, Tier: v.Tier, Reason: v.Reason, Detail: v.Detail,
		Enabled: enabled, Doc: doc,
	}
	err = r.store.PutApp(ctx, store.App{
		AppID: key, Alias: alias, Tier: int(v.Tier), Reason: string(v.Reason),
		Manifest: doc.Raw(), Enabled: enabled, Updated: r.now(),
	})
	if errors.Is(err, store.ErrExists) {
		return App{}, fmt.Errorf("registry: register: alias: %w: %w", ErrAliasTaken, err)
	}
	if err != nil {
		return App{}, fmt.Errorf("registry: register: %w", err)
	}
	r.publish(old.with(key, func(apps map[string]*App) { apps[key] = a }))
	return *a, nil
}

// parse reads a manifest's JSON, turning a syntax error into the one problem it is, so that
// every refused manifest is manifest.Problems.
func parse(data []byte) (*manifest.Document, error) {
	doc, err := manifest.Parse(data)
	if err != nil {
		var se *manifest.SyntaxError
		if errors.As(err, &se) {
			return nil, manifest.Problems{se.Problem()}
		}
		return nil, fmt.Errorf("registry: register: %w", err)
	}
	return doc, nil
}

// SetEnabled enables or disables an app. Disabling hides its capabilities from Capability,
// Method, ByPermission and Covered; App and List still show it, with Enabled false. An app
// the store does not hold is ErrNotFound.
func (r *Registry) SetEnabled(ctx context.Context, appID string, enabled bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.store.SetAppEnabled(ctx, appID, enabled); err != nil {
		return storeError("set enabled", err)
	}
	old := r.snap.Load()
	cur, ok := old.apps[appID]
	if !ok || cur.Enabled == enabled {
		// Not indexed (skipped at load, or written by another replica): the store holds the
		// change and Reload will pick it up.
		return nil
	}
	next := *cur
	next.Enabled = enabled
	r.publish(old.with(appID, func(apps map[string]*App) { apps[appID] = &next }))
	return nil
}

// Remove deletes an app and its capabilities. An app the store does not hold is
// ErrNotFound. The app's state in the store is kept.
func (r *Registry) Remove(ctx context.Context, appID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.store.DeleteApp(ctx, appID); err != nil {
		return storeError("remove", err)
	}
	old := r.snap.Load()
	r.publish(old.with(appID, func(apps map[string]*App) { delete(apps, appID) }))
	return nil
}

func storeError(op string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("registry: %s: %w: %w", op, ErrNotFound, err)
	}
	return fmt.Errorf("registry: %s: %w", op, err)
}

// SetPinned records whether a capability's provider still matches its pin: a tool server's
// tool whose name, description, schemas or annotations changed since it was accepted is set
// false, and Pinned reports it until it is set true again. Capabilities never set are
// pinned. The record lives in this Registry only (each process watches its own
// connections) and survives Reload.
func (r *Registry) SetPinned(capabilityID string, pinned bool) {
	if pinned {
		if _, was := r.stopped.LoadAndDelete(capabilityID); was {
			r.nstopped.Add(-1)
			r.version.Add(1)
		}
	} else if _, was := r.stopped.LoadOrStore(capabilityID, struct{}{}); !was {
		r.nstopped.Add(1)
		r.version.Add(1)
	}
}

// Pinned reports whether a capability is not stopped by SetPinned(id, false). The broker
// refuses a capability that is not pinned (METHOD_NOT_FOUND), and the fronts do not list it.
func (r *Registry) Pinned(capabilityID string) bool {
	if r.nstopped.Load() == 0 { // none stopped, the usual case: no lookup
		return true
	}
	_, stopped := r.stopped.Load(capabilityID)
	return !stopped
}
