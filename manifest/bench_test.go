package manifest_test

import (
	"crypto/ed25519"
	"encoding/json"
	"testing"

	"github.com/capgate/capgate/internal/bench"
	"github.com/capgate/capgate/manifest"
)

// BenchmarkLoadAndVerify100 loads and verifies a signed 100-capability manifest: parse,
// decode and rules, canonicalize, check every schema, check the signature. After the first
// run the schemas come from the compiled-schema cache, as when a gateway re-verifies.
func BenchmarkLoadAndVerify100(b *testing.B) { benchLoad(b, false) }

// BenchmarkLoadAndVerify100Cold is BenchmarkLoadAndVerify100 with every schema compiled.
func BenchmarkLoadAndVerify100Cold(b *testing.B) { benchLoad(b, true) }

func benchLoad(b *testing.B, cold bool) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	data, err := bench.SignedManifest(100, priv)
	if err != nil {
		b.Fatal(err)
	}
	keys := oneKey{pub}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if cold {
			manifest.ResetSchemaCache()
		}
		if v := manifest.VerifyBytes(data, keys); !v.Trusted() {
			b.Fatal(v)
		}
	}
}

// BenchmarkFloor100 is the floor the goal is measured against: encoding/json decoding the
// same bytes plus one ed25519.Verify.
func BenchmarkFloor100(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	data, err := bench.SignedManifest(100, priv)
	if err != nil {
		b.Fatal(err)
	}
	sig := ed25519.Sign(priv, data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
		if !ed25519.Verify(pub, data, sig) {
			b.Fatal("verify")
		}
	}
}
