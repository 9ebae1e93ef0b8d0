package manifest_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
)

// oneKey trusts a single key for every app.
type oneKey struct{ k ed25519.PublicKey }

func (o oneKey) Keys(string) ([]ed25519.PublicKey, error) { return []ed25519.PublicKey{o.k}, nil }

type noKeys struct{}

func (noKeys) Keys(string) ([]ed25519.PublicKey, error) { return nil, errors.New("no trusted key") }

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func signBytes(t *testing.T, data []byte, priv ed25519.PrivateKey) []byte {
	t.Helper()
	doc, err := manifest.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := manifest.Sign(doc, priv)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func verifyBytes(t *testing.T, data []byte, ks manifest.KeySource) manifest.Verification {
	t.Helper()
	return manifest.VerifyBytes(data, ks)
}

func TestSignVerifyRoundTrip(t *testing.T) {
	pub, priv := newKey(t)
	signed := signBytes(t, encode(t, base(t)), priv)
	v := verifyBytes(t, signed, oneKey{pub})
	if !v.Trusted() || v.Tier != manifest.Tier1 || v.AppID != "org.example.notes" {
		t.Fatalf("verification = %+v", v)
	}
	// Signing again replaces the signature rather than adding a second one.
	again := signBytes(t, signed, priv)
	if strings.Count(string(again), `"signature"`) != 1 {
		t.Fatalf("re-signed document has %d signatures", strings.Count(string(again), `"signature"`))
	}
	if v := verifyBytes(t, again, oneKey{pub}); !v.Trusted() {
		t.Fatalf("re-signed: %+v", v)
	}
}

func TestSignatureCoversTheDocumentNotItsSpelling(t *testing.T) {
	pub, priv := newKey(t)
	signed := signBytes(t, encode(t, base(t)), priv)
	doc, err := manifest.Parse(signed)
	if err != nil {
		t.Fatal(err)
	}
	// Re-encoding with other member order and whitespace keeps the signature valid.
	m := base(t)
	sig, _ := doc.Signature()
	m["signature"] = sig
	respelled := []byte(strings.ReplaceAll(string(encode(t, m)), ",", " ,\n\t"))
	if v := verifyBytes(t, respelled, oneKey{pub}); !v.Trusted() {
		t.Fatalf("respelled: %+v", v)
	}
}

func TestChangingAnySignedFieldFailsVerification(t *testing.T) {
	pub, priv := newKey(t)
	m := base(t)
	m["x_vendor"] = map[string]any{"build": 42}
	signed := signBytes(t, encode(t, m), priv)
	doc, err := manifest.Parse(signed)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := doc.Signature()
	edits := map[string]func(m map[string]any){
		"version":            func(m map[string]any) { m["version"] = "1.4.1" },
		"unknown field":      func(m map[string]any) { m["x_vendor"] = map[string]any{"build": 43} },
		"unknown field gone": func(m map[string]any) { delete(m, "x_vendor") },
		"field added":        func(m map[string]any) { m["deprecated_after"] = "2030-01-01T00:00:00Z" },
		"side effect":        func(m map[string]any) { capAt(m, 1)["side_effects"] = "read" },
		"confirmation":       func(m map[string]any) { capAt(m, 1)["confirmation_required"] = false },
		"schema":             func(m map[string]any) { capAt(m, 0)["parameters"].(map[string]any)["additionalProperties"] = true },
		"capability order": func(m map[string]any) {
			cs := m["capabilities"].([]any)
			cs[0], cs[2] = cs[2], cs[0]
		},
		"description": func(m map[string]any) { capAt(m, 2)["description"] = "Restores a note from the trash!" },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			mm := base(t)
			mm["x_vendor"] = map[string]any{"build": 42}
			mm["signature"] = sig
			edit(mm)
			v := verifyBytes(t, encode(t, mm), oneKey{pub})
			if v.Trusted() || v.Reason != manifest.ReasonBadSignature {
				t.Fatalf("verification = %+v, want bad_signature", v)
			}
		})
	}
}

