package audit

import (
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
)

// TestWritersOnReplicas runs three Writers, each on its own connection pool to one PostgreSQL
// schema, as three replicas do, each with checkpoints, appending at once from many goroutines:
// every Append that returned a seq is in the log, the chain has no gap or fork, every
// checkpoint verifies, and the writers took turns (the store's sequenced append) rather than
// racing, so none was refused for contention.
func TestWritersOnReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	dsn := pgtest.Schema(t)
	key := testKey()
	const writers, callers, each = 3, 8, 40
	ws := make([]*Writer, writers)
	for i := range ws {
		s, err := postgres.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ws[i] = NewWriter(s, &Options{CheckpointKey: key, CheckpointEvery: 25, CheckpointInterval: 50 * time.Millisecond})
	}
	seqs := make(chan int64, writers*callers*each)
	var wg sync.WaitGroup
	for i := range writers * callers {
		wg.Go(func() {
			for j := range each {
				seq, err := ws[i%writers].Append(t.Context(), sampleRecord(i*each+j))
				if err != nil {
					t.Errorf("writer %d: %v", i%writers, err)
					return
				}
				seqs <- seq
			}
		})
	}
	wg.Wait()
	close(seqs)
	var conflicts int64
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		conflicts += w.Stats().Conflicts
	}
	seen := map[int64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Fatalf("seq %d given to two records", s)
		}
		seen[s] = true
	}
	if len(seen) != writers*callers*each {
		t.Fatalf("%d records acknowledged, want %d", len(seen), writers*callers*each)
	}
	if conflicts != 0 {
		t.Errorf("%d conflicts: the writers raced for the head instead of taking turns", conflicts)
	}

	s, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := Verify(t.Context(), s, pubOf(key))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %+v", rep.Problems)
	}
	cps, err := s.Checkpoints(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) < writers {
		t.Errorf("%d checkpoints, want at least one from each writer's Close", len(cps))
	}
	head, err := s.AuditHead(t.Context())
	if err != nil || head.Seq != int64(writers*callers*each) {
		t.Fatalf("head %d (%v), want %d", head.Seq, err, writers*callers*each)
	}
}
