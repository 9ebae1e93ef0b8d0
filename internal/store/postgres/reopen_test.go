package postgres_test

import (
	"testing"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/store/storetest"
)

// TestReopen writes one of everything, closes the store, opens the schema again and finds it
// all.
func TestReopen(t *testing.T) {
	dsn := pgtest.Schema(t)
	storetest.Reopen(t, func() (store.Store, error) { return postgres.Open(t.Context(), dsn) })
}

// TestTimes checks what the suite does not require: times keep nanoseconds and come back in
// UTC, and those int64 nanoseconds cannot hold are refused.
func TestTimes(t *testing.T) {
	storetest.ExactTimes(t, openFresh(t))
}
