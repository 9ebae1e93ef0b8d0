package keys

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// seq32 is the key 00 01 02 ... 1f; its base64 is below.
var seq32 = func() []byte {
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}()

const seq32B64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

func TestParsePublicKey(t *testing.T) {
	// 32 bytes of text that is itself valid base64 (of 24 bytes): raw wins.
	rawButBase64 := []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 24)))
	if len(rawButBase64) != 32 {
		t.Fatal("bad fixture")
	}
	tests := []struct {
		name string
		in   []byte
		want []byte // nil: ErrMalformedKey
	}{
		{"raw", seq32, seq32},
		{"raw that is also base64 text", rawButBase64, rawButBase64},
		{"base64", []byte(seq32B64), seq32},
		{"base64 LF", []byte(seq32B64 + "\n"), seq32},
		{"base64 CRLF", []byte(seq32B64 + "\r\n"), seq32},
		{"base64 trailing spaces", []byte(seq32B64 + "  \t\n"), seq32},
		{"nil", nil, nil},
		{"empty", []byte{}, nil},
		{"31 raw", seq32[:31], nil},
		{"33 raw", append(bytes.Clone(seq32), 0), nil},
		{"64 raw", append(bytes.Clone(seq32), seq32...), nil},
		{"base64 of 31", []byte(base64.StdEncoding.EncodeToString(seq32[:31])), nil},
		{"base64 of 33", []byte(base64.StdEncoding.EncodeToString(append(bytes.Clone(seq32), 0x20))), nil},
		{"base64 unpadded", []byte(strings.TrimRight(seq32B64, "=")), nil},
		{"base64 url alphabet", []byte(strings.ReplaceAll(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), "+", "-")), nil},
		{"base64 non-canonical padding bits", []byte(seq32B64[:42] + "9="), nil},
		{"base64 leading space", []byte(" " + seq32B64), nil},
		{"base64 with a newline inside", []byte(seq32B64[:20] + "\n" + seq32B64[20:]), nil},
		{"base64 bad character", []byte("!" + seq32B64[1:]), nil},
		{"base64 two lines", []byte(seq32B64 + "\n" + seq32B64 + "\n"), nil},
		{"PEM", []byte("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA" + seq32B64 + "\n-----END PUBLIC KEY-----\n"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePublicKey(tt.in)
			if tt.want == nil {
				if !errors.Is(err, ErrMalformedKey) {
					t.Fatalf("err = %v, want ErrMalformedKey", err)
				}
				if got != nil {
					t.Error("a key was returned with the error")
				}
				checkErrorText(t, err, "", tt.in)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("got %x, want %x", got, tt.want)
			}
		})
	}
}

func TestParsePublicKeyDoesNotAlias(t *testing.T) {
	in := bytes.Clone(seq32)
	got, err := ParsePublicKey(in)
	if err != nil {
		t.Fatal(err)
	}
	in[0] ^= 0xff
	if got[0] != 0 {
		t.Fatal("the returned key shares memory with the input")
	}
}

