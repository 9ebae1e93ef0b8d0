package files_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/files"
)

// Scan and Diff see a file created, modified and removed, a folder created, and refuse a
// folder larger than the bound; a symbolic link is an entry, never followed.
func TestWatchScanDiff(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kept.txt", "a")
	write("gone.txt", "b")
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	before, err := files.Scan(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before["link/secret"]; ok {
		t.Fatal("the scan followed a symbolic link out of the folder")
	}
	time.Sleep(10 * time.Millisecond)
	write("kept.txt", "changed")
	write("new.txt", "c")
	if err := os.Remove(filepath.Join(root, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	after, err := files.Scan(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files.Diff(before, after) {
		got[f.Path] = f.Kind
		if f.ID(f.Stat) == "" {
			t.Error("a change without an id")
		}
	}
	want := map[string]string{"kept.txt": "modified", "new.txt": "created", "gone.txt": "removed", "sub": "created"}
	if len(got) != len(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	for p, c := range want {
		if got[p] != c {
			t.Errorf("%s: %q, want %q", p, got[p], c)
		}
	}
	if d := files.Diff(after, after); len(d) != 0 {
		t.Errorf("no change, yet %v", d)
	}
	if _, err := files.Scan(root, 2); !errors.Is(err, files.ErrTooManyEntries) {
		t.Errorf("a folder over the bound: %v", err)
	}
}
