package operator_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/operator"
)

func TestNewClientKey(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		key, hash, err := operator.NewClientKey()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.Strict().DecodeString(strings.TrimPrefix(key, operator.ClientKeyPrefix))
		if !strings.HasPrefix(key, "cgk_") || err != nil || len(raw) != 32 {
			t.Fatalf("a key of the wrong form (%d random bytes, %v)", len(raw), err)
		}
		if hash != operator.KeyHash(key) || strings.Contains(hash, key) {
			t.Fatal("the key's hash is not KeyHash's")
		}
		if seen[key] {
			t.Fatal("a key minted twice")
		}
		seen[key] = true
		id, err := operator.NewClientID()
		if err != nil {
			t.Fatal(err)
		}
		if raw, err := base64.RawURLEncoding.Strict().DecodeString(strings.TrimPrefix(id, "cl_")); !strings.HasPrefix(id, "cl_") || err != nil || len(raw) != 9 {
			t.Fatalf("client id %q", id)
		}
		if seen[id] {
			t.Fatalf("client id %q minted twice", id)
		}
		seen[id] = true
	}
}

// KeyHash is the store's form of a key: the stored hashes of every existing client depend
// on it, so it is pinned to a vector (SHA-256 of "abc", FIPS 180-2).
func TestKeyHash(t *testing.T) {
	if got, want := operator.KeyHash("abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("KeyHash(abc) = %s, want %s", got, want)
	}
}
