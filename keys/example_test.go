package keys_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/capgate/capgate/keys"
)

// A key rotation: the old key stays trusted while the new one is added in
// {app_id}.d, so manifests signed by either verify during the overlap.
func ExampleTrustStore_Keys() {
	dir, err := os.MkdirTemp("", "trusted")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	oldKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey)
	newKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32)).Public().(ed25519.PublicKey)
	if err := keys.WritePublicKey(filepath.Join(dir, "org.example.notes.pub"), oldKey, false); err != nil {
		log.Fatal(err)
	}
	if err := keys.WritePublicKey(filepath.Join(dir, "org.example.notes.d", "2026-08.pub"), newKey, false); err != nil {
		log.Fatal(err)
	}

	trusted, err := keys.TrustStore{Dir: dir}.Keys("org.example.notes")
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range trusted {
		fmt.Println(keys.Fingerprint(k)[:23] + "...")
	}
	// Output:
	// sha256:34750f98bd59fcfc...
	// sha256:6a3803d5f059902a...
}
