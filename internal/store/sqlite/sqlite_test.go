package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/internal/store/storetest"
)

// openTemp opens a new database in the test's temporary folder, closed when the test ends.
func openTemp(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capgate.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t)
		return s
	})
}
