package keys

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"
)

// TestInteropPublicKey loads the public key that OpenSSL wrote in
// testdata/interop (see its README.md) and checks the signature OpenSSL made
// with it, so the raw key format is proven against another implementation.
func TestInteropPublicKey(t *testing.T) {
	dir := filepath.Join("..", "testdata", "interop")
	pub, err := LoadPublicKey(filepath.Join(dir, "org.example.notes.pub"))
	if err != nil {
		t.Fatal(err)
	}
	const want = "sha256:b36542c942f5be8b33c4ff28a6f0907aecfbc6beb03f79f75d5c6fd90f7041cd"
	if got := Fingerprint(pub); got != want {
		t.Errorf("Fingerprint = %s, want %s (the value in testdata/interop/README.md)", got, want)
	}
	msg, err := os.ReadFile(filepath.Join(dir, "manifest.canonical"))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := os.ReadFile(filepath.Join(dir, "manifest.sig"))
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.Verify(pub, msg, sig) {
		t.Fatal("OpenSSL's signature does not verify with the key as loaded")
	}

	// The same key in a trust store, as an operator would install it.
	trusted := t.TempDir()
	if err := WritePublicKey(filepath.Join(trusted, "org.example.notes.pub"), pub, false); err != nil {
		t.Fatal(err)
	}
	ks, err := TrustStore{Dir: trusted}.Keys("org.example.notes")
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 1 || !ed25519.Verify(ks[0], msg, sig) {
		t.Fatal("trust store does not return the interop key")
	}
}
