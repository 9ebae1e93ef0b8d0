package audit

import (
	"context"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
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

func benchAppend(b *testing.B, s store.Audit) {
	w := NewWriter(s, nil)
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
