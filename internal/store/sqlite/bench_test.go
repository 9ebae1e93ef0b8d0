package sqlite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

func BenchmarkTakeUse(b *testing.B) {
	s, _ := openTemp(b)
	now := time.Now()
	ctx := b.Context()
	must(b, s.PutToken(ctx, store.Token{ID: "root", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))
	must(b, s.PutToken(ctx, store.Token{ID: "child", ParentID: "root", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))
	for _, id := range []string{"root", "child"} {
		b.Run(id, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.TakeUse(ctx, id, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendAudit(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s, _ := openTemp(b)
			ctx := b.Context()
			body := []byte(`{"call":"fs.read","app":"org.example.files","decision":"allow"}`)
			var head store.AuditEntry
			entries := make([]store.AuditEntry, batch)
			for b.Loop() {
				for i := range entries {
					e := store.AuditEntry{Seq: head.Seq + 1, PrevHash: head.Hash, At: time.Now(), Body: body}
					e.Hash = fmt.Sprintf("h%d", e.Seq)
					entries[i], head = e, e
				}
				if err := s.AppendAudit(ctx, entries); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}
