package keys

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const app = "org.example.notes"

var (
	oldKey = keyFromByte(0x01).Public().(ed25519.PublicKey)
	newKey = keyFromByte(0x02).Public().(ed25519.PublicKey)
	third  = keyFromByte(0x03).Public().(ed25519.PublicKey)
)

// layout is a trusted folder: file path relative to it → contents (written
// 0644) or nil for a folder.
type layout map[string][]byte

func (l layout) write(t *testing.T, dir string) {
	t.Helper()
	for name, data := range l {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if data == nil {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		writeFile(t, p, data, 0o644)
	}
}

func b64(k ed25519.PublicKey) []byte { return []byte(base64.StdEncoding.EncodeToString(k) + "\n") }

func TestTrustStoreKeys(t *testing.T) {
	tooMany := layout{}
	for i := range maxRotationKeys + 1 {
		tooMany[fmt.Sprintf("%s.d/%02d.pub", app, i)] = keyFromByte(byte(i)).Public().(ed25519.PublicKey)
	}
	tests := []struct {
		name     string
		files    layout
		want     []ed25519.PublicKey
		wantErr  error
		errNames []string // files the error must name
	}{
		{"pub only", layout{app + ".pub": oldKey}, []ed25519.PublicKey{oldKey}, nil, nil},
		{"pub only, base64", layout{app + ".pub": b64(oldKey)}, []ed25519.PublicKey{oldKey}, nil, nil},
		{".d only", layout{app + ".d/2026-new.pub": newKey}, []ed25519.PublicKey{newKey}, nil, nil},
		{"overlap: pub first, then .d in name order", layout{
			app + ".pub":        oldKey,
			app + ".d/b.pub":    third,
			app + ".d/a.pub":    newKey,
			app + ".d/c.pub.gz": []byte("ignored"),
			app + ".d/README":   []byte("ignored"),
		}, []ed25519.PublicKey{oldKey, newKey, third}, nil, nil},
		{"duplicates collapsed", layout{
			app + ".pub":     oldKey,
			app + ".d/a.pub": b64(oldKey),
			app + ".d/b.pub": newKey,
			app + ".d/c.pub": newKey,
		}, []ed25519.PublicKey{oldKey, newKey}, nil, nil},
		{"hidden files skipped", layout{
			app + ".pub":           oldKey,
			app + ".d/.draft.pub":  []byte("half written"),
			app + ".d/.x.pub.swp":  []byte("editor"),
			app + ".d/.tmp-1.pub/": nil,
		}, []ed25519.PublicKey{oldKey}, nil, nil},
		{"other apps' keys are not ours", layout{
			"org.example.pub":         oldKey,
			"org.example.notes2.pub":  oldKey,
			"org.example.d/notes.pub": oldKey,
		}, nil, ErrNoTrustedKey, []string{app + ".pub"}},
		{"no key at all", layout{}, nil, ErrNoTrustedKey, []string{app + ".pub"}},
		{"empty .d", layout{app + ".d": nil}, nil, ErrNoTrustedKey, []string{app + ".pub"}},
		{"malformed .pub", layout{
			app + ".pub":     []byte("not a key"),
			app + ".d/a.pub": newKey,
		}, nil, ErrMalformedKey, []string{app + ".pub"}},
		{"malformed .d entry", layout{
			app + ".pub":     oldKey,
			app + ".d/a.pub": newKey[:31],
		}, nil, ErrMalformedKey, []string{app + ".d/a.pub"}},
		{"every malformed file is named", layout{
			app + ".pub":     []byte("x"),
			app + ".d/a.pub": []byte("y"),
		}, nil, ErrMalformedKey, []string{app + ".pub", app + ".d/a.pub"}},
		{".pub is a folder", layout{app + ".pub/": nil}, nil, ErrMalformedKey, []string{app + ".pub"}},
		{".d is a file", layout{app + ".pub": oldKey, app + ".d": []byte("x")}, nil, nil, []string{app + ".d"}},
		{"too many rotation keys", tooMany, nil, ErrTooManyKeys, []string{app + ".d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.files.write(t, dir)
			got, err := TrustStore{Dir: dir}.Keys(app)
			if tt.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %d keys, want %d", len(got), len(tt.want))
				}
				for i := range got {
					if !got[i].Equal(tt.want[i]) {
						t.Errorf("key %d is %s, want %s", i, Fingerprint(got[i]), Fingerprint(tt.want[i]))
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("got %d keys and no error", len(got))
			}
			if got != nil {
				t.Error("keys were returned with the error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			for _, name := range tt.errNames {
				checkErrorText(t, err, filepath.Join(dir, filepath.FromSlash(name)), oldKey, newKey)
			}
		})
	}
}

func TestTrustStoreRefusesWorldWritableKey(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, app+".pub"), oldKey, 0o646)
	_, err := TrustStore{Dir: dir}.Keys(app)
	if !errors.Is(err, ErrInsecurePermissions) {
		t.Fatalf("err = %v, want ErrInsecurePermissions", err)
	}
	checkErrorText(t, err, filepath.Join(dir, app+".pub"), oldKey)

	// Group-writable stays trusted: user-private groups make 0664 common.
	writeFile(t, filepath.Join(dir, app+".pub"), oldKey, 0o664)
	if _, err := (TrustStore{Dir: dir}).Keys(app); err != nil {
		t.Fatal(err)
	}
}

