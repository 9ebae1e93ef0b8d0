// Package sqlite is the default store: one SQLite database file, shared safely by every
// goroutine and every process that opens it.
//
// The file runs in WAL mode with synchronous=FULL, so a write that returned survives a crash
// of the process or the machine, and with a busy timeout, so another process holding the
// write lock makes a writer wait instead of fail. Every write runs in a BEGIN IMMEDIATE
// transaction: it takes the write lock before reading, so the read-then-write methods
// (TakeUse, AnswerConsent) are atomic across processes and never deadlock into SQLITE_BUSY by
// upgrading a read lock. The audit chain is kept beside the database, in a folder of segment
// files of its own (auditlog.go).
//
// Times are stored as Unix nanoseconds (INTEGER, UTC) and come back in UTC with full
// nanosecond precision; the zero time is stored as NULL and comes back as the zero time. A
// time outside what int64 nanoseconds can hold (before 1678 or after 2262) is refused.
// Byte fields come back as stored, except that nil and empty are not told apart.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/capgate/capgate/internal/store"
)

// BusyTimeout is how long a connection waits for another connection or process holding the
// write lock before it gives up with SQLITE_BUSY. Writes are short, so a wait this long means
// something is stuck rather than busy.
const BusyTimeout = 5 * time.Second

// Store is a store.Store on one SQLite file. It is safe for concurrent use by goroutines and
// by other processes opening the same file.
type Store struct {
	db *sql.DB
	// writeSem lets one goroutine of this process at a time begin a write transaction, so
	// that in-process writers queue here, where the context is honoured, instead of polling
	// SQLite's busy handler. Other processes are held off by the busy timeout.
	writeSem chan struct{}
	stmts    sync.Map // query text → *sql.Stmt
	path     string   // the database file, absolute
	changes  *changes // shared with every process on the file (changes.go)
	states   stateCache
	alog     *auditLog // the audit chain (auditlog.go)
}

var _ store.Store = (*Store)(nil)

// Open opens the database file at path, creating it (mode 0600) and its folder (mode 0700)
// when missing, and brings its schema up to date. A database whose schema is newer than
// this code is refused.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: database path: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: database folder: %w", err)
	}
	// Create the file ourselves so it is private from the start; SQLite gives the -wal and
	// -shm files the database file's mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: database file: %w", err)
	}

	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	// Keep enough idle connections for a busy gateway's concurrent readers: opening a SQLite
	// connection (and applying its pragmas) costs more than the reads it serves.
	db.SetMaxIdleConns(maxIdleConns)
	// Without the change counter every check at use reads the store, as it did before it:
	// slower, never wrong; the error is not the caller's to handle.
	ch, _ := openChanges(abs + ".changes")
	s := &Store{db: db, writeSem: make(chan struct{}, 1), path: abs, changes: ch}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.openAuditLog(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return s, nil
}

// dsn is the driver's data source name for the file at abs: a file: URI, so that any
// character in the path is escaped, with the pragmas every connection must run.
func dsn(abs string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	// Write transactions begin IMMEDIATE: they take the write lock before their first read.
	q.Set("_txlock", "immediate")
	u.RawQuery = q.Encode()
	return u.String()
}

// Path returns the database file's absolute path.
func (s *Store) Path() string { return s.path }

// Close closes the database. Using the store afterwards returns an error.
func (s *Store) Close() error {
	jerr := s.alog.close()
	s.stmts.Range(func(_, st any) bool { st.(*sql.Stmt).Close(); return true })
	return errors.Join(jerr, s.db.Close())
}

// maxIdleConns is how many open connections the pool keeps for reuse.
const maxIdleConns = 32

// Changes returns the counter of changes a cached decision may depend on, shared by every
// process on this database file (see changes.go), and false when it is not available. A
// caller that read it before reading the store, and reads the same value later, knows that no
// such change was committed in between by any process that opened the file with this code.
func (s *Store) Changes() (uint64, bool) { return s.changes.load() }

// write runs fn in one immediate transaction and commits it if fn returns nil, then adds one
// to the change counter.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.writeQuiet(ctx, fn); err != nil {
		return err
	}
	s.changes.add()
	return nil
}

// writeQuiet is write without the change counter: for the writes of the call path that change
// nothing a cached decision depends on (audit records and checkpoints, the apps' own state, a
// token's use taken).
func (s *Store) writeQuiet(ctx context.Context, fn func(tx *sql.Tx) error) error {
	select {
	case s.writeSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writeSem }()

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return errs.Wrap("begin", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return errs.Wrap("commit", err)
	}
	return nil
}

// isUnique reports whether err is a UNIQUE or PRIMARY KEY constraint failure.
func isUnique(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return true
	}
	return false
}

// errs makes this store's errors: "sqlite: ...".
var errs = store.Errors{Name: "sqlite", NoRows: sql.ErrNoRows}

// nulls is database/sql's side of store.NullTypes: its NullInt64 and NullString have the
// store's layouts.
type nulls struct{}

func (nulls) Int(p *store.NullInt) any   { return (*sql.NullInt64)(p) }
func (nulls) Text(p *store.NullText) any { return (*sql.NullString)(p) }
func (nulls) IntArg(n store.NullInt) any { return sql.NullInt64(n) }

// checkAffected turns an UPDATE or DELETE that touched no row into ErrNotFound.
func checkAffected(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return errs.Wrap(what, err)
	}
	return errs.Affected(n, what)
}

// list runs a query (in tx, unless nil) and reads each row with scan, wrapping any error
// with what.
func list[T any](ctx context.Context, s *Store, tx *sql.Tx, what string, scan func(store.Scanner, store.NullTypes) (T, error), q string, args ...any) ([]T, error) {
	var rows *sql.Rows
	var err error
	if tx != nil {
		rows, err = s.txQuery(ctx, tx, q, args...)
	} else {
		rows, err = s.query(ctx, q, args...)
	}
	if err != nil {
		return nil, errs.Wrap(what, err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, nulls{}, scan)
	return out, errs.Wrap(what, err)
}

// Revision returns the counter that triggers in the schema raise on every revocation and on
// every change to mandates, clients and apps, whichever process made it.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	var rev int64
	err := s.queryRow(ctx, `SELECT rev FROM revision WHERE id = 1`).Scan(&rev)
	return rev, errs.Wrap("revision", err)
}

// stmt returns the statement for q, prepared once for the store: database/sql prepares it
// again on each connection that runs it and keeps it there, so a hot query is parsed once
// per connection instead of once per call. It returns nil when q cannot be prepared; the
// callers then run q unprepared, which reports the same error.
func (s *Store) stmt(ctx context.Context, q string) *sql.Stmt {
	if st, ok := s.stmts.Load(q); ok {
		return st.(*sql.Stmt)
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	if prev, loaded := s.stmts.LoadOrStore(q, st); loaded {
		st.Close()
		return prev.(*sql.Stmt)
	}
	return st
}

func (s *Store) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := s.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.db.QueryRowContext(ctx, q, args...)
}

func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := s.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.db.QueryContext(ctx, q, args...)
}

// txRow and txExec run q in tx through the store's prepared statement, which database/sql
// reuses when it is already prepared on the transaction's connection.
func (s *Store) txRow(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if st := s.stmt(ctx, q); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, q, args...)
}

func (s *Store) txExec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if st := s.stmt(ctx, q); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, q, args...)
}

func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	if st := s.stmt(ctx, q); st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, q, args...)
}
