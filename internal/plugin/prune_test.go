package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/lock"
)

// While an install holds the keep lock (it has kept a package the lockfile does not name
// yet), Prune leaves every package alone, so that a running gateway's sync never takes a
// package from under an install; once the install is done, Prune removes what the lock does
// not name, a dead install's staging copy included.
func TestPruneWaitsForInstalls(t *testing.T) {
	data := t.TempDir()
	named := PackageDir(data, "org.example.a", "sha256:"+strings.Repeat("a", 64))
	unnamed := PackageDir(data, "org.example.b", "sha256:"+strings.Repeat("b", 64))
	staging := filepath.Join(filepath.Dir(unnamed), ".staging-123")
	for _, d := range []string{named, unnamed, staging} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := &lock.File{Plugins: map[string]lock.Entry{"org.example.a": {AppID: "org.example.a", Digest: "sha256:" + strings.Repeat("a", 64)}}}

	release, ok, err := holdKeepLock(data, false, false) // an install keeping a package
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	loaded := func() (*lock.File, error) { return f, nil }
	if err := prune(data, loaded); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{named, unnamed, staging} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("pruned during an install: %s", d)
		}
	}
	release()
	// The lockfile is read with the keep lock held: an install that kept its package and
	// wrote the lock before it let go is in what prune reads.
	underLock := func() (*lock.File, error) {
		if r, ok, _ := holdKeepLock(data, false, true); ok {
			r()
			t.Error("prune read the lockfile without holding the keep lock")
		}
		return f, nil
	}
	if err := prune(data, underLock); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]bool{named: true, unnamed: false, staging: false} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: kept %v, want %v", d, err == nil, want)
		}
	}
	if _, err := os.Stat(filepath.Dir(unnamed)); err == nil {
		t.Errorf("the emptied app folder stays")
	}
	// Installs share the lock with each other.
	r1, ok1, _ := holdKeepLock(data, false, true)
	r2, ok2, _ := holdKeepLock(data, false, true)
	if !ok1 || !ok2 {
		t.Fatalf("two installs do not share the keep lock: %v %v", ok1, ok2)
	}
	r1()
	r2()
}
