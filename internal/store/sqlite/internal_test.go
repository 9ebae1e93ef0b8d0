package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/capgate/capgate/internal/store/storetest"
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

// migrationsIn is the schema checks' view of the database file at path.
func migrationsIn(t *testing.T, path string) storetest.Migrations[*Store] {
	return storetest.Migrations[*Store]{
		Steps: len(migrations),
		Open:  func() (*Store, error) { return Open(t.Context(), path) },
		Applied: func(s *Store) (map[int]int64, error) {
			rows, err := s.db.QueryContext(t.Context(), `SELECT version, applied_at FROM schema_migrations`)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			return storetest.AppliedRows(rows)
		},
		Record: func(s *Store, version int) error {
			_, err := s.db.ExecContext(t.Context(),
				`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, version)
			return err
		},
	}
}

func TestMigrationsApplyOnce(t *testing.T) {
	migrationsIn(t, filepath.Join(t.TempDir(), "capgate.db")).ApplyOnce(t)
}

func TestNewerSchemaRefused(t *testing.T) {
	migrationsIn(t, filepath.Join(t.TempDir(), "capgate.db")).NewerRefused(t)
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

// TestMigrationsUnchanged holds every released step to the text it was released with: a
// database that applied a step never applies it again, so an edit would leave old and new
// databases with different schemas. A new step appends its digest here.
func TestMigrationsUnchanged(t *testing.T) {
	storetest.StepsUnchanged(t, []string{
		"1556e7fa68d05df5447bea50a925f0c4e6030687cf61e9a4bfec7944f3f0b05b",
		"654e5553a04fb6da480c7a09741cfed337eeda5c1e1970601ef629e45db51e7c",
		"6f175172402d9644a9ec0cb9b8770c1790a0f171c197c9aa55b7a8fb35e0166e",
		"3eb67c79f5a54be7859d0c466c6f21a0b56b5b16358d3f635df1264227ce1a88",
		"1b06302098bede3c471b83c10de8464575d41bbb3d2eefbc98d3ab18e9ae375b",
	}, migrations)
}
