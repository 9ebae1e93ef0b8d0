package pgtest

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestWithSearchPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u@h/db", "postgres://u@h/db?search_path=s1"},
		{"postgres://u@h/db?sslmode=disable&search_path=old", "postgres://u@h/db?search_path=s1&sslmode=disable"},
		{"postgresql://u:p@h:5/db?sslmode=disable", "postgresql://u:p@h:5/db?search_path=s1&sslmode=disable"},
		{"host=h dbname=db ", "host=h dbname=db search_path=s1"},
	} {
		got, err := withSearchPath(tc.in, "s1")
		if err != nil || got != tc.want {
			t.Errorf("withSearchPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	for _, dsn := range []string{
		"postgres://user:hunter2@h/db?sslmode=disable",
		"postgres://user@h/db?password=hunter2",
		"postgres://user@h/db?sslpassword=hunter2",
		"host=h password=hunter2",
		"postgres://user:hunter2@[::1/db",
	} {
		if got := redact(dsn); strings.Contains(got, "hunter2") {
			t.Errorf("redact(%q) = %q: shows the password", dsn, got)
		}
	}
}

// TestSchema checks that the DSN Schema returns selects a new, empty schema of its own, and
// that the schema is dropped when the test ends.
func TestSchema(t *testing.T) {
	var name string
	t.Run("use", func(t *testing.T) {
		dsn := Schema(t)
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var tables int
		if err := conn.QueryRow(t.Context(), `SELECT current_schema(),
				(SELECT count(*) FROM pg_tables WHERE schemaname = current_schema())`).Scan(&name, &tables); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, "capgate_test_") || tables != 0 {
			t.Errorf("schema %q with %d tables, want a new, empty capgate_test_ schema", name, tables)
		}
		if other := Schema(t); other == dsn {
			t.Errorf("two calls of Schema returned the same DSN")
		}
	})
	if name == "" {
		return // skipped or failed
	}
	conn, err := pgx.Connect(t.Context(), DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left bool
	if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left {
		t.Errorf("schema %s left behind after the test", name)
	}
}
