package gateway

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/capgate/capgate/internal/apps/settings"
	"github.com/capgate/capgate/internal/registry"
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
)

// keySources trusts the keys of every source.
type keySources []manifest.KeySource

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

// stateOf adapts the store's per-app state to an app's own State.
type stateOf struct {
	s     store.State
	appID string
}

func (st stateOf) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := st.s.GetState(ctx, st.appID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, settings.ErrUnset
	}
	return v, err
}

func (st stateOf) Put(ctx context.Context, key string, value []byte) error {
	return st.s.PutState(ctx, st.appID, key, value)
}

// registerBuiltins signs and registers the built-in apps and returns their handlers.
func registerBuiltins(ctx context.Context, dataDir string, reg *registry.Registry, st store.State) (map[string]sdk.Handler, error) {
	key, err := loadOrCreate(filepath.Join(dataDir, AppKeyFile))
	if err != nil {
		return nil, err
	}
	trustDir := filepath.Join(dataDir, LocalTrustDir)
	handlers := map[string]sdk.Handler{}
	for _, b := range []struct{ id, alias, manifest string }{
		{settings.AppID, settings.Alias, settings.Manifest},
	} {
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
		app, err := reg.Register(ctx, signed, false, b.alias)
		if err != nil {
			return nil, fmt.Errorf("gateway: register the built-in %s: %w", b.id, err)
		}
		switch b.id {
		case settings.AppID:
			handlers[b.id] = settings.New(app.Doc, stateOf{st, b.id})
		}
	}
	return handlers, nil
}
