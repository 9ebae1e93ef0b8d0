package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// BenchmarkIndexAudit measures the indexer's insert of a full batch (indexBatch entries of
// the size of a call's record) into the SQLite index, per entry.
func BenchmarkIndexAudit(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "capgate.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := []byte(`{"app":"system.settings","call":"system.settings.read","decision":"allow","params_hash":"` + strings.Repeat("a", 64) + `","pad":"` + strings.Repeat("x", 300) + `"}`)
	entries := make([]store.AuditEntry, indexBatch)
	var seq int64
	for b.Loop() {
		for i := range entries {
			seq++
			entries[i] = store.AuditEntry{Seq: seq, PrevHash: fmt.Sprintf("%064d", seq-1), Hash: fmt.Sprintf("%064d", seq), At: time.Now(), Body: body}
		}
		if err := s.indexAudit(b.Context(), entries); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(seq)/1000, "µs/entry")
}

// TestIndexAuditInsertsEveryRow indexes batches of sizes around indexRowsPerInsert (the rows
// one INSERT carries), some overlapping entries already indexed, and checks that every entry
// is in the index exactly once, as it was given.
func TestIndexAuditInsertsEveryRow(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "capgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	entry := func(seq int64) store.AuditEntry {
		return store.AuditEntry{Seq: seq, PrevHash: fmt.Sprintf("p%d", seq), Hash: fmt.Sprintf("h%d", seq),
			At: time.Unix(1796307060+seq, 0).UTC(), Body: []byte(fmt.Sprintf(`{"n":%d}`, seq))}
	}
	var next int64 = 1
	for _, n := range []int{1, indexRowsPerInsert - 1, indexRowsPerInsert, indexRowsPerInsert + 1, 3*indexRowsPerInsert + 7} {
		batch := make([]store.AuditEntry, 0, n+2)
		if next > 2 {
			batch = append(batch, entry(next-2), entry(next-1)) // already indexed: left as they are
		}
		for range n {
			batch = append(batch, entry(next))
			next++
		}
		if err := s.indexAudit(t.Context(), batch); err != nil {
			t.Fatalf("a batch of %d: %v", len(batch), err)
		}
	}
	got, err := s.AuditRange(t.Context(), 1, next, int(next))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got)) != next-1 {
		t.Fatalf("the index holds %d entries, want %d", len(got), next-1)
	}
	for i, e := range got {
		want := entry(int64(i) + 1)
		if e.Seq != want.Seq || e.Hash != want.Hash || e.PrevHash != want.PrevHash || !e.At.Equal(want.At) || string(e.Body) != string(want.Body) {
			t.Fatalf("entry %d: got %+v, want %+v", i+1, e, want)
		}
	}
}
