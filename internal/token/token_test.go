package token_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func testKey(seed byte) ed25519.PrivateKey {
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = seed + byte(i)
	}
	return ed25519.NewKeyFromSeed(s)
}

// fixedToken is the token of the golden file: every field set.
func fixedToken() token.Token {
	return token.Token{
		ID:           "cap_0123456789abcdef0123456789abcdef",
		IssuedAt:     1706620800,
		ExpiresAt:    1706624400,
		Capabilities: []string{"app.terminal.execute", "fs.*"},
		Constraints: token.Constraints{
			MaxUses:         10,
			AllowedPaths:    []string{"/home/*"},
			AllowedCommands: []string{"ps", "git status"},
			DeniedCommands:  []string{"rm -rf", "shutdown"},
			DeniedPatterns:  []string{"sudo"},
			Condition:       `permission != "fs.delete"`,
		},
		AuditTag:  "Code compilation task",
		ClientID:  "agent-1",
		ParentID:  "cap_fedcba9876543210fedcba9876543210",
		ConsentID: "consent_42",
	}
}

func minimalToken() token.Token {
	return token.Token{
		ID:           token.NewID(),
		IssuedAt:     1706620800,
		ExpiresAt:    1706624400,
		Capabilities: []string{"fs.read"},
		ClientID:     "agent-1",
	}
}

func sign(t *testing.T, tok token.Token, key ed25519.PrivateKey) string {
	t.Helper()
	w, err := token.Sign(tok, key)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return w
}

func payload(t *testing.T, wire string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(wire, token.WirePrefix))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encode(b []byte) string { return token.WirePrefix + base64.RawURLEncoding.EncodeToString(b) }

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n got %s\nwant %s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	wire := sign(t, fixedToken(), testKey(1))
	golden(t, "token.json", append(payload(t, wire), '\n'))
	golden(t, "token.wire", []byte(wire+"\n"))
	unsigned := fixedToken()
	unsigned.Version, unsigned.Issuer = token.Version, token.Issuer
	msg, err := unsigned.Canonical(false)
	if err != nil {
		t.Fatal(err)
	}
	// What the signature covers: the signing context, then the canonical form.
	golden(t, "token.signed-message", append([]byte(token.SigningContext), msg...))
}

