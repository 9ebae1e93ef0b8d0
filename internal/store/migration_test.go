package store

import (
	"strings"
	"testing"
)

func TestNextMigration(t *testing.T) {
	steps := []Migration{{Version: 1, Name: "one"}, {Version: 2, Name: "two"}}
	for _, tc := range []struct {
		applied int
		want    string // the next step's name; "" for none
		err     string
	}{
		{0, "one", ""},
		{1, "two", ""},
		{2, "", ""},
		{3, "", "database schema version 3 is newer than this capgate understands (2)"},
	} {
		m, ok, err := NextMigration(steps, tc.applied)
		if ok != (tc.want != "") || m.Name != tc.want {
			t.Errorf("NextMigration(%d) = %q, %v; want %q", tc.applied, m.Name, ok, tc.want)
		}
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("NextMigration(%d) error %v, want %q", tc.applied, err, tc.err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("misnumbered steps: no panic")
		}
	}()
	NextMigration([]Migration{{Version: 2}}, 0)
}
