package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/store/storetest"
)

// migrationsOn is the schema checks' view of the schema dsn selects.
func migrationsOn(t *testing.T, dsn string) storetest.Migrations[*Store] {
	return storetest.Migrations[*Store]{
		Steps: len(migrations),
		Open:  func() (*Store, error) { return Open(t.Context(), dsn) },
		Applied: func(s *Store) (map[int]int64, error) {
			rows, err := s.pool.Query(t.Context(), `SELECT version, applied_at FROM schema_migrations`)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			return storetest.AppliedRows(rows)
		},
		Record: func(s *Store, version int) error {
			_, err := s.pool.Exec(t.Context(),
				`INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'future', 0)`, version)
			return err
		},
	}
}

// TestOpenConcurrently opens one new schema from several goroutines at once, each with its
// own pool, as replicas starting together would: every Open must succeed, and every step must
// be applied once.
func TestOpenConcurrently(t *testing.T) {
	dsn := pgtest.Schema(t)
	const n = 8
	stores := make([]*Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(t.Context(), dsn)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	var rows int
	if err := stores[0].pool.QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(migrations) {
		t.Errorf("schema_migrations has %d rows, want %d, one per step", rows, len(migrations))
	}
	for _, s := range stores {
		if _, err := s.Revision(t.Context()); err != nil {
			t.Errorf("Revision: %v", err)
		}
	}
}

// TestMigrationsApplyOnce opens a schema twice, one after the other: the second Open applies
// nothing.
func TestMigrationsApplyOnce(t *testing.T) {
	migrationsOn(t, pgtest.Schema(t)).ApplyOnce(t)
}

func TestNewerSchemaRefused(t *testing.T) {
	migrationsOn(t, pgtest.Schema(t)).NewerRefused(t)
}

// TestObjectsInSchema checks that every table and function lands in the search_path's schema,
// and that the functions find their tables whatever the caller's search_path.
func TestObjectsInSchema(t *testing.T) {
	dsn := pgtest.Schema(t)
	s, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	var schema string
	var tables, functions int
	if err := s.pool.QueryRow(ctx, `SELECT current_schema(),
			(SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()),
			(SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
				WHERE n.nspname = current_schema() AND p.proname LIKE 'capgate\_%')`).
		Scan(&schema, &tables, &functions); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(schema, "capgate_test_") || tables != 11 || functions != 5 {
		t.Errorf("schema %s has %d tables and %d capgate functions, want a test schema with 11 and 5", schema, tables, functions)
	}
	// A session whose search_path does not name the schema still gets the right tables
	// through the functions and triggers.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	q := `SET search_path = pg_catalog;
		INSERT INTO ` + schema + `.tokens (id, client_id, hash, max_uses, uses, revoked, audit_tag, body)
			VALUES ('tk', 'cl', '', 0, 0, false, '', '');
		SELECT ` + schema + `.capgate_take_use('tk', 1, 64);
		SELECT ` + schema + `.capgate_revoke('tk', 1, 64);
		RESET search_path`
	if _, err := conn.Exec(ctx, q); err != nil {
		t.Fatalf("functions with another search_path: %v", err)
	}
	tok, err := s.GetToken(ctx, "tk")
	if err != nil {
		t.Fatal(err)
	}
	if tok.Uses != 1 || !tok.Revoked {
		t.Errorf("token after a use and a revocation from another search_path: uses %d, revoked %v", tok.Uses, tok.Revoked)
	}
	if rev, err := s.Revision(ctx); err != nil || rev != 1 {
		t.Errorf("Revision after a revocation from another search_path: %d, %v; want 1", rev, err)
	}
}

// TestOpenErrors checks that Open says what failed, and never shows the password.
func TestOpenErrors(t *testing.T) {
	const secret = "s3cr3t-Passw0rd"
	base := pgtest.DSN(t)
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"not a connection string", "postgres://capgate:" + secret + "@[::1/db?sslmode=nonsense", "connection string is not valid"},
		{"bad option", "postgres://capgate:" + secret + "@127.0.0.1/db?sslmode=" + secret, "connection string is not valid"},
		{"keyword form", "host=127.0.0.1 password=" + secret + " sslmode=" + secret, "connection string is not valid"},
		{"nobody listening", "postgres://capgate:" + secret + "@127.0.0.1:1/db?sslmode=disable&connect_timeout=5", "127.0.0.1"},
		{"no such schema", mustSearchPath(t, base, "capgate_no_such_schema"), "search_path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s, err := Open(ctx, tc.dsn)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error shows the password: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "postgres: ") {
				t.Errorf("error %q, want it to start with postgres: and say %q", err, tc.want)
			}
		})
	}
}

func mustSearchPath(t *testing.T, dsn, schema string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// TestMigrationsUnchanged holds every released step to the text it was released with: a
// database that applied a step never applies it again, so an edit would leave old and new
// databases with different schemas. A new step appends its digest here.
func TestMigrationsUnchanged(t *testing.T) {
	storetest.StepsUnchanged(t, []string{
		"ee609d0a37ae5812c9142a8f072cebb9b7938f474d3e796600afc32f4780ab62",
		"c900b58ad98ece9882c6d54e13d807d38a5aca2de3eb0a5235933822606a2674",
		"c429c7bcc13272d6790fa889e3d692c77f0e905fec22e2c6f96c644da8085d89",
		"d545b0d25a637ffc3cb0920f4f9dbb21ee119402203807d722c85d9afb68880a",
		"be557b1c1862f827bf660fbb2089a8790e5fb1320743ff2499932076bbd5b3b2",
		"bd31d0af41ecb938bb1cd64c94f6be58fffe72c879cd87f57581c230a357abaf",
	}, migrations)
}
