package storetest

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/store"
)

// Migrations is what the schema checks need of a backend beyond store.Store, whose steps and
// bookkeeping table are its own.
type Migrations[S store.Store] struct {
	// Steps is how many schema steps the backend knows.
	Steps int
	// Open opens, and so migrates, the same database on each call.
	Open func() (S, error)
	// Applied returns the versions recorded as applied, and when each was (AppliedRows reads
	// them from a query's result).
	Applied func(S) (map[int]int64, error)
	// Record records version as applied, as a newer capgate would.
	Record func(s S, version int) error
}

// AppliedRows reads rows of (version, applied_at), for Migrations.Applied. It does not close
// rows.
func AppliedRows(rows store.Rows) (map[int]int64, error) {
	out := map[int]int64{}
	for rows.Next() {
		var v int
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		out[v] = at
	}
	return out, rows.Err()
}

// ApplyOnce opens a new database twice, one after the other: the first Open records every
// step, the second applies nothing.
func (m Migrations[S]) ApplyOnce(t *testing.T) {
	read := func() map[int]int64 {
		s, err := m.Open()
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		applied, err := m.Applied(s)
		if err != nil {
			t.Fatal(err)
		}
		return applied
	}
	first := read()
	if len(first) != m.Steps {
		t.Fatalf("first open applied %d migrations, want %d", len(first), m.Steps)
	}
	for v := 1; v <= m.Steps; v++ {
		if _, ok := first[v]; !ok {
			t.Errorf("version %d not recorded", v)
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

// NewerRefused records a step beyond the last the backend knows: Open must then refuse the
// database and say why.
func (m Migrations[S]) NewerRefused(t *testing.T) {
	s, err := m.Open()
	if err != nil {
		t.Fatal(err)
	}
	future := m.Steps + 1
	if err := m.Record(s, future); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = m.Open()
	if err == nil {
		s.Close()
		t.Fatal("Open of a database with a newer schema succeeded")
	}
	if want := fmt.Sprintf("database schema version %d is newer than this capgate understands", future); !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v, want it to say %q", err, want)
	}
}

// StepsUnchanged fails the test unless the SQL of each of steps has the SHA-256 digest (hex)
// at the same place in want, and there are as many of each.
func StepsUnchanged(t *testing.T, want []string, steps []store.Migration) {
	if len(steps) != len(want) {
		t.Errorf("%d schema steps, %d digests: a new step appends its digest", len(steps), len(want))
	}
	for i, m := range steps[:min(len(steps), len(want))] {
		if got := fmt.Sprintf("%x", sha256.Sum256([]byte(m.SQL))); got != want[i] {
			t.Errorf("step %d: text changed (SHA-256 %s, released as %s): a released step is never edited", i+1, got, want[i])
		}
	}
}
