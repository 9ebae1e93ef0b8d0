package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestPragmas(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "capgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Several connections at once, so that the pragmas are seen to be per connection.
	s.db.SetMaxIdleConns(0)
	conns := make([]func() error, 0, 3)
	for range 3 {
		c, err := s.db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c.Close)
		for pragma, want := range map[string]string{
			"journal_mode": "wal",
			"synchronous":  "2", // FULL
			"foreign_keys": "1",
			"busy_timeout": "5000",
		} {
			var got string
			if err := c.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatalf("%s: %v", pragma, err)
			}
			if got != want {
				t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
			}
		}
	}
	for _, c := range conns {
		c()
	}
}

func TestMigrationsApplyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	read := func() map[int]int64 {
		s, err := Open(t.Context(), path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		rows, err := s.db.QueryContext(t.Context(), `SELECT version, applied_at FROM schema_migrations`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[int]int64{}
		for rows.Next() {
			var v int
			var at int64
			if err := rows.Scan(&v, &at); err != nil {
				t.Fatal(err)
			}
			out[v] = at
		}
		return out
	}
	first := read()
	if len(first) != len(migrations) {
		t.Fatalf("first open applied %d migrations, want %d", len(first), len(migrations))
	}
	for i := range migrations {
		if _, ok := first[i+1]; !ok {
			t.Errorf("version %d not recorded", i+1)
		}
	}
	second := read()
	if len(second) != len(first) {
		t.Fatalf("second open: %d migrations recorded, want %d", len(second), len(first))
	}
	for v, at := range first {
		if second[v] != at {
			t.Errorf("version %d applied again on the second open", v)
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	future := len(migrations) + 1
	if _, err := s.db.ExecContext(t.Context(),
		`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, future); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(t.Context(), path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a database with a newer schema succeeded")
	}
	if want := fmt.Sprintf("database schema version %d is newer than this capgate understands", future); !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v, want it to say %q", err, want)
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"a/", "a0", true},
		{"a\xff", "b", true},
		{"\xff\xff", "", false},
		{"\U0010FFFF", "\xf4\x8f\xbf\xc0", true},
	} {
		got, ok := prefixEnd(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
