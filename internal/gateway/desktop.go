package gateway

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/desktop"
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
	st    store.State
	reg   *registry.Registry
	log   *slog.Logger
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
			why := d.shapeChange(ctx, bus, a)
			d.mu.Lock()
			if a.changed != why && why != "" {
				d.log.Warn("a desktop app's accessibility tree changed: it stops until it is added again", "app", id, "why", why)
			}
			a.changed = why
			d.mu.Unlock()
		}
	}
}

// shapeChange says why app a no longer matches what was added ("" when it does, or when it
// is not running now: a call then says so).
func (d *desktops) shapeChange(ctx context.Context, bus *desktop.Bus, a *desktopApp) string {
	apps, err := bus.Apps(ctx)
	if err != nil {
		return ""
	}
	for _, app := range apps {
		if app.Name != a.rec.Name {
			continue
		}
		tree, err := bus.Walk(ctx, app)
		if err != nil {
			return ""
		}
		got, err := desktop.Derive(tree)
		if err != nil {
			return "its tree no longer derives a manifest: " + err.Error()
		}
		if got.Shape != a.rec.Shape {
			return "its accessibility tree changed since it was added (run capgate desktop add " + a.rec.Name + " to review it)"
		}
		return ""
	}
	return ""
}
