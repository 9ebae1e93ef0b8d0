package manifest_test

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"testing"

	"github.com/capgate/capgate/internal/bench"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/manifest"
)

func seedManifests(f *testing.F) {
	for _, name := range []string{"testdata/notes.json", "../testdata/interop/manifest.signed.json"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add(bench.GenerateManifest(2))
	f.Add([]byte(`{"app_id":"a.b","version":"1.0.0","manifest_version":"1.0","capabilities":[]}`))
	f.Add([]byte(`{"capabilities":[{"parameters":{"$ref":"http://example.com/x"}}]}`))
	f.Add([]byte(`{"\u212aind":1,"kind":2}`))
}

// FuzzParse: the parser and validator never panic, and the canonical form is a fixed point.
func FuzzParse(f *testing.F) {
	seedManifests(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := manifest.Parse(data)
		if err != nil {
			return
		}
		doc.Validate()
		c := doc.Canonical()
		again, err := jcs.Canonicalize(c)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v", err)
		}
		if !bytes.Equal(again, c) {
			t.Fatalf("canonicalizing twice changed the bytes:\n%s\n%s", c, again)
		}
	})
}

// FuzzParseYAML: the YAML authoring form never panics the parser.
func FuzzParseYAML(f *testing.F) {
	if b, err := os.ReadFile("testdata/notes.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("app_id: a.b\nversion: 1.0.0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if doc, err := manifest.ParseYAML(data); err == nil {
			doc.Validate()
		}
	})
}

var fuzzKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))

type fuzzKeys struct{}

func (fuzzKeys) Keys(string) ([]ed25519.PublicKey, error) {
	return []ed25519.PublicKey{fuzzKey.Public().(ed25519.PublicKey)}, nil
}

// FuzzSignVerify: a valid manifest signs and verifies, and any change to the signed bytes
// that changes the document (not just its spelling) fails verification.
func FuzzSignVerify(f *testing.F) {
	seedManifests(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := manifest.Load(data)
		if err != nil {
			return
		}
		signed, err := manifest.Sign(doc, fuzzKey)
		if err != nil {
			t.Fatal(err)
		}
		v := manifest.VerifyBytes(signed, fuzzKeys{})
		if !v.Trusted() {
			t.Fatalf("sign then verify: %+v", v)
		}
		// Flip each byte in turn (bounded) and check the rule on every variant that parses.
		for i := 0; i < len(signed) && i < 512; i += 1 + len(signed)/512 {
			mut := bytes.Clone(signed)
			mut[i] ^= 0x01
			md, err := manifest.Parse(mut)
			if err != nil {
				continue
			}
			v := manifest.Verify(md, fuzzKeys{})
			if v.Trusted() && !bytes.Equal(md.Canonical(), doc.Canonical()) {
				t.Fatalf("a changed document verified (byte %d)", i)
			}
		}
	})
}
