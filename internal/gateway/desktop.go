package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/desktop"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// desktopRetry is how long after a failed connection to the accessibility bus the next
// call tries again, so that a session without one costs a call nothing.
const desktopRetry = 5 * time.Second

// DefaultDesktopRecheck is how often each desktop app in use is walked again and held against
// the shape it was added with: a changed window is noticed within it.
const DefaultDesktopRecheck = 10 * time.Second

// desktops are the desktop apps added with `capgate desktop add`: each runs through its
// accessibility interfaces (package desktop), on the accessibility bus of the session the
// gateway runs in. An app whose tree changed shape since it was added stops working until
// it is added again, which shows the person the new capabilities.
type desktops struct {
	st    store.Store
	reg   *registry.Registry
	log   *slog.Logger
	audit operator.Recorder
	every time.Duration // Config.DesktopRecheck

	mu      sync.Mutex
	bus     *desktop.Bus
	tried   time.Time
	byApp   map[string]*desktopApp
	closing bool
}

type desktopApp struct {
	doc     *manifest.Document
	rec     desktop.Record
	h       *desktop.Handler
	changed string // why it no longer matches what was added, "" while it does
	// declined is the shape whose review the person declined (or let expire): no other
	// review is opened for it, only for a shape that changes again.
	declined string
}

// connect returns the bus, connecting when it is time to try; d.mu is held.
func (d *desktops) connect() *desktop.Bus {
	if d.bus != nil || d.closing || time.Since(d.tried) < desktopRetry {
		return d.bus
	}
	d.tried = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, err := desktop.Connect(ctx)
	if err != nil {
		d.log.Debug("desktop apps: no accessibility bus", "err", err)
		return nil
	}
	d.bus = b
	return b
}

// provider is the handler of a desktop app: ok false for an app id that is not one.
func (d *desktops) provider(appID string) (sdk.Handler, bool, bool) {
	if !strings.HasPrefix(appID, desktop.AppPrefix) {
		return nil, false, false
	}
	app, ok := d.reg.App(appID)
	if !ok || app.Doc == nil {
		return nil, false, true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if a := d.byApp[appID]; a != nil && a.doc == app.Doc {
		return a.h, a.changed == "", true
	}
	rec, err := desktop.LoadRecord(context.Background(), d.st, appID)
	if err != nil {
		return nil, false, true
	}
	bus := d.connect()
	if bus == nil {
		return nil, false, true
	}
	if d.byApp == nil {
		d.byApp = map[string]*desktopApp{}
	}
	a := &desktopApp{doc: app.Doc, rec: rec, h: desktop.NewHandler(bus, rec.Name, app.Doc, rec.Derived())}
	d.byApp[appID] = a
	return a.h, true, true
}

// recheck walks each desktop app in use again and stops the ones whose shape changed.
func (d *desktops) recheck(ctx context.Context) {
	every := d.every
	if every <= 0 {
		every = DefaultDesktopRecheck
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			d.mu.Lock()
			d.closing = true
			if d.bus != nil {
				d.bus.Close()
			}
			d.mu.Unlock()
			return
		case <-tick.C:
		}
		d.mu.Lock()
		bus, apps := d.bus, make(map[string]*desktopApp, len(d.byApp))
		for id, a := range d.byApp {
			apps[id] = a
		}
		d.mu.Unlock()
		if bus == nil {
			continue
		}
		for id, a := range apps {
			why, now := d.shapeChange(ctx, bus, a)
			d.mu.Lock()
			if a.changed != why && why != "" {
				d.log.Warn("a desktop app's accessibility tree changed: it stops until the person accepts what it offers now", "app", id, "why", why)
			}
			a.changed = why
			d.mu.Unlock()
			if why != "" {
				d.review(ctx, a, now, why)
			}
		}
	}
}

