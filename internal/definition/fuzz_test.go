package definition_test

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"

	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/yamljson"
)

// FuzzParse feeds arbitrary bytes to Parse: it never panics, every problem has a rule, and a
// definition it accepts signs and parses back to the same canonical form.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"ride.yaml", "pet.yaml"} {
		y, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		js, err := yamljson.Convert(y)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js)
	}
	f.Add([]byte(`{"name":"org.capgate.a.b","input":{"properties":{"pässword":{}}}}`))
	f.Add([]byte(`{}`))
	_, key, _ := ed25519.GenerateKey(nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		def, ps := definition.Parse(data, "")
		for _, p := range ps {
			if p.Rule == "" {
				t.Fatalf("a problem without a rule at %q", p.Path)
			}
		}
		if def == nil || len(ps) > 0 {
			return
		}
		signed, err := definition.Sign(def, key)
		if err != nil {
			t.Fatal(err)
		}
		back, ps := definition.Parse(signed, "")
		if len(ps) > 0 || string(back.Canonical()) != string(def.Canonical()) {
			t.Fatalf("signed definition does not parse back: %v", ps)
		}
	})
}