// Tokens of the format before 1.1, signed over the canonical form alone, still verify until
// they expire; one of either version signed the other way does not.
func TestLegacyVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "token-1.0.wire"))
	if err != nil {
		t.Fatal(err)
	}
	legacy := strings.TrimSpace(string(b))
	v := token.NewVerifier(testKey(1).Public().(ed25519.PublicKey), 0)
	tok, err := v.Verify(legacy)
	if err != nil || tok.Version != token.LegacyVersion {
		t.Fatalf("the 1.0 token: %+v %v", tok, err)
	}
	// A 1.1 token signed without the context, and a 1.0 token signed with it, are forgeries
	// of a signature made for something else.
	for name, tc := range map[string]struct {
		version string
		context bool
	}{"1.1 without context": {token.Version, false}, "1.0 with context": {token.LegacyVersion, true}} {
		tk := fixedToken()
		tk.Version, tk.Issuer = tc.version, token.Issuer
		msg, err := tk.Canonical(false)
		if err != nil {
			t.Fatal(err)
		}
		if tc.context {
			msg = append([]byte(token.SigningContext), msg...)
		}
		tk.Signature = manifest.FormatSignature(ed25519.Sign(testKey(1), msg))
		whole, err := tk.Canonical(true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(encode(whole)); !errors.Is(err, token.ErrBadSignature) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Sign writes only the current version.
	tk := fixedToken()
	tk.Version = token.LegacyVersion
	if _, err := token.Sign(tk, testKey(1)); err == nil {
		t.Error("Sign wrote a 1.0 token")
	}
}

func TestRoundTrip(t *testing.T) {
	key := testKey(1)
	for name, tok := range map[string]token.Token{"full": fixedToken(), "minimal": minimalToken()} {
		t.Run(name, func(t *testing.T) {
			wire := sign(t, tok, key)
			if !strings.HasPrefix(wire, "cgt1.") {
				t.Fatalf("wire form does not start with cgt1.")
			}
			got, err := token.Parse(wire)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := tok
			want.Version, want.Issuer, want.Signature = token.Version, token.Issuer, got.Signature
			if want.Capabilities == nil {
				want.Capabilities = []string{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse = %+v\nwant %+v", got, want)
			}
			v := token.NewVerifier(key.Public().(ed25519.PublicKey), 0)
			vt, err := v.Verify(wire)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !reflect.DeepEqual(vt, got) {
				t.Errorf("Verify and Parse disagree")
			}
			again, err := token.Sign(got, key)
			if err != nil || again != wire {
				t.Errorf("signing the parsed token again gives another wire form (%v)", err)
			}
		})
	}
}

func TestNewID(t *testing.T) {
	a, b := token.NewID(), token.NewID()
	if a == b || len(a) != 36 || !strings.HasPrefix(a, "cap_") || strings.ToLower(a) != a {
		t.Errorf("NewID = %q, %q", a, b)
	}
}

func TestSignRefuses(t *testing.T) {
	key := testKey(1)
	if _, err := token.Sign(minimalToken(), key[:32]); err == nil {
		t.Error("Sign accepted a 32-byte key")
	}
	bad := minimalToken()
	bad.Capabilities = []string{"*"}
	if _, err := token.Sign(bad, key); !errors.Is(err, token.ErrInvalid) {
		t.Errorf("Sign of an invalid token = %v, want ErrInvalid", err)
	}
	bad = minimalToken()
	bad.Issuer = "someone.else"
	if _, err := token.Sign(bad, key); !errors.Is(err, token.ErrInvalid) {
		t.Errorf("Sign with a foreign issuer = %v, want ErrInvalid", err)
	}
}

// verifyErr verifies wire with a fresh Verifier for key 1 and returns the error.
func verifyErr(wire string) error {
	_, err := token.NewVerifier(testKey(1).Public().(ed25519.PublicKey), 0).Verify(wire)
	return err
}

func TestTamperEveryByte(t *testing.T) {
	wire := sign(t, fixedToken(), testKey(1))
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/. "
	for i := range len(wire) {
		for _, c := range []byte{wire[i] ^ 1, wire[i] ^ 0x20, alphabet[i%len(alphabet)]} {
			if c == wire[i] {
				continue
			}
			b := []byte(wire)
			b[i] = c
			if err := verifyErr(string(b)); err == nil {
				t.Fatalf("byte %d changed to %q: verified", i, c)
			}
		}
	}
	for n := range len(wire) {
		if err := verifyErr(wire[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: verified", n)
		}
	}
}

func TestTamperFields(t *testing.T) {
	key := testKey(1)
	wire := sign(t, fixedToken(), key)
	good, err := token.Parse(wire)
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]func(*token.Token){
		"expires_at":       func(t *token.Token) { t.ExpiresAt += 3600 },
		"issued_at":        func(t *token.Token) { t.IssuedAt-- },
		"capabilities":     func(t *token.Token) { t.Capabilities = append(t.Capabilities, "fs.delete") },
		"capability *":     func(t *token.Token) { t.Capabilities = []string{"app.*"} },
		"client_id":        func(t *token.Token) { t.ClientID = "agent-2" },
		"token_id":         func(t *token.Token) { t.ID = "cap_00000000000000000000000000000000" },
		"max_uses":         func(t *token.Token) { t.Constraints.MaxUses = 0 },
		"allowed_paths":    func(t *token.Token) { t.Constraints.AllowedPaths = []string{"/**"} },
		"denied_commands":  func(t *token.Token) { t.Constraints.DeniedCommands = nil },
		"condition":        func(t *token.Token) { t.Constraints.Condition = "" },
		"parent_id":        func(t *token.Token) { t.ParentID = "" },
		"consent_id":       func(t *token.Token) { t.ConsentID = "consent_43" },
		"audit_tag":        func(t *token.Token) { t.AuditTag = "innocent" },
		"allowed_commands": func(t *token.Token) { t.Constraints.AllowedCommands = append(t.Constraints.AllowedCommands, "rm") },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			tok := good.Clone()
			change(&tok)
			b, err := tok.Canonical(true)
			if err != nil {
				t.Fatal(err)
			}
			forged := encode(b)
			if _, err := token.Parse(forged); err != nil {
				t.Fatalf("the re-encoded token should parse: %v", err)
			}
			if err := verifyErr(forged); !errors.Is(err, token.ErrBadSignature) {
				t.Errorf("Verify = %v, want ErrBadSignature", err)
			}
		})
	}
	t.Run("signature from another token", func(t *testing.T) {
		other, err := token.Parse(sign(t, minimalToken(), key))
		if err != nil {
			t.Fatal(err)
		}
		tok := good.Clone()
		tok.Signature = other.Signature
		b, _ := tok.Canonical(true)
		if err := verifyErr(encode(b)); !errors.Is(err, token.ErrBadSignature) {
			t.Errorf("Verify = %v, want ErrBadSignature", err)
		}
	})
	t.Run("another key", func(t *testing.T) {
		if err := verifyErr(sign(t, fixedToken(), testKey(2))); !errors.Is(err, token.ErrBadSignature) {
			t.Errorf("Verify = %v, want ErrBadSignature", err)
		}
	})
	t.Run("wrong-size public key", func(t *testing.T) {
		_, err := token.NewVerifier(ed25519.PublicKey{1, 2, 3}, 0).Verify(wire)
		if !errors.Is(err, token.ErrBadSignature) {
			t.Errorf("Verify = %v, want ErrBadSignature", err)
		}
	})
}

