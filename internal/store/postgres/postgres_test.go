package postgres_test

import (
	"testing"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/store/storetest"
)

// open opens a store on dsn, closed when the test ends.
func open(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openFresh opens a store on a schema of its own.
func openFresh(t testing.TB) *postgres.Store {
	t.Helper()
	return open(t, pgtest.Schema(t))
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t) })
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
