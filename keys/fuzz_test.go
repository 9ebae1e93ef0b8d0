package keys

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"github.com/capgate/capgate/manifest"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParsePublicKey checks that ParsePublicKey never panics, that success
// always means a 32-byte key, and that an accepted input is exactly one of
// the two encodings of that key.
func FuzzParsePublicKey(f *testing.F) {
	f.Add(seq32)
	f.Add([]byte(seq32B64))
	f.Add([]byte(seq32B64 + "\n"))
	f.Add([]byte(seq32B64 + "\r\n"))
	f.Add([]byte(seq32B64[:42] + "9="))
	f.Add([]byte(seq32B64[:20] + "\n" + seq32B64[20:]))
	f.Add([]byte(base64.StdEncoding.EncodeToString(seq32[:31])))
	f.Add(seq32[:31])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		pub, err := ParsePublicKey(b)
		if !bytes.Equal(in, b) {
			t.Fatal("ParsePublicKey changed its input")
		}
		if err != nil {
			if pub != nil {
				t.Fatal("key returned with an error")
			}
			return
		}
		if len(pub) != ed25519.PublicKeySize {
			t.Fatalf("accepted a %d-byte key", len(pub))
		}
		if len(b) == ed25519.PublicKeySize {
			if !bytes.Equal(pub, b) {
				t.Fatal("32-byte input not taken raw")
			}
			return
		}
		text := strings.TrimRight(string(b), " \t\r\n")
		if text != base64.StdEncoding.EncodeToString(pub) {
			t.Fatal("accepted text that is not the canonical base64 of the key")
		}
	})
}

// FuzzValidAppID checks that an accepted id cannot leave the folder it is
// joined to, whatever the id.
func FuzzValidAppID(f *testing.F) {
	for _, s := range []string{"org.example.notes", "../x", "a..b", "A.b", "a/b.c", "a.b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidAppID(s) {
			return
		}
		if len(s) > manifest.MaxAppIDBytes || strings.ContainsAny(s, `/\`) || strings.Contains(s, "..") || s != strings.ToLower(s) {
			t.Fatalf("accepted %q", s)
		}
		dir := filepath.FromSlash("/etc/portal/keys/trusted")
		for _, name := range []string{s + ".pub", s + ".d"} {
			if p := filepath.Join(dir, name); filepath.Dir(p) != dir || filepath.Base(p) != name {
				t.Fatalf("%q escapes the folder as %q", s, p)
			}
		}
	})
}