func TestParseStrict(t *testing.T) {
	wire := sign(t, fixedToken(), testKey(1))
	js := payload(t, wire)
	sigAt := bytes.Index(js, []byte(`"signature":`))
	replace := func(old, new string) []byte {
		if !bytes.Contains(js, []byte(old)) {
			t.Fatalf("golden JSON lacks %s", old)
		}
		return bytes.Replace(js, []byte(old), []byte(new), 1)
	}
	cases := map[string]string{
		"empty":                 "",
		"prefix only":           "cgt1.",
		"no prefix":             strings.TrimPrefix(wire, "cgt1."),
		"other prefix":          "cgt2." + strings.TrimPrefix(wire, "cgt1."),
		"padding":               wire + strings.Repeat("=", (4-len(strings.TrimPrefix(wire, "cgt1."))%4)%4+4),
		"standard alphabet +":   wire[:40] + "+" + wire[41:],
		"standard alphabet /":   wire[:40] + "/" + wire[41:],
		"padded":                token.WirePrefix + base64.URLEncoding.EncodeToString(js),
		"newline":               wire[:20] + "\n" + wire[20:],
		"trailing space":        wire + " ",
		"oversized":             wire + strings.Repeat("A", token.MaxWireBytes),
		"duplicate member":      encode(append(append([]byte{}, js[:len(js)-1]...), []byte(`,"version":"1.1"}`)...)),
		"unknown member":        encode(replace(`"version":`, `"zzz":1,"version":`)),
		"unknown constraint":    encode(replace(`"condition":`, `"extra":[],"condition":`)),
		"whitespace":            encode(replace(`"version":`, `"version": `)),
		"member order":          encode(append(append([]byte(`{"signature":"x",`), js[1:sigAt]...), []byte(`"zz":0}`)...)),
		"empty parent_id":       encode(replace(`"parent_id":"cap_fedcba9876543210fedcba9876543210"`, `"parent_id":""`)),
		"exponent":              encode(replace(`1706620800`, `1.7066208e9`)),
		"fraction":              encode(replace(`1706620800`, `1706620800.5`)),
		"negative":              encode(replace(`"max_uses":10`, `"max_uses":-10`)),
		"string number":         encode(replace(`"max_uses":10`, `"max_uses":"10"`)),
		"zero max_uses written": encode(replace(`"max_uses":10`, `"max_uses":0`)),
		"empty list written":    encode(replace(`"allowed_paths":["/home/*"]`, `"allowed_paths":[]`)),
		"non-string grant":      encode(replace(`"fs.*"`, `7`)),
		"unicode escape":        encode(replace(`"agent-1"`, `"agent\u002d1"`)),
		"not an object":         encode([]byte(`["cap_0123456789abcdef0123456789abcdef"]`)),
		"missing signature":     encode(append(append([]byte{}, js[:sigAt-1]...), '}')),
		"bad signature text":    encode(replace(`"signature":"ed25519:`, `"signature":"rsa:`)),
		"version 2":             encode(replace(`"version":"1.1"`, `"version":"2.0"`)),
		"issuer":                encode(replace(`"issuer":"capgate"`, `"issuer":"maytera"`)),
		"token_id uppercase":    encode(replace(`cap_0123456789abcdef`, `cap_0123456789ABCDEF`)),
		"truncated JSON":        encode(js[:len(js)-1]),
		"trailing JSON":         encode(append(append([]byte{}, js...), ' ')),
		"BOM":                   encode(append([]byte("\xef\xbb\xbf"), js...)),
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := token.Parse(w)
			if !errors.Is(err, token.ErrMalformed) {
				t.Fatalf("Parse = %v, want ErrMalformed", err)
			}
			if len(w) > 40 && strings.Contains(err.Error(), w[10:40]) {
				t.Errorf("error echoes the token: %v", err)
			}
			if err := verifyErr(w); err == nil {
				t.Errorf("Verify accepted it")
			}
		})
	}
}