func TestLoadPublicKey(t *testing.T) {
	marker := []byte("CONTENTS-MUST-NOT-LEAK-0123456789abcdefghijklmn")
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		ok    bool
		want  error
	}{
		{"raw", func(t *testing.T, p string) { writeFile(t, p, seq32, 0o644) }, true, nil},
		{"base64", func(t *testing.T, p string) { writeFile(t, p, []byte(seq32B64), 0o644) }, true, nil},
		{"base64 newline", func(t *testing.T, p string) { writeFile(t, p, []byte(seq32B64+"\n"), 0o644) }, true, nil},
		{"group and world writable is fine outside the trust store", func(t *testing.T, p string) { writeFile(t, p, seq32, 0o666) }, true, nil},
		{"symlink", func(t *testing.T, p string) {
			target := filepath.Join(filepath.Dir(p), "real.pub")
			writeFile(t, target, seq32, 0o644)
			if err := os.Symlink(target, p); err != nil {
				t.Skip("no symlinks here:", err)
			}
		}, true, nil},
		{"31 bytes", func(t *testing.T, p string) { writeFile(t, p, seq32[:31], 0o644) }, false, ErrMalformedKey},
		{"33 bytes", func(t *testing.T, p string) { writeFile(t, p, append(bytes.Clone(seq32), '\n'), 0o644) }, false, ErrMalformedKey},
		{"bad base64", func(t *testing.T, p string) { writeFile(t, p, []byte(string(marker[:43])+"="), 0o644) }, false, ErrMalformedKey},
		{"base64 of 31", func(t *testing.T, p string) {
			writeFile(t, p, []byte(base64.StdEncoding.EncodeToString(seq32[:31])+"\n"), 0o644)
		}, false, ErrMalformedKey},
		{"text", func(t *testing.T, p string) { writeFile(t, p, marker, 0o644) }, false, ErrMalformedKey},
		{"just over the limit", func(t *testing.T, p string) {
			writeFile(t, p, bytes.Repeat(marker[:1], maxPublicKeyFileSize+1), 0o644)
		}, false, ErrMalformedKey},
		{"huge sparse file", func(t *testing.T, p string) {
			writeFile(t, p, nil, 0o644)
			if err := os.Truncate(p, 1<<40); err != nil {
				t.Skip("no sparse files here:", err)
			}
		}, false, ErrMalformedKey},
		{"folder", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, false, ErrMalformedKey},
		{"fifo", func(t *testing.T, p string) {
			if mkfifo == nil {
				t.Skip("no FIFOs on " + runtime.GOOS)
			}
			if err := mkfifo(p, 0o644); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		}, false, ErrMalformedKey},
		{"missing", func(t *testing.T, p string) {}, false, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "org.example.notes.pub")
			tt.setup(t, path)
			type result struct {
				pub ed25519.PublicKey
				err error
			}
			done := make(chan result, 1)
			go func() {
				pub, err := LoadPublicKey(path)
				done <- result{pub, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second): // a hang guard, not a speed check
				t.Fatal("LoadPublicKey blocked")
			}
			if tt.ok {
				if r.err != nil {
					t.Fatal(r.err)
				}
				if !bytes.Equal(r.pub, seq32) {
					t.Fatalf("got %x", r.pub)
				}
				return
			}
			if !errors.Is(r.err, tt.want) {
				t.Fatalf("err = %v, want %v", r.err, tt.want)
			}
			if r.pub != nil {
				t.Error("a key was returned with the error")
			}
			checkErrorText(t, r.err, path, marker, marker[:16], seq32[:31])
		})
	}
}

func TestWritePublicKeyRefusesBadKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.pub")
	for _, k := range []ed25519.PublicKey{nil, seq32[:31], append(bytes.Clone(seq32), 0)} {
		if err := WritePublicKey(path, k, false); !errors.Is(err, ErrMalformedKey) {
			t.Errorf("WritePublicKey(%d bytes): err = %v, want ErrMalformedKey", len(k), err)
		}
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused key was written")
	}
}

func TestFingerprint(t *testing.T) {
	tests := []struct {
		name string
		in   ed25519.PublicKey
		want string
	}{
		// sha256 of 32 zero bytes, computed outside Go.
		{"zero key", make([]byte, 32), "sha256:66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925"},
		{"nil", nil, ""},
		{"31 bytes", make([]byte, 31), ""},
		{"33 bytes", make([]byte, 33), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Fingerprint(tt.in); got != tt.want {
				t.Errorf("Fingerprint = %q, want %q", got, tt.want)
			}
		})
	}
	a, b := keyFromByte(1).Public().(ed25519.PublicKey), keyFromByte(2).Public().(ed25519.PublicKey)
	if Fingerprint(a) == Fingerprint(b) {
		t.Error("two keys share a fingerprint")
	}
}
