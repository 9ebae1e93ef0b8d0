package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/atomicfile"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// slowStore costs about what one fsync of a small transaction does, per AppendAudit call.
type slowStore struct{ *memAudit }

func (s slowStore) AppendAudit(ctx context.Context, es []store.AuditEntry) error {
	time.Sleep(200 * time.Microsecond)
	return s.memAudit.AppendAudit(ctx, es)
}

// BenchmarkAppendParallel measures Append under concurrency: on the in-memory store, where
// the cost is encoding, hashing and the group-commit hand-off, and on a store whose every
// call costs about an fsync, where group commit is what keeps throughput up. Records per
// batch shows how well concurrent appends share one store call.
func BenchmarkAppendParallel(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchAppend(b, &memAudit{}) })
	b.Run("fsync-like", func(b *testing.B) {
		b.SetParallelism(16)
		benchAppend(b, slowStore{&memAudit{}})
	})
}

func benchAppend(b *testing.B, s store.Audit) { benchAppendWith(b, NewWriter(s, nil)) }

func benchAppendWith(b *testing.B, w *Writer) {
	rec := sampleRecord(0)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := w.Append(context.Background(), rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	w.Close()
	st := w.Stats()
	if st.Batches > 0 {
		b.ReportMetric(float64(st.Records)/float64(st.Batches), "records/batch")
	}
}

func BenchmarkVerify(b *testing.B) {
	m := buildLog(b, 5000, 5000)
	pub := pubOf(testKey())
	b.ResetTimer()
	for range b.N {
		if rep, err := Verify(context.Background(), m, pub); err != nil || !rep.OK() {
			b.Fatal(err, rep.Problems)
		}
	}
}

// BenchmarkAppendSQLiteHead measures what keeping the head file costs, on a real SQLite file
// (WAL, synchronous=FULL) with 16 appenders at once as a loaded gateway has: the store alone,
// the store and the head file (one more sync per batch, before the batch's callers are told),
// the store and the mirror file (written from its own goroutine, after the callers are told),
// and all three, as the gateway runs.
// ns/op is per record; records/batch shows how group commit absorbs the head file's sync.
func BenchmarkAppendSQLiteHead(b *testing.B) {
	for _, bc := range []struct {
		name         string
		head, mirror bool
	}{{"store", false, false}, {"store+head", true, false}, {"store+mirror", false, true}, {"store+head+mirror", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			st, err := sqlite.Open(context.Background(), filepath.Join(dir, "capgate.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			o := &Options{Logger: quietLogger()}
			if bc.head {
				o.HeadPath = filepath.Join(dir, "audit.head")
			}
			if bc.mirror {
				o.MirrorPath = filepath.Join(dir, "audit.jsonl")
			}
			b.SetParallelism(8) // 16 goroutines on this machine's two processors
			benchAppendWith(b, NewWriter(st, o))
		})
	}
}

// BenchmarkHeadFileAdvance is one head file write alone: lock, read both slots, write one,
// sync. Beside it, a write-and-rename of the same bytes (internal/atomicfile), which the
// head file does not use: it costs a sync of the folder as well.
func BenchmarkHeadFileAdvance(b *testing.B) {
	b.Run("in place", func(b *testing.B) {
		hf := NewHeadFile(filepath.Join(b.TempDir(), "audit.head"))
		defer hf.Close()
		cp := SignCheckpoint(testKey(), 1, hashOf(1), testTime)
		b.ResetTimer()
		for i := range b.N {
			seq := int64(i + 1)
			if _, err := hf.Advance(Head{Seq: seq, Hash: hashOf(seq), Checkpoint: cp}, func(Head) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("atomicfile", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "audit.head")
		slot, _ := encodeSlot(testHead(1, 1))
		b.ResetTimer()
		for range b.N {
			if err := atomicfile.Write(path, slot, 0o600, 0o700, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAppendSQLiteSequential is one appender at a time on a real SQLite file, the store
// alone and with the head file, beside one synchronous 4 KiB append to a file in the same
// folder (the floor of a durable commit): ns/op is one Append's latency.
func BenchmarkAppendSQLiteSequential(b *testing.B) {
	b.Run("sync-write-4KiB", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "floor"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		page := make([]byte, 4096)
		for b.Loop() {
			if _, err := f.Write(page); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, head := range []bool{false, true} {
		name := "store"
		if head {
			name = "store+head"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			st, err := sqlite.Open(context.Background(), filepath.Join(dir, "capgate.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			o := &Options{Logger: quietLogger()}
			if head {
				o.HeadPath = filepath.Join(dir, "audit.head")
			}
			w := NewWriter(st, o)
			defer w.Close()
			i := 0
			for b.Loop() {
				if _, err := w.Append(context.Background(), sampleRecord(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