func TestVerifierCache(t *testing.T) {
	key := testKey(1)
	v := token.NewVerifier(key.Public().(ed25519.PublicKey), 2)
	a := sign(t, fixedToken(), key)
	if _, err := v.Verify(a); err != nil {
		t.Fatal(err)
	}
	tok, err := v.Verify(a)
	if err != nil {
		t.Fatal(err)
	}
	if n := v.SignatureChecks(); n != 1 {
		t.Fatalf("two Verify calls of one token checked %d signatures, want 1", n)
	}
	// The caller may change what it got without changing the cache.
	tok.Capabilities[0] = "system.settings.write"
	tok.Constraints.DeniedCommands[0] = "nothing"
	if again, _ := v.Verify(a); again.Capabilities[0] != "app.terminal.execute" || again.Constraints.DeniedCommands[0] != "rm -rf" {
		t.Fatalf("a change to a returned token reached the cache")
	}

	// A forged token after a good one is still refused: it has another hash.
	good, _ := token.Parse(a)
	good.Capabilities = []string{"app.*"}
	b, _ := good.Canonical(true)
	if _, err := v.Verify(encode(b)); !errors.Is(err, token.ErrBadSignature) {
		t.Fatalf("forged token after a good one: %v", err)
	}
	if _, err := v.Verify(encode(b)); !errors.Is(err, token.ErrBadSignature) {
		t.Fatalf("forged token, second time: %v", err)
	}
	if n := v.SignatureChecks(); n != 3 {
		t.Fatalf("signature checks = %d, want 3 (a refused token is never cached)", n)
	}
	flipped := []byte(a)
	flipped[len(flipped)-5] ^= 1
	if _, err := v.Verify(string(flipped)); err == nil {
		t.Fatal("a flipped byte after a good token verified")
	}

	// The bound: with room for two, three tokens never leave more than two cached.
	c1, c2 := sign(t, minimalToken(), key), sign(t, minimalToken(), key)
	for _, w := range []string{c1, c2} {
		if _, err := v.Verify(w); err != nil {
			t.Fatal(err)
		}
	}
	before := v.SignatureChecks()
	for _, w := range []string{a, c1, c2} {
		if _, err := v.Verify(w); err != nil {
			t.Fatal(err)
		}
	}
	if v.SignatureChecks() == before {
		t.Errorf("three tokens were all cached with room for two")
	}
}

