package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/internal/store/storetest"
)

// TestReopen writes one of everything, closes the file, opens it again and finds it all.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	storetest.Reopen(t, func() (store.Store, error) { return sqlite.Open(t.Context(), path) })
}

// TestFileModes checks that Open creates the folder and the file private to the user.
func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "capgate")
	path := filepath.Join(dir, "capgate.db")
	s, err := sqlite.Open(t.Context(), path)
	must(t, err)
	defer s.Close()
	// A write, so that the -wal file exists.
	must(t, s.PutState(t.Context(), "a", "k", []byte("v")))
	for name, want := range map[string]os.FileMode{
		dir:           0o700 | os.ModeDir,
		path:          0o600,
		path + "-wal": 0o600,
	} {
		fi, err := os.Stat(name)
		must(t, err)
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(name), fi.Mode(), want)
		}
	}
}

// TestTimes checks what the suite does not require: SQLite keeps times to the nanosecond,
// and refuses those int64 nanoseconds cannot hold.
func TestTimes(t *testing.T) {
	s, _ := openTemp(t)
	storetest.ExactTimes(t, s)
}

// TestAwkwardPath opens a file whose path has characters a URI would misread.
func TestAwkwardPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a ?b#c%20d&_pragma=x")
	path := filepath.Join(dir, "capgate.db")
	s, err := sqlite.Open(t.Context(), path)
	must(t, err)
	must(t, s.PutState(t.Context(), "a", "k", []byte("v")))
	must(t, s.Close())
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at the path given: %v", err)
	}
}