// review opens a review of app a, whose tree now derives now (nil when it derives nothing),
// when none is open; and registers what the tree offers once the person approved it.
func (d *desktops) review(ctx context.Context, a *desktopApp, now *desktop.Derived, why string) {
	r, err := desktop.LoadReview(ctx, d.st, a.rec.AppID)
	switch {
	case err == nil:
		c, err := d.st.GetConsent(ctx, r.ConsentID)
		if err != nil {
			return
		}
		switch c.State {
		case store.ConsentPending:
			return
		case store.ConsentApproved:
			app, _ := d.reg.App(a.rec.AppID)
			alias := ""
			if app != nil {
				alias = app.Alias
			}
			if err := desktop.SaveRecord(ctx, d.st, r.Record); err != nil {
				d.log.Warn("desktop apps: the accepted record cannot be written", "app", a.rec.AppID, "err", err)
				return
			}
			if _, err := d.reg.Register(ctx, r.Manifest, alias); err != nil {
				d.log.Warn("desktop apps: the accepted manifest cannot be registered", "app", a.rec.AppID, "err", err)
				return
			}
			d.mu.Lock()
			delete(d.byApp, a.rec.AppID)
			d.mu.Unlock()
		default:
			d.mu.Lock()
			a.declined = r.Record.Shape
			d.mu.Unlock()
		}
		_ = desktop.DeleteReview(ctx, d.st, a.rec.AppID)
		return
	case !errors.Is(err, store.ErrNotFound):
		return
	}
	if now == nil || now.Shape == a.declined {
		return
	}
	lines := desktop.Difference(a.rec.Elements, now.Elements)
	id := consentID()
	req := consent.Request{
		ClientID: "capgate:desktop", ClientName: "capgate (desktop app " + a.rec.Name + ")", Kind: desktop.KindReview,
		Summary: "The accessibility tree of the desktop app " + strconv.Quote(a.rec.Name) + " changed since it was added: it is stopped " +
			"until you accept what it offers now. Approve to register its capabilities as shown (or run: capgate desktop add " + a.rec.Name + ").",
		Difference: lines, SideEffects: "system", Risk: "high", Reversibility: consent.Irreversible,
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return
	}
	if d.audit != nil {
		rec := audit.Record{Action: "desktop.changed", App: a.rec.AppID, ClientID: req.ClientID, ConsentID: id, Kind: audit.KindDecision,
			Decision: audit.DecisionDeny, Code: "METHOD_NOT_FOUND", Result: "stopped", Explanation: why}
		if _, err := d.audit.Append(ctx, rec); err != nil {
			d.log.Warn("desktop apps: a change cannot be recorded", "app", a.rec.AppID, "err", err)
		}
	}
	at := time.Now()
	if err := d.st.PutConsent(ctx, store.Consent{ID: id, ClientID: req.ClientID, Kind: desktop.KindReview, Payload: payload,
		State: store.ConsentPending, Created: at, Expires: at.Add(desktopReviewTTL)}); err != nil {
		d.log.Warn("desktop apps: the review cannot be written", "app", a.rec.AppID, "err", err)
		return
	}
	if err := desktop.SaveReview(ctx, d.st, desktop.Review{ConsentID: id, Record: desktop.RecordOf(now, a.rec.Name, at), Manifest: now.Manifest}); err != nil {
		d.log.Warn("desktop apps: the review cannot be remembered", "app", a.rec.AppID, "err", err)
	}
}

// desktopReviewTTL is how long a desktop app's review waits for the person: the app is
// stopped meanwhile, and a week lets them come back to it.
const desktopReviewTTL = 7 * 24 * time.Hour

// consentID is a fresh consent request id, of the form consent.ValidID takes.
func consentID() string {
	var b [12]byte
	rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// shapeChange says why app a no longer matches what was added ("" when it does, or when it
// is not running now: a call then says so), with what its tree derives now.
func (d *desktops) shapeChange(ctx context.Context, bus *desktop.Bus, a *desktopApp) (string, *desktop.Derived) {
	apps, err := bus.Apps(ctx)
	if err != nil {
		return "", nil
	}
	for _, app := range apps {
		if app.Name != a.rec.Name {
			continue
		}
		tree, err := bus.Walk(ctx, app)
		if err != nil {
			return "", nil
		}
		got, err := desktop.Derive(tree)
		if err != nil {
			return "its tree no longer derives a manifest: " + err.Error(), nil
		}
		if got.Shape != a.rec.Shape {
			return "its accessibility tree changed since it was added: the person reviews what it offers now (the requests page)", got
		}
		return "", nil
	}
	return "", nil
}