// TestVerifierKeepsTokensInUse: a token looked up between prunings stays cached however
// many one-off tokens pass through, and a one-off token not used again is evicted.
func TestVerifierKeepsTokensInUse(t *testing.T) {
	key := testKey(1)
	v := token.NewVerifier(key.Public().(ed25519.PublicKey), 8)
	hot := sign(t, fixedToken(), key)
	var first string
	for i := range 50 {
		if _, err := v.Verify(hot); err != nil {
			t.Fatal(err)
		}
		once := sign(t, minimalToken(), key)
		if i == 0 {
			first = once
		}
		if _, err := v.Verify(once); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.SignatureChecks(); n != 51 {
		t.Fatalf("signature checks = %d, want 51: the token in use was evicted", n)
	}
	if _, err := v.Verify(first); err != nil {
		t.Fatal(err)
	}
	if n := v.SignatureChecks(); n != 52 {
		t.Fatalf("the first one-off token is still cached after 49 others (bound 8)")
	}
}

func TestVerifierConcurrent(t *testing.T) {
	key := testKey(1)
	v := token.NewVerifier(key.Public().(ed25519.PublicKey), 4)
	wires := []string{sign(t, fixedToken(), key), sign(t, minimalToken(), key), sign(t, minimalToken(), key)}
	bad := []byte(wires[0])
	bad[30] ^= 2
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				w := wires[(g+i)%len(wires)]
				if _, err := v.Verify(w); err != nil {
					t.Error(err)
					return
				}
				if _, err := v.Verify(string(bad)); err == nil {
					t.Error("tampered token verified")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestCheckTime(t *testing.T) {
	tok := minimalToken()
	at := func(s int64, ns int64) time.Time { return time.Unix(s, ns) }
	cases := []struct {
		now  time.Time
		want error
	}{
		{at(tok.IssuedAt-1, 999_999_999), token.ErrNotYetValid},
		{at(tok.IssuedAt, 0), nil},
		{at(tok.ExpiresAt-1, 999_999_999), nil},
		{at(tok.ExpiresAt, 0), token.ErrExpired},
		{at(tok.ExpiresAt+86400, 0), token.ErrExpired},
		{time.Time{}, token.ErrNotYetValid},
	}
	for _, c := range cases {
		if err := tok.CheckTime(c.now); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("CheckTime(%v) = %v, want %v", c.now, err, c.want)
		}
	}
}

func TestCheckClient(t *testing.T) {
	tok := minimalToken()
	for client, ok := range map[string]bool{"agent-1": true, "agent-2": false, "Agent-1": false, "agent-1 ": false, "": false} {
		if err := tok.CheckClient(client); (err == nil) != ok || err != nil && !errors.Is(err, token.ErrWrongClient) {
			t.Errorf("CheckClient(%q) = %v", client, err)
		}
	}
	tok.ClientID = ""
	if err := tok.CheckClient(""); !errors.Is(err, token.ErrWrongClient) {
		t.Errorf("an unbound token matched the empty client")
	}
}

func TestCovers(t *testing.T) {
	cases := []struct {
		grants []string
		perm   string
		want   bool
	}{
		{[]string{"fs.read"}, "fs.read", true},
		{[]string{"fs.read"}, "fs.write", false},
		{[]string{"fs.read"}, "fs.read.x", false},
		{[]string{"fs.*"}, "fs.read", true},
		{[]string{"fs.*"}, "fs.read.x", true},
		{[]string{"fs.*"}, "fsx.read", false},
		{[]string{"fs.*"}, "fs", false},
		{[]string{"fs.*"}, "fs.", false},
		{[]string{"fs.*"}, "FS.read", false},
		{[]string{"FS.*"}, "fs.read", false},
		{[]string{"fs.read.*"}, "fs.read", false},
		{[]string{"fs.read.*"}, "fs.read.x", true},
		{[]string{"app.terminal.*"}, "app.terminal.execute", true},
		{[]string{"app.terminal.*"}, "app.terminals.execute", false},
		{[]string{"*"}, "fs.read", false},
		{[]string{".*"}, "fs.read", false},
		{[]string{"*.*"}, "fs.read", false},
		{[]string{"fs.*.*"}, "fs.read.x", false},
		{[]string{"fs*"}, "fs.read", false},
		{[]string{"fs.**"}, "fs.read", false},
		{[]string{"fs..*"}, "fs..read", false},
		{[]string{"fs.*"}, "fs..read", false},
		{[]string{"fs.*"}, "fs.read ", false},
		{[]string{"fs.*"}, "fs.read\x00", false},
		{[]string{"fs.*"}, "fs.*", false},
		{[]string{""}, "", false},
		{nil, "fs.read", false},
		{[]string{"fs.read", "app.*"}, "app.x.y", true},
	}
	for _, c := range cases {
		if got := token.Covers(c.grants, c.perm); got != c.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.grants, c.perm, got, c.want)
		}
	}
}

