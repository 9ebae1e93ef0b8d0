package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/capgate/capgate/internal/lock"
	"github.com/capgate/capgate/internal/plugin"
	supervised "github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

// syncProviders makes the provider processes follow what is installed: the plugins of the
// lockfile are registered as apps with their kept package as their program (syncPlugins),
// then every app's provider is started, restarted or stopped (procs.sync, which stops an
// old process before its package goes), then the packages the lock no longer names are
// removed. One runs at a time.
func (g *Gateway) syncProviders(ctx context.Context) {
	g.providersMu.Lock()
	defer g.providersMu.Unlock()
	f, err := lock.Load(g.cfg.DataDir)
	if err != nil {
		g.log.Warn("the lockfile cannot be read: installed plugins are not started", "err", err)
		f = nil
	}
	if f != nil {
		if err := g.syncPlugins(ctx, f); err != nil && ctx.Err() == nil {
			g.log.Warn("plugin sync failed", "err", err)
		}
	}
	if err := g.procs.sync(ctx, g.Store, g.Registry, g.log, g.Audit); err != nil && ctx.Err() == nil {
		g.log.Warn("provider sync failed", "err", err)
	}
	if f != nil {
		if err := plugin.Prune(g.cfg.DataDir); err != nil {
			g.log.Warn("removing the packages of removed plugins", "err", err)
		}
	}
	// A plugin installed or upgraded brings its test record, made at install.
	g.loadEvaluations(ctx)
}

// syncPlugins registers each installed plugin that runs (a capability provider) as an app
// whose program is its kept package's, and removes the apps of plugins no longer installed.
// A plugin whose package cannot be run (not kept, changed, without a program, or whose app
// cannot be registered) is not registered, and its refusal is recorded once, with why.
func (g *Gateway) syncPlugins(ctx context.Context, f *lock.File) error {
	progs, err := supervised.ListPrograms(ctx, g.Store)
	if err != nil {
		return err
	}
	var errs []error
	ids := make([]string, 0, len(f.Plugins))
	for id := range f.Plugins {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	installed := map[string]bool{}
	for _, id := range ids {
		e := f.Plugins[id]
		if !plugin.Runs(e) {
			continue
		}
		installed[id] = true
		if err := g.syncPlugin(ctx, e, progs[id]); err != nil {
			g.pluginRefused(ctx, id, err)
			if cur, ok := progs[id]; ok && cur.Plugin {
				// What ran before is not left running in its place.
				errs = append(errs, g.forgetPlugin(ctx, id))
			}
		}
	}
	for id, p := range progs {
		if p.Plugin && !installed[id] {
			errs = append(errs, g.forgetPlugin(ctx, id))
		}
	}
	return errors.Join(errs...)
}

// syncPlugin registers the installed plugin e with its program, unless it is already.
func (g *Gateway) syncPlugin(ctx context.Context, e lock.Entry, cur supervised.Program) error {
	pp, err := plugin.ProgramOf(g.cfg.DataDir, e)
	if err != nil {
		return err
	}
	want := supervised.Program{Command: pp.Command, Digest: pp.Digest, Dir: pp.Dir, Plugin: true}
	doc, err := manifest.Parse(e.Manifest)
	if err != nil {
		return fmt.Errorf("the locked manifest does not parse: %w", err)
	}
	app, ok := g.Registry.App(e.AppID)
	if ok && !cur.Plugin {
		return errors.New("an app of the same id is registered otherwise (capgate app register): remove it first")
	}
	if !ok || app.Doc == nil || !bytes.Equal(app.Doc.Raw(), doc.Raw()) {
		alias := ""
		if ok {
			alias = app.Alias
		}
		if _, err := g.Registry.Register(ctx, e.Manifest, alias); err != nil {
			return fmt.Errorf("its app cannot be registered: %w", err)
		}
	}
	if !sameProgram(cur, want) || !cur.Plugin {
		if err := supervised.SaveProgram(ctx, g.Store, e.AppID, want); err != nil {
			return err
		}
	}
	return nil
}

// forgetPlugin removes the app of a plugin no longer installed, and its program: procs.sync
// stops its process.
func (g *Gateway) forgetPlugin(ctx context.Context, id string) error {
	err := g.Registry.Remove(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	return errors.Join(err, supervised.DeleteProgram(ctx, g.Store, id))
}

// pluginRefused records that the installed plugin id is not run, and why: in the audit log
// when the why is new, and as its status.
func (g *Gateway) pluginRefused(ctx context.Context, id string, why error) {
	if s, err := supervised.LoadStatus(ctx, g.Store, id); err == nil && !s.Working && s.Why == why.Error() {
		return // recorded already
	}
	refused(ctx, g.Audit, g.log, id, why)
	saveStatus(g.Store, id, g.log, false, why)
}

// lockStamp is what tells a lockfile changed: its size, modification time and file (a lock
// is replaced by a rename).
type lockStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(dataDir string) lockStamp {
	fi, err := os.Stat(filepath.Join(dataDir, lock.FileName))
	if err != nil {
		return lockStamp{}
	}
	return lockStamp{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}
}

// kickProviders asks followProviders for a sync without waiting for it.
func (g *Gateway) kickProviders() {
	select {
	case g.providersKick <- struct{}{}:
	default:
	}
}

// followProviders syncs the providers when asked (a registry reload: an app registered to run
// out of process elsewhere) and when the lockfile changes (capgate plugin install, upgrade,
// approve or remove, on this gateway's page or the command line), on a goroutine of its own
// from Open to Close, so that the sweep never waits on a provider's start.
func (g *Gateway) followProviders(ctx context.Context) {
	t := time.NewTicker(LockPollInterval)
	defer t.Stop()
	last := stampOf(g.cfg.DataDir)
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.providersKick:
		case <-t.C:
			now := stampOf(g.cfg.DataDir)
			if now == last {
				continue
			}
		}
		last = stampOf(g.cfg.DataDir)
		g.syncProviders(ctx)
	}
}
