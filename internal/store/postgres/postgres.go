package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/capgate/capgate/internal/store"
)

// Store is a store.Store on one PostgreSQL schema. It is safe for concurrent use by goroutines
// and by other processes (replicas) opening the same database and schema.
type Store struct {
	pool *pgxpool.Pool
	// watchConfig is the pool's connection settings without the round-trip counter, for the
	// connection each Watch holds on its own.
	watchConfig *pgx.ConnConfig
	trips       atomic.Int64 // RoundTrips
	closed      chan struct{}
	closeOnce   sync.Once
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Watcher = (*Store)(nil)
)

// errClosed is what Watch returns when the store is closed under it.
var errClosed = errors.New("postgres: store closed")

// Open connects to the database dsn names and brings the schema up to date. dsn is a libpq
// connection string, URL ("postgres://user:password@host:5432/db?sslmode=require") or
// keyword/value ("host=... dbname=..."); the pgxpool settings (pool_max_conns, ...) are
// understood too. The tables live in the schema the connection's search_path selects (e.g.
// "?search_path=capgate"), which must exist: Open creates tables, not schemas. A database whose
// schema is newer than this code is refused.
//
// Several processes may Open one database at the same moment: the schema is migrated once,
// under an advisory lock. Errors say what failed and never repeat dsn, which may hold a
// password.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the connection string, redacting the password only as far
		// as it can recognise it, and the error they wrap may quote it whole.
		return nil, errors.New("postgres: the connection string is not valid (it is not repeated here, as it may hold a password)")
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "capgate"
	}
	s := &Store{closed: make(chan struct{})}
	s.watchConfig = cfg.ConnConfig.Copy()
	s.watchConfig.RuntimeParams["application_name"] += " watch"
	cfg.ConnConfig.Tracer = tripCounter{&s.trips}
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool {
		if p.IdleDuration <= pingAfterIdle {
			return false
		}
		s.trips.Add(1)
		return true
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connection pool: %w", err)
	}
	s.pool = pool
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the pool's connections, waiting for those in use to come back, and ends every
// Watch. Using the store afterwards returns an error. Closing twice is not an error.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	s.pool.Close()
	return nil
}

// Revision returns the counter that triggers in the schema raise on every revocation and on
// every change to mandates, clients and apps, whichever process made it.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	var rev int64
	err := s.pool.QueryRow(ctx, `SELECT rev FROM revision WHERE id = 1`).Scan(&rev)
	return rev, errs.Wrap("revision", err)
}

// isUnique reports whether err is a unique or primary key violation.
func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// isDeadlock reports whether PostgreSQL ended the statement to break a deadlock (40P01): it
// was rolled back and may be run again.
func isDeadlock(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40P01"
}

// errs makes this store's errors: "postgres: ...".
var errs = store.Errors{Name: "postgres", NoRows: pgx.ErrNoRows}

// nulls is pgx's side of store.NullTypes: its pgtype.Int8 and pgtype.Text have the store's
// layouts.
type nulls struct{}

func (nulls) Int(p *store.NullInt) any   { return (*pgtype.Int8)(p) }
func (nulls) Text(p *store.NullText) any { return (*pgtype.Text)(p) }
func (nulls) IntArg(n store.NullInt) any { return pgtype.Int8(n) }

// list runs a query and reads each row with scan, wrapping any error with what.
func list[T any](ctx context.Context, s *Store, what string, scan func(store.Scanner, store.NullTypes) (T, error), q string, args ...any) ([]T, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, errs.Wrap(what, err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, nulls{}, scan)
	return out, errs.Wrap(what, err)
}
