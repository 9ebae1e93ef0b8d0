package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/store/storetest"
)

// openOneConn opens a store whose pool holds one connection, so that every statement, once
// prepared, stays prepared.
func openOneConn(t testing.TB) *postgres.Store {
	t.Helper()
	dsn := pgtest.Schema(t)
	if strings.Contains(dsn, "://") {
		return open(t, dsn+"&pool_max_conns=1") // Schema's URL has a query: its search_path
	}
	return open(t, dsn+" pool_max_conns=1")
}

// TestRoundTrips checks the hot methods' cost: one round trip per call, once their statement
// is prepared on the connection.
func TestRoundTrips(t *testing.T) {
	s := openOneConn(t)
	ctx := t.Context()
	now := time.Now()
	must(t, s.PutToken(ctx, store.Token{ID: "root", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))
	must(t, s.PutToken(ctx, store.Token{ID: "child", ParentID: "root", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))
	must(t, s.PutConsent(ctx, store.Consent{ID: "cr_1", State: store.ConsentPending, Created: now}))
	var head store.AuditEntry
	calls := []struct {
		name string
		call func() error
	}{
		{"TakeUse", func() error { _, err := s.TakeUse(ctx, "child", now); return err }},
		{"TakeUse of no token", func() error {
			if _, err := s.TakeUse(ctx, "none", now); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("TakeUse of no token: %v", err)
			}
			return nil
		}},
		{"GetToken", func() error { _, err := s.GetToken(ctx, "child"); return err }},
		{"GetConsent", func() error { _, err := s.GetConsent(ctx, "cr_1"); return err }},
		{"Revision", func() error { _, err := s.Revision(ctx); return err }},
		{"AppendAudit", func() error {
			es := storetest.EntriesAfter(head, 3, "rt")
			head = es[2]
			return s.AppendAudit(ctx, es)
		}},
		{"AuditHead", func() error { _, err := s.AuditHead(ctx); return err }},
		{"AnswerConsent", func() error { // the first call answers, the second conflicts
			err := s.AnswerConsent(ctx, "cr_1", store.ConsentApproved, "p", "", now)
			if errors.Is(err, store.ErrConflict) {
				return nil
			}
			return err
		}},
		{"Revoke", func() error { return s.Revoke(ctx, "root", now) }},
	}
	for _, c := range calls {
		must(t, c.call()) // prepares the statement
		before := s.RoundTrips()
		must(t, c.call())
		if n := s.RoundTrips() - before; n != 1 {
			t.Errorf("%s: %d round trips, want 1", c.name, n)
		}
	}
}

// benchTrips reports the round trips per operation the benchmark made.
func benchTrips(b *testing.B, s *postgres.Store, before int64) {
	b.ReportMetric(float64(s.RoundTrips()-before)/float64(b.N), "roundtrips/op")
}

func BenchmarkTakeUse(b *testing.B) {
	s := openFresh(b)
	now := time.Now()
	ctx := b.Context()
	must(b, s.PutToken(ctx, store.Token{ID: "root", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))
	must(b, s.PutToken(ctx, store.Token{ID: "child", ParentID: "root", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))
	must(b, s.PutToken(ctx, store.Token{ID: "grandchild", ParentID: "child", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))
	for _, id := range []string{"root", "child", "grandchild"} {
		b.Run(id, func(b *testing.B) {
			before := s.RoundTrips()
			for b.Loop() {
				if _, err := s.TakeUse(ctx, id, now); err != nil {
					b.Fatal(err)
				}
			}
			benchTrips(b, s, before)
		})
	}
	// Many callers at once on one token, as busy replicas would be: they queue on its row.
	b.Run("parallel", func(b *testing.B) {
		before := s.RoundTrips()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.TakeUse(ctx, "child", now); err != nil {
					b.Error(err)
					return
				}
			}
		})
		benchTrips(b, s, before)
	})
}

// fillAfter fills entries with the entries that follow head, each with body, and returns the
// last.
func fillAfter(entries []store.AuditEntry, head store.AuditEntry, body []byte) store.AuditEntry {
	for i := range entries {
		e := store.AuditEntry{Seq: head.Seq + 1, PrevHash: head.Hash, At: time.Now(), Body: body}
		e.Hash = fmt.Sprintf("h%d", e.Seq)
		entries[i], head = e, e
	}
	return head
}

func BenchmarkAppendAudit(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := openFresh(b)
			ctx := b.Context()
			body := []byte(`{"call":"fs.read","app":"org.example.files","decision":"allow"}`)
			var head store.AuditEntry
			entries := make([]store.AuditEntry, batch)
			before := s.RoundTrips()
			for b.Loop() {
				head = fillAfter(entries, head, body)
				if err := s.AppendAudit(ctx, entries); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
			benchTrips(b, s, before)
		})
	}
}

func BenchmarkReads(b *testing.B) {
	s := openFresh(b)
	ctx := b.Context()
	now := time.Now()
	must(b, s.PutToken(ctx, store.Token{ID: "tk", IssuedAt: now, ExpiresAt: now.Add(time.Hour), Body: []byte("{}")}))
	must(b, s.PutConsent(ctx, store.Consent{ID: "cr", State: store.ConsentPending, Created: now, Payload: []byte("{}")}))
	must(b, s.PutState(ctx, "org.example.a", "display.brightness", []byte("70")))
	for _, r := range []struct {
		name string
		call func() error
	}{
		{"GetToken", func() error { _, err := s.GetToken(ctx, "tk"); return err }},
		{"GetConsent", func() error { _, err := s.GetConsent(ctx, "cr"); return err }},
		{"Revision", func() error { _, err := s.Revision(ctx); return err }},
		{"CheckToken", func() error { return s.CheckToken(ctx, "tk", now) }},
		{"GetState", func() error { _, err := s.GetState(ctx, "org.example.a", "display.brightness"); return err }},
	} {
		b.Run(r.name, func(b *testing.B) {
			before := s.RoundTrips()
			for b.Loop() {
				if err := r.call(); err != nil {
					b.Fatal(err)
				}
			}
			benchTrips(b, s, before)
		})
	}
}

// BenchmarkAppendAuditSequenced is the audit writer's path on PostgreSQL: the log locked, its
// head read, the batch built on it and appended, in one transaction.
func BenchmarkAppendAuditSequenced(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := openFresh(b)
			ctx := b.Context()
			body := []byte(`{"call":"fs.read","app":"org.example.files","decision":"allow"}`)
			entries := make([]store.AuditEntry, batch)
			build := func(head store.AuditEntry) ([]store.AuditEntry, error) {
				fillAfter(entries, head, body)
				return entries, nil
			}
			before := s.RoundTrips()
			for b.Loop() {
				if err := s.AppendAuditSequenced(ctx, build); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
			benchTrips(b, s, before)
		})
	}
}