func TestMalformedSignatures(t *testing.T) {
	pub, priv := newKey(t)
	signed := signBytes(t, encode(t, base(t)), priv)
	doc, _ := manifest.Parse(signed)
	good, _ := doc.Signature()
	// Signature bytes whose base64 holds '+' and '/', so the URL-safe spelling differs. A
	// malformed signature is refused before any key is tried, so these need not verify.
	raw := bytes.Repeat([]byte{0xfb, 0xef, 0xff}, 22)[:64]
	b64 := base64.StdEncoding.EncodeToString(raw)
	if !strings.ContainsAny(b64, "+/") {
		t.Fatal("test signature has no '+' or '/'")
	}
	// The last character before "==" carries 4 unused bits; setting one re-spells the same bytes.
	alt := []byte(b64)
	alt[len(alt)-3] ^= 1
	cases := map[string]string{
		"empty":                "",
		"no prefix":            b64,
		"upper-case prefix":    "ED25519:" + b64,
		"other algorithm":      "rsa:" + b64,
		"unpadded":             "ed25519:" + strings.TrimRight(b64, "="),
		"url-safe alphabet":    "ed25519:" + base64.URLEncoding.EncodeToString(raw),
		"63 bytes":             "ed25519:" + base64.StdEncoding.EncodeToString(raw[:63]),
		"65 bytes":             "ed25519:" + base64.StdEncoding.EncodeToString(append(raw, 0)),
		"line break":           "ed25519:" + b64[:40] + "\n" + b64[40:],
		"carriage return":      "ed25519:" + b64[:40] + "\r" + b64[40:],
		"space":                "ed25519: " + b64,
		"trailing garbage":     good + "x",
		"non-zero unused bits": "ed25519:" + string(alt),
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := manifest.ParseSignature(s); !errors.Is(err, manifest.ErrMalformedSignature) {
				t.Fatalf("ParseSignature = %v, want ErrMalformedSignature", err)
			}
			m := base(t)
			m["signature"] = s
			v := verifyBytes(t, encode(t, m), oneKey{pub})
			if v.Trusted() || v.Reason != manifest.ReasonMalformedSignature {
				t.Fatalf("verification = %+v, want malformed_signature", v)
			}
		})
	}
	if _, err := manifest.ParseSignature(good); err != nil {
		t.Fatalf("good signature refused: %v", err)
	}
}

func TestTier2Reasons(t *testing.T) {
	pub, priv := newKey(t)
	otherPub, _ := newKey(t)
	signed := signBytes(t, encode(t, base(t)), priv)

	unsigned := base(t)
	nullSig := base(t)
	nullSig["signature"] = nil
	invalid := base(t)
	delete(invalid, "version")
	invalid["signature"] = "ed25519:" + strings.Repeat("A", 86) + "=="

	tests := []struct {
		name   string
		data   []byte
		keys   manifest.KeySource
		reason manifest.Reason
	}{
		{"unsigned", encode(t, unsigned), oneKey{pub}, manifest.ReasonUnsigned},
		{"null signature", encode(t, nullSig), oneKey{pub}, manifest.ReasonUnsigned},
		{"no trusted key", signed, noKeys{}, manifest.ReasonNoTrustedKey},
		{"nil key source", signed, nil, manifest.ReasonNoTrustedKey},
		{"other key", signed, oneKey{otherPub}, manifest.ReasonBadSignature},
		{"invalid manifest", encode(t, invalid), oneKey{pub}, manifest.ReasonInvalidManifest},
		{"not JSON", []byte(`{"app_id":`), oneKey{pub}, manifest.ReasonInvalidManifest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := verifyBytes(t, tt.data, tt.keys)
			if v.Tier != manifest.Tier2 || v.Trusted() || v.Reason != tt.reason {
				t.Fatalf("verification = %+v, want Tier 2 %s", v, tt.reason)
			}
		})
	}
}

