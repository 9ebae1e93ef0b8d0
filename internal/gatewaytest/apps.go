package gatewaytest

import (
	"context"
	"crypto/ed25519"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
)

// oneKey is a manifest.KeySource that trusts its one key for every app id: a registry's
// trust without a trusted-keys folder.
type oneKey struct{ key ed25519.PublicKey }

func (o oneKey) Keys(string) ([]ed25519.PublicKey, error) { return []ed25519.PublicKey{o.key}, nil }

var _ manifest.KeySource = oneKey{}

// NewKey generates a fresh Ed25519 key to sign test apps' manifests with.
func NewKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	k, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Registry is a registry on st that trusts one fresh key for every app id, with the
// manifest doc signed with that key and registered under alias at Tier 1. It returns the
// registry, the app and the key, which signs any further app the test registers.
func Registry(t testing.TB, st store.Apps, doc, alias string) (*registry.Registry, registry.App, ed25519.PrivateKey) {
	t.Helper()
	key := NewKey(t)
	reg, err := registry.New(context.Background(), st, oneKey{key.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	return reg, Register(t, reg, "", key, doc, alias), key
}

// Register signs the manifest doc with key and registers it in reg under alias; it must come
// out at Tier 1. With trusted not "", key's public half is first trusted for the app's id in
// that trusted-keys folder (keys.TrustStore's <app id>.pub, replacing a key trusted before),
// as an operator trusts an app's key; with trusted "", reg must trust key already (a registry
// made by Registry does).
func Register(t testing.TB, reg *registry.Registry, trusted string, key ed25519.PrivateKey, doc, alias string) registry.App {
	t.Helper()
	d, err := manifest.Load([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if trusted != "" {
		path := filepath.Join(trusted, string(d.Manifest().AppID)+".pub")
		if err := keys.WritePublicKey(path, key.Public().(ed25519.PublicKey), true); err != nil {
			t.Fatal(err)
		}
	}
	signed, err := manifest.Sign(d, key)
	if err != nil {
		t.Fatal(err)
	}
	app, err := reg.Register(context.Background(), signed, alias)
	if err != nil {
		t.Fatalf("register %s: %v", alias, err)
	}
	if app.Tier != manifest.Tier1 {
		t.Fatalf("%s registered at tier %d (%s), want Tier 1", alias, app.Tier, app.Reason)
	}
	return app
}

// The probe app, registered signed (Tier 1), and the liar app, the same capabilities under
// another id registered unsigned (Tier 2), which tests register when they need them.
const (
	ProbeID = "org.example.probe"
	LiarID  = "org.example.liar"
)

// ProbeManifest is what an attacker would try to pass off as a low-risk read, under appID: a
// medium-risk read and a low-risk write, beside a real low-risk read.
func ProbeManifest(appID string) string {
	return strings.ReplaceAll(`{"app_id":"APP","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"probe.APP.look","name":"Look","description":"Reads.","category":"STATE_QUERY","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","risk":"low","permission":"app.probe.look"},
 {"id":"probe.APP.stare","name":"Stare","description":"Reads at medium risk.","category":"STATE_QUERY","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","risk":"medium","permission":"app.probe.stare"},
 {"id":"probe.APP.scribble","name":"Scribble","description":"Writes, claiming low risk.","category":"TEXT_INPUT","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"write","risk":"low","undo_window_ms":1000,"permission":"app.probe.scribble"}
]}`, "APP", appID)
}