// VerifyHashed gives the wire form's WireHash, on a cache miss and on a hit alike, and
// another token's wire form (even one naming the same id) another hash.
func TestVerifyHashed(t *testing.T) {
	key := testKey(1)
	v := token.NewVerifier(key.Public().(ed25519.PublicKey), 4)
	a := sign(t, fixedToken(), key)
	other := fixedToken()
	other.Capabilities = []string{"app.*"}
	b := sign(t, other, key) // the same id, another body, signed with the same key
	for range 2 {
		for _, w := range []string{a, b} {
			var tok token.Token
			d, err := v.VerifyHashed(w, &tok)
			h := d.String()
			if err != nil || h != token.WireHash(w) {
				t.Fatalf("VerifyHashed: hash %q, %v; want %q", h, err, token.WireHash(w))
			}
		}
	}
	if token.WireHash(a) == token.WireHash(b) {
		t.Fatal("two tokens under one id have one hash")
	}
	bad := fixedToken()
	if h, err := v.VerifyHashed("cgt1.nope", &bad); err == nil || h != (token.Digest{}) || bad.ID != "" {
		t.Fatalf("a malformed token: hash %q, %v", h, err)
	}
}

// ParseWireHash reads back exactly what WireHash writes, and nothing else: no other prefix,
// no uppercase hex, no hash cut short or run long.
func TestParseWireHash(t *testing.T) {
	w := sign(t, fixedToken(), testKey(1))
	h := token.WireHash(w)
	if d, ok := token.ParseWireHash(h); !ok || d != token.WireDigest(w) || d.String() != h {
		t.Fatalf("ParseWireHash(WireHash) = %x, %v", d, ok)
	}
	hexPart := strings.TrimPrefix(h, "sha256:")
	for _, bad := range []string{
		"", "sha256:", hexPart, "SHA256:" + hexPart, "sha512:" + hexPart, "sha256:" + strings.ToUpper(hexPart),
		h[:len(h)-1], h + "0", h[:len(h)-2] + "zz", " " + h, h + "\n", "sha256:" + hexPart[:32],
	} {
		if d, ok := token.ParseWireHash(bad); ok || d != (token.Digest{}) {
			t.Errorf("ParseWireHash(%q) = %x, true", bad, d)
		}
	}
}

// Verify's token is the caller's own: changing its lists changes nothing the cache answers
// later, by Verify or VerifyHashed.
func TestVerifyReturnsACopy(t *testing.T) {
	key := testKey(1)
	v := token.NewVerifier(key.Public().(ed25519.PublicKey), 4)
	w := sign(t, fixedToken(), key)
	for range 2 { // the first verifies and caches, the second answers from the cache
		got, err := v.Verify(w)
		if err != nil {
			t.Fatal(err)
		}
		want := got.Capabilities[0]
		got.Capabilities[0] = "changed.by.the.caller"
		if len(got.Constraints.AllowedPaths) > 0 {
			got.Constraints.AllowedPaths[0] = "/changed"
		}
		var again token.Token
		_, err = v.VerifyHashed(w, &again)
		if err != nil || again.Capabilities[0] != want {
			t.Fatalf("after the caller changed its copy: %v, %v", again.Capabilities, err)
		}
		if len(again.Constraints.AllowedPaths) > 0 && again.Constraints.AllowedPaths[0] == "/changed" {
			t.Fatalf("after the caller changed its copy: %v", again.Constraints.AllowedPaths)
		}
	}
}

// TestDigestEqual: two digests are equal exactly when every byte is, whichever byte differs
// (the first, the last, one inside each of the four words) and by whichever bit.
func TestDigestEqual(t *testing.T) {
	a := token.WireDigest("cgt1.a.b")
	b := a
	if !a.Equal(&b) || !b.Equal(&a) {
		t.Fatal("a digest differs from its copy")
	}
	var zero, zero2 token.Digest
	if !zero.Equal(&zero2) {
		t.Fatal("two zero digests differ")
	}
	for i := range len(a) {
		for bit := range 8 {
			c := a
			c[i] ^= 1 << bit
			if a.Equal(&c) || c.Equal(&a) {
				t.Fatalf("digests differing in byte %d, bit %d are taken for equal", i, bit)
			}
		}
	}
	if other := token.WireDigest("cgt1.a.c"); a.Equal(&other) {
		t.Fatal("the digests of two wires are taken for equal")
	}
}