// The interop vectors were signed by openssl over canonical bytes that Python produced: no
// Go code was involved in making them (see testdata/interop/README.md).
func TestInteropVectors(t *testing.T) {
	dir := filepath.Join("..", "testdata", "interop")
	pub, err := keys.LoadPublicKey(filepath.Join(dir, "org.example.notes.pub"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	doc, err := manifest.Parse(read("manifest.signed.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(doc.Canonical()), string(read("manifest.canonical")); got != want {
		t.Fatalf("canonical form differs from the one made outside Go:\n got %s\nwant %s", got, want)
	}
	if v := manifest.Verify(doc, oneKey{pub}); !v.Trusted() {
		t.Fatalf("openssl-signed manifest: %+v", v)
	}
	if v := verifyBytes(t, read("manifest.tampered.json"), oneKey{pub}); v.Reason != manifest.ReasonBadSignature {
		t.Fatalf("tampered: %+v", v)
	}
	if v := verifyBytes(t, read("manifest.badsig.json"), oneKey{pub}); v.Reason != manifest.ReasonMalformedSignature {
		t.Fatalf("badsig: %+v", v)
	}
	// Through the trusted-keys folder as a host would.
	if v := verifyBytes(t, read("manifest.signed.json"), keys.TrustStore{Dir: dir}); !v.Trusted() {
		t.Fatalf("via TrustStore: %+v", v)
	}
}

func TestKeyRotationOverlap(t *testing.T) {
	dir := t.TempDir()
	oldPub, oldPriv := newKey(t)
	newPub, newPriv := newKey(t)
	ts := keys.TrustStore{Dir: dir}
	oldSigned := signBytes(t, encode(t, base(t)), oldPriv)
	newSigned := signBytes(t, encode(t, base(t)), newPriv)
	pubPath := filepath.Join(dir, "org.example.notes.pub")
	if err := keys.WritePublicKey(pubPath, oldPub, false); err != nil {
		t.Fatal(err)
	}
	if v := verifyBytes(t, oldSigned, ts); !v.Trusted() {
		t.Fatalf("old key before rotation: %+v", v)
	}
	if v := verifyBytes(t, newSigned, ts); v.Reason != manifest.ReasonBadSignature {
		t.Fatalf("new key before it is trusted: %+v", v)
	}
	// Overlap: the new key beside the old one; both verify.
	if err := os.Mkdir(filepath.Join(dir, "org.example.notes.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := keys.WritePublicKey(filepath.Join(dir, "org.example.notes.d", "2026.pub"), newPub, false); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"old": oldSigned, "new": newSigned} {
		if v := verifyBytes(t, data, ts); !v.Trusted() {
			t.Fatalf("%s key during overlap: %+v", name, v)
		}
	}
	// End of the overlap: the old key is removed and only the new one verifies.
	if err := os.Remove(pubPath); err != nil {
		t.Fatal(err)
	}
	if v := verifyBytes(t, newSigned, ts); !v.Trusted() {
		t.Fatalf("new key after rotation: %+v", v)
	}
	if v := verifyBytes(t, oldSigned, ts); v.Reason != manifest.ReasonBadSignature {
		t.Fatalf("old key after rotation: %+v", v)
	}
	// A malformed trusted key file fails closed and visibly: the operator is told which file.
	if err := os.WriteFile(pubPath, []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := verifyBytes(t, newSigned, ts); v.Trusted() || v.Reason != manifest.ReasonNoTrustedKey || !strings.Contains(v.Detail, pubPath) {
		t.Fatalf("malformed trusted key file: %+v", v)
	}
}

func TestYAMLIsTheSameDocument(t *testing.T) {
	j, err := manifest.ReadFile("testdata/notes.json")
	if err != nil {
		t.Fatal(err)
	}
	y, err := manifest.ReadAuthoringFile("testdata/notes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(j.Canonical()) != string(y.Canonical()) {
		t.Fatalf("YAML and JSON differ:\n%s\n%s", y.Canonical(), j.Canonical())
	}
	pub, priv := newKey(t)
	signed, err := manifest.Sign(y, priv)
	if err != nil {
		t.Fatal(err)
	}
	if v := verifyBytes(t, signed, oneKey{pub}); !v.Trusted() {
		t.Fatalf("signed from YAML: %+v", v)
	}
}
