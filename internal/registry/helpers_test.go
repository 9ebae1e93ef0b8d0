package registry_test

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/manifest"
)

// trust is a KeySource: the keys trusted per app id, changeable while in use.
type trust struct {
	mu   sync.Mutex
	keys map[string][]ed25519.PublicKey
}

var errNoKey = errors.New("no trusted key for this app")

func (t *trust) Keys(appID string) ([]ed25519.PublicKey, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.keys[appID]) == 0 {
		return nil, errNoKey
	}
	return t.keys[appID], nil
}

func (t *trust) set(appID string, k ed25519.PublicKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys == nil {
		t.keys = map[string][]ed25519.PublicKey{}
	}
	t.keys[appID] = []ed25519.PublicKey{k}
}

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

// openStore opens a new SQLite file in the test's folder, closed when the test ends.
func openStore(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capgate.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// newRegistry opens a store and a registry on it.
func newRegistry(t *testing.T, keys manifest.KeySource) (*registry.Registry, *sqlite.Store) {
	t.Helper()
	s, _ := openStore(t)
	r, err := registry.New(t.Context(), s, keys)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r, s
}

// capability is one capability of a test manifest; fields are added on top.
func capability(id, sideEffects string, fields ...any) map[string]any {
	c := map[string]any{
		"id":           id,
		"name":         id,
		"description":  "A test capability.",
		"category":     "FILE_OPERATION",
		"parameters":   map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
		"returns":      map[string]any{"type": "object"},
		"side_effects": sideEffects,
	}
	for i := 0; i+1 < len(fields); i += 2 {
		c[fields[i].(string)] = fields[i+1]
	}
	return c
}

// manifestJSON is an unsigned manifest of app id with the capabilities.
func manifestJSON(t *testing.T, appID, version string, caps ...map[string]any) []byte {
	t.Helper()
	list := make([]any, len(caps))
	for i, c := range caps {
		list[i] = c
	}
	b, err := json.Marshal(map[string]any{
		"app_id":           appID,
		"version":          version,
		"manifest_version": "1.0",
		"capabilities":     list,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sign signs a manifest with priv.
func sign(t *testing.T, data []byte, priv ed25519.PrivateKey) []byte {
	t.Helper()
	doc, err := manifest.Load(data)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	signed, err := manifest.Sign(doc, priv)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return signed
}

func register(t *testing.T, r *registry.Registry, data []byte, alias string) registry.App {
	t.Helper()
	a, err := r.Register(t.Context(), data, alias)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	return a
}

// ids returns the capability ids of cs, in order.
func ids(cs []registry.Capability) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Cap.ID)
	}
	return out
}
