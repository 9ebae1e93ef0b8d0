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
	for _, batch := range []int{1, 2, 64} {
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

// BenchmarkReads measures the reads on a call's path: CheckToken (the check at use of a root
// token without a use limit), GetState (an app's setting) and GetToken.
func BenchmarkReads(b *testing.B) {
	s, _ := openTemp(b)
	ctx := b.Context()
	now := time.Now()
	must(b, s.PutClient(ctx, store.Client{ID: "cl", Name: "bench", Trust: "user", Created: now}))
	must(b, s.PutToken(ctx, store.Token{ID: "tk", ClientID: "cl", IssuedAt: now, ExpiresAt: now.Add(time.Hour), Body: []byte("{}")}))
	must(b, s.PutState(ctx, "org.example.a", "display.brightness", []byte("70")))
	for _, r := range []struct {
		name string
		call func() error
	}{
		{"CheckToken", func() error { return s.CheckToken(ctx, "tk", now) }},
		{"GetState", func() error { _, err := s.GetState(ctx, "org.example.a", "display.brightness"); return err }},
		{"GetToken", func() error { _, err := s.GetToken(ctx, "tk"); return err }},
	} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := r.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