// TestTrustStoreRotation walks a key rotation: old key trusted, new key added
// beside it (both verify), old key removed (only the new one verifies).
func TestTrustStoreRotation(t *testing.T) {
	dir := t.TempDir()
	s := TrustStore{Dir: dir}
	oldPriv, newPriv := keyFromByte(0x01), keyFromByte(0x02)
	msg := []byte(`{"app_id":"org.example.notes"}`)
	oldSig, newSig := ed25519.Sign(oldPriv, msg), ed25519.Sign(newPriv, msg)
	verifies := func(sig []byte) bool {
		t.Helper()
		ks, err := s.Keys(app)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			if ed25519.Verify(k, msg, sig) {
				return true
			}
		}
		return false
	}

	oldPath := filepath.Join(dir, app+".pub")
	if err := WritePublicKey(oldPath, oldKey, false); err != nil {
		t.Fatal(err)
	}
	if !verifies(oldSig) || verifies(newSig) {
		t.Fatal("before rotation: want only the old key trusted")
	}

	newPath := filepath.Join(dir, app+".d", "2026-08.pub")
	if err := WritePublicKey(newPath, newKey, false); err != nil {
		t.Fatal(err)
	}
	if !verifies(oldSig) || !verifies(newSig) {
		t.Fatal("during the overlap: want both keys trusted")
	}

	if err := os.Remove(oldPath); err != nil {
		t.Fatal(err)
	}
	if verifies(oldSig) || !verifies(newSig) {
		t.Fatal("after removing the old key: want only the new key trusted")
	}

	if err := os.Remove(newPath); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Keys(app); !errors.Is(err, ErrNoTrustedKey) {
		t.Fatalf("after removing every key: err = %v, want ErrNoTrustedKey", err)
	}
}

// TestTrustStoreRefusesBadAppID places a key where a naive path join of each
// bad id would find one, so the test fails if the id reaches the disk.
func TestTrustStoreRefusesBadAppID(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "trusted")
	long := "org." + strings.Repeat("a", 250)
	tests := []struct {
		id   string
		bait string // where a naive join would look, relative to root
	}{
		{"../x", "x.pub"},
		{"A.b", "trusted/A.b.pub"},
		{"a", "trusted/a.pub"},
		{"a..b", "trusted/a..b.pub"},
		{"a/b.c", "trusted/a/b.c.pub"},
		{"", "trusted/.pub"},
		{"../trusted/org.example.notes", "trusted/org.example.notes.pub"},
		{long, ""},
	}
	for _, tt := range tests {
		name := tt.id
		if len(name) > 40 {
			name = "254 bytes"
		}
		t.Run(name, func(t *testing.T) {
			if tt.bait != "" {
				writeFile(t, filepath.Join(root, filepath.FromSlash(tt.bait)), oldKey, 0o644)
			}
			s := TrustStore{Dir: dir}
			got, err := s.Keys(tt.id)
			if !errors.Is(err, ErrInvalidAppID) || got != nil {
				t.Fatalf("Keys: %d keys, err = %v; want ErrInvalidAppID", len(got), err)
			}
			if _, err := s.KeyPath(tt.id); !errors.Is(err, ErrInvalidAppID) {
				t.Errorf("KeyPath: err = %v, want ErrInvalidAppID", err)
			}
			if _, err := s.RotationDir(tt.id); !errors.Is(err, ErrInvalidAppID) {
				t.Errorf("RotationDir: err = %v, want ErrInvalidAppID", err)
			}
		})
	}
}

func TestTrustStoreZeroValue(t *testing.T) {
	var s TrustStore
	got, err := s.KeyPath(app)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(DefaultTrustedDir, app+".pub"); got != want {
		t.Errorf("zero TrustStore KeyPath = %q, want %q", got, want)
	}
	got, err = s.RotationDir(app)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(DefaultTrustedDir, app+".d"); got != want {
		t.Errorf("zero TrustStore RotationDir = %q, want %q", got, want)
	}
}
