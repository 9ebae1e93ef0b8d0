package gateway

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"

	"github.com/capgate/capgate/internal/apps/calc"
	"github.com/capgate/capgate/internal/apps/editor"
	"github.com/capgate/capgate/internal/apps/files"
	"github.com/capgate/capgate/internal/apps/python"
	"github.com/capgate/capgate/internal/apps/settings"
	"github.com/capgate/capgate/internal/apps/solitaire"
	"github.com/capgate/capgate/internal/apps/syslog"
	"github.com/capgate/capgate/internal/apps/terminal"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// The built-in apps' trust bootstrap: on first start the gateway makes a local app key
// (DATA/apps.key), puts its public half in DATA/trusted/{app_id}.pub for each built-in app, and
// signs the built-in manifests with it at every start, so they register at Tier 1. An operator
// who removes a public key there drops that app to Tier 2.
const (
	AppKeyFile    = "apps.key"
	LocalTrustDir = "trusted"
	AppsStateDir  = "apps"      // the built-in apps' own state (the files app's undo area)
	WorkspaceDir  = "workspace" // the workspace inside the data folder that earlier versions used, no longer used: it would put the apps beside the keys
)

// keySources trusts the keys of every source.
type keySources []manifest.KeySource

// AppKeys are the keys a gateway on the data folder dataDir verifies apps' manifests with:
// its own folder of local keys (DATA/trusted, the built-in apps' and the developer's), then
// trustedDir's ("" for none).
func AppKeys(dataDir, trustedDir string) manifest.KeySource {
	ks := keySources{keys.TrustStore{Dir: filepath.Join(dataDir, LocalTrustDir)}}
	if trustedDir != "" {
		ks = append(ks, keys.TrustStore{Dir: trustedDir})
	}
	return ks
}

func (ks keySources) Keys(appID string) ([]ed25519.PublicKey, error) {
	var out []ed25519.PublicKey
	var errs []error
	for _, k := range ks {
		got, err := k.Keys(appID)
		if err != nil && !errors.Is(err, keys.ErrNoTrustedKey) {
			errs = append(errs, err)
		}
		out = append(out, got...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w", appID, keys.ErrNoTrustedKey)
	}
	return out, nil
}

// stateOf adapts the store's per-app state to an app's own State, counting each read and
// write (Gateway.AppStateOps).
type stateOf struct {
	s     store.State
	appID string
	ops   *atomic.Int64
}

func (st stateOf) Get(ctx context.Context, key string) ([]byte, error) {
	st.ops.Add(1)
	v, err := st.s.GetState(ctx, st.appID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, settings.ErrUnset
	}
	return v, err
}

func (st stateOf) Put(ctx context.Context, key string, value []byte) error {
	st.ops.Add(1)
	return st.s.PutState(ctx, st.appID, key, value)
}

// AppStateOps returns how many reads and writes the built-in apps made of their state in the
// store since Open: their own data model's share of the store's work, which benchmarks tell
// apart from the gateway's own.
func (g *Gateway) AppStateOps() int64 { return g.appStateOps.Load() }

// builtin is one of the apps capgate ships: its manifest and how to start its handler.
type builtin struct {
	id, alias, manifest string
	start               func(doc *manifest.Document) (sdk.Handler, error)
}

// builtins are the app fleet of the token document, each on its own data model: settings and
// the calculator's value in the store or in memory, files, the editor, the terminal and the
// python scripts in the workspace folder, the log in capgate's own log.
func (g *Gateway) builtins(st store.State) []builtin {
	ws := g.workspace
	return []builtin{
		{settings.AppID, settings.Alias, settings.Manifest, func(doc *manifest.Document) (sdk.Handler, error) {
			return settings.New(doc, stateOf{st, settings.AppID, &g.appStateOps}), nil
		}},
		{files.AppID, files.Alias, files.Manifest, func(doc *manifest.Document) (sdk.Handler, error) {
			return files.New(doc, ws, filepath.Join(g.cfg.DataDir, AppsStateDir, "files"))
		}},
		{editor.AppID, editor.Alias, editor.Manifest, func(doc *manifest.Document) (sdk.Handler, error) {
			return editor.New(doc, ws)
		}},
		{terminal.AppID, terminal.Alias, terminal.Manifest, func(doc *manifest.Document) (sdk.Handler, error) {
			if g.sandboxErr != nil {
				return nil, g.sandboxErr
			}
			return terminal.New(doc, ws, terminal.Options{Sandbox: g.sandbox, Hidden: g.hidden()})
		}},
		{python.AppID, python.Alias, python.Manifest, func(doc *manifest.Document) (sdk.Handler, error) {
			if g.sandboxErr != nil {
				return nil, g.sandboxErr
			}
			return python.New(doc, ws, python.Options{Sandbox: g.sandbox})
		}},
		{calc.AppID, calc.Alias, calc.Manifest, func(doc *manifest.Document) (sdk.Handler, error) {
			return calc.New(doc), nil
		}},
		{syslog.AppID, syslog.Alias, syslog.Manifest, func(doc *manifest.Document) (sdk.Handler, error) {
			return syslog.New(doc, g.ring), nil
		}},
		{solitaire.AppID, solitaire.Alias, solitaire.Manifest, func(doc *manifest.Document) (sdk.Handler, error) {
			return solitaire.New(doc, nil), nil
		}},
	}
}

// registerBuiltins signs and registers the built-in apps and starts their handlers. An app
// whose handler cannot start (a workspace it cannot open, a system it does not run on, the
// terminal and python without a sandbox) is left out with a warning and kept in
// g.notStarted: it stays registered, its calls are refused as not working right now, and
// the lists leave it out. The others run.
func (g *Gateway) registerBuiltins(ctx context.Context, st store.State) (map[string]sdk.Handler, error) {
	keyPath := filepath.Join(g.cfg.DataDir, AppKeyFile)
	key, err := loadOrCreate(keyPath)
	if err != nil {
		return nil, err
	}
	if err := pinIdentity(ctx, g.Store, "local app key", key.Public().(ed25519.PublicKey), keyPath); err != nil {
		return nil, err
	}
	trustDir := filepath.Join(g.cfg.DataDir, LocalTrustDir)
	handlers := map[string]sdk.Handler{}
	g.notStarted = map[string]bool{}
	for _, b := range g.builtins(st) {
		pubPath := filepath.Join(trustDir, b.id+".pub")
		if _, err := keys.LoadPublicKey(pubPath); err != nil {
			if err := keys.WritePublicKey(pubPath, key.Public().(ed25519.PublicKey), false); err != nil && !errors.Is(err, keys.ErrExists) {
				return nil, fmt.Errorf("gateway: trust the built-in %s: %w", b.id, err)
			}
		}
		doc, err := manifest.Load([]byte(b.manifest))
		if err != nil {
			return nil, fmt.Errorf("gateway: built-in %s: %w", b.id, err)
		}
		signed, err := manifest.Sign(doc, key)
		if err != nil {
			return nil, err
		}
		app, err := g.Registry.Register(ctx, signed, b.alias)
		if err != nil {
			return nil, fmt.Errorf("gateway: register the built-in %s: %w", b.id, err)
		}
		h, err := b.start(app.Doc)
		if err != nil {
			g.log.Warn("a built-in app cannot start; it is not working, and its calls are refused as METHOD_NOT_FOUND", "app", b.id, "err", err)
			g.notStarted[b.id] = true
			continue
		}
		handlers[b.id] = h
		if c, ok := h.(io.Closer); ok {
			g.closers = append(g.closers, c)
		}
	}
	return handlers, nil
}
