// Package pgtest gives tests a PostgreSQL database to run against, and a schema of their own in
// it, so that tests in any package can use a real PostgreSQL without stepping on one another.
//
// The database is the one CAPGATE_TEST_POSTGRES names (a libpq URL or keyword/value string),
// by default DefaultDSN, a local server with trust authentication:
//
//	CAPGATE_TEST_POSTGRES=postgres://user:pass@db.example:5432/capgate_test go test ./...
//
// When that database cannot be reached the test is skipped, saying so, unless CI is "true":
// then it fails, so that a CI job that should test against PostgreSQL never passes without
// doing it.
//
// A typical test opens a store, or several (gateway replicas), on a fresh schema:
//
//	dsn := pgtest.Schema(t) // a new schema, dropped when the test ends
//	a, err := postgres.Open(t.Context(), dsn)
//	...
//	b, err := postgres.Open(t.Context(), dsn) // a second replica on the same tables
//
// Close the stores in t.Cleanup (registered after Schema, so that they close first), and the
// schema is dropped with everything in it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN is the environment variable naming the test database.
const EnvDSN = "CAPGATE_TEST_POSTGRES"

// DefaultDSN is the test database when EnvDSN is unset: a local PostgreSQL with trust
// authentication and a database named test.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// pingTimeout bounds the check that the database is there: a local server answers in
// milliseconds, and a test run should not hang on one that is not.
const pingTimeout = 5 * time.Second

// reachable caches each DSN's ping, so that a run without a database waits for the timeout
// once, not once per test.
var reachable sync.Map // dsn → error (nil: reachable)

// DSN returns the test database's connection string, once it has checked that the database
// answers. If it does not, DSN skips the test (t.Skipf) with a message naming EnvDSN, or,
// when the environment variable CI is "true", fails it (t.Fatalf). Messages never show the
// password.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		dsn = DefaultDSN
	}
	v, ok := reachable.Load(dsn)
	if !ok {
		v, _ = reachable.LoadOrStore(dsn, ping(dsn))
	}
	if err, _ := v.(error); err != nil {
		msg := fmt.Sprintf("pgtest: no PostgreSQL at %s (set %s to a reachable database): %v", redact(dsn), EnvDSN, err)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s; CI=true, so this is a failure, not a skip", msg)
		}
		t.Skipf("%s", msg)
	}
	return dsn
}

// ping connects to dsn and pings the server, and returns nil or why not, an error that never
// quotes dsn.
func ping(dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("%s is not a valid connection string", EnvDSN)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// Schema makes a new, empty schema with a unique name in the test database (DSN: the test is
// skipped or fails as DSN says when there is none), drops it and everything in it when the
// test ends (t.Cleanup), and returns a connection string whose search_path selects it, for
// postgres.Open. Each call makes another schema; open the same string several times for
// several stores sharing one schema.
func Schema(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("pgtest: schema name: %v", err)
	}
	name := "capgate_test_" + hex.EncodeToString(b[:])
	exec := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	out, err := withSearchPath(dsn, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return out
}

// withSearchPath returns dsn with its search_path set to schema, replacing any it had: a URL
// gets the query parameter search_path, a keyword/value string the keyword. schema must be a
// plain lower-case identifier, as Schema makes them, so that it needs no quoting.
func withSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("%s is not a valid URL", EnvDSN)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// libpq's keyword/value form: a later keyword overrides an earlier one.
	return strings.TrimSpace(dsn) + " search_path=" + schema, nil
}

// redact returns dsn for messages: a URL without its password, anything else reduced to a
// placeholder, since a keyword/value string may hold one anywhere.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "the connection string in " + EnvDSN
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	for k := range q {
		if strings.Contains(strings.ToLower(k), "password") {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
