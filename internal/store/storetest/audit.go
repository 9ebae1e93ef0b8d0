package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

func normAudit(e store.AuditEntry) store.AuditEntry {
	e.At = normTime(e.At)
	e.Body = normBytes(e.Body)
	return e
}

func normCheckpoint(c store.Checkpoint) store.Checkpoint {
	c.At = normTime(c.At)
	c.Body = normBytes(c.Body)
	return c
}

// entriesAfter builds n entries that follow head (the zero entry for an empty log).
func EntriesAfter(head store.AuditEntry, n int, tag string) []store.AuditEntry {
	out := make([]store.AuditEntry, n)
	for i := range out {
		e := store.AuditEntry{Seq: head.Seq + 1, PrevHash: head.Hash,
			At: at(time.Duration(head.Seq+1) * time.Millisecond)}
		e.Body = fmt.Appendf(nil, `{"seq":%d,"tag":%q}`, e.Seq, tag)
		e.Hash = chainHash(e.PrevHash, e.Body)
		out[i], head = e, e
	}
	return out
}

// AppendAfterHead appends one entry, tagged tag, after the head it reads, and reads the head
// again on ErrConflict, as a writer racing others must. It reports false, having failed the
// test, on any other error or when 1000 attempts in a row lose the race.
func AppendAfterHead(t *testing.T, s store.Store, tag string) bool {
	for range 1000 {
		h, err := s.AuditHead(t.Context())
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("AuditHead: %v", err)
			return false
		}
		err = s.AppendAudit(t.Context(), EntriesAfter(h, 1, tag))
		if err == nil {
			return true
		}
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("AppendAudit: %v", err)
			return false
		}
	}
	t.Errorf("%s: no append after 1000 attempts", tag)
	return false
}

func testAudit(t *testing.T, open func(t *testing.T) store.Store) {
	head := func(t *testing.T, s store.Store) store.AuditEntry {
		t.Helper()
		h, err := s.AuditHead(t.Context())
		if errors.Is(err, store.ErrNotFound) {
			return store.AuditEntry{}
		}
		must(t, "AuditHead", err)
		return h
	}
	all := func(t *testing.T, s store.Store) []store.AuditEntry {
		t.Helper()
		es, err := s.AuditRange(t.Context(), 0, 0, 0)
		must(t, "AuditRange", err)
		return es
	}

	t.Run("Empty", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		_, err := s.AuditHead(ctx)
		wantErr(t, "AuditHead", err, store.ErrNotFound)
		if es := all(t, s); len(es) != 0 {
			t.Errorf("AuditRange on empty log: %d entries", len(es))
		}
		cs, err := s.Checkpoints(ctx)
		wantEmpty(t, "Checkpoints", cs, err)
		must(t, "AppendAudit of nothing", s.AppendAudit(ctx, nil))
	})

	t.Run("Chain", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		first := EntriesAfter(store.AuditEntry{}, 1, "a")
		bad := first[0]
		bad.Seq = 2
		wantErr(t, "first entry with Seq 2", s.AppendAudit(ctx, []store.AuditEntry{bad}), store.ErrConflict)
		bad = first[0]
		bad.PrevHash = "nonsense"
		wantErr(t, "first entry with a PrevHash", s.AppendAudit(ctx, []store.AuditEntry{bad}), store.ErrConflict)
		if es := all(t, s); len(es) != 0 {
			t.Fatalf("refused appends wrote %d entries", len(es))
		}

		batch := EntriesAfter(store.AuditEntry{}, 3, "a")
		must(t, "AppendAudit 1..3", s.AppendAudit(ctx, batch))
		h := head(t, s)
		same(t, "AuditHead", h, batch[2], normAudit)
		same(t, "AuditRange", all(t, s), batch, func(es []store.AuditEntry) []store.AuditEntry {
			out := make([]store.AuditEntry, len(es))
			for i, e := range es {
				out[i] = normAudit(e)
			}
			return out
		})

		// A writer that read the head before the append above now conflicts.
		stale := EntriesAfter(batch[1], 1, "stale")
		wantErr(t, "stale append", s.AppendAudit(ctx, stale), store.ErrConflict)
		wrongPrev := EntriesAfter(h, 1, "b")
		wrongPrev[0].PrevHash = batch[1].Hash
		wantErr(t, "append with the wrong PrevHash", s.AppendAudit(ctx, wrongPrev), store.ErrConflict)
		gap := EntriesAfter(h, 2, "gap")[1:]
		wantErr(t, "append with a gap", s.AppendAudit(ctx, gap), store.ErrConflict)

		// All or none: a bad third entry leaves the first two unwritten.
		next := EntriesAfter(h, 3, "c")
		next[2].PrevHash = "broken"
		wantErr(t, "batch with a bad third entry", s.AppendAudit(ctx, next), store.ErrConflict)
		next = EntriesAfter(h, 3, "c")
		next[2].Seq++
		wantErr(t, "batch with a gap before the third entry", s.AppendAudit(ctx, next), store.ErrConflict)

		if got := head(t, s); got.Seq != 3 {
			t.Errorf("after refused batches the head is %d, want 3", got.Seq)
		}
		if n := len(all(t, s)); n != 3 {
			t.Errorf("after refused batches the log has %d entries, want 3", n)
		}
		must(t, "AppendAudit 4..6", s.AppendAudit(ctx, EntriesAfter(h, 3, "c")))
		if got := head(t, s); got.Seq != 6 {
			t.Errorf("head %d, want 6", got.Seq)
		}

		// Batches of every size follow the same rules.
		for _, n := range []int{2, 16, 17, 40} {
			h := head(t, s)
			stale := EntriesAfter(batch[0], n, "stale-many")
			wantErr(t, fmt.Sprintf("stale batch of %d", n), s.AppendAudit(ctx, stale), store.ErrConflict)
			fresh := EntriesAfter(store.AuditEntry{}, n, "fresh-many")
			wantErr(t, fmt.Sprintf("batch of %d as the first", n), s.AppendAudit(ctx, fresh), store.ErrConflict)
			many := EntriesAfter(h, n, "many")
			must(t, fmt.Sprintf("AppendAudit of %d", n), s.AppendAudit(ctx, many))
			same(t, fmt.Sprintf("AuditHead after %d", n), head(t, s), many[n-1], normAudit)
		}
	})

	t.Run("Range", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		must(t, "AppendAudit", s.AppendAudit(ctx, EntriesAfter(store.AuditEntry{}, 10, "r")))
		seqs := func(from, to int64, limit int) []int64 {
			t.Helper()
			es, err := s.AuditRange(ctx, from, to, limit)
			must(t, "AuditRange", err)
			var out []int64
			for _, e := range es {
				out = append(out, e.Seq)
			}
			return out
		}
		for _, tc := range []struct {
			from, to int64
			limit    int
			want     []int64
		}{
			{1, 0, 0, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
			{3, 5, 0, []int64{3, 4, 5}},
			{5, 5, 0, []int64{5}},
			{8, 0, 0, []int64{8, 9, 10}},
			{8, 20, 0, []int64{8, 9, 10}},
			{2, 9, 3, []int64{2, 3, 4}},
			{7, 0, 100, []int64{7, 8, 9, 10}},
			{11, 0, 0, nil},
			{6, 5, 0, nil},
		} {
			if got := seqs(tc.from, tc.to, tc.limit); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("AuditRange(%d, %d, %d) = %v, want %v", tc.from, tc.to, tc.limit, got, tc.want)
			}
		}
	})

	t.Run("ConcurrentAppend", func(t *testing.T) {
		s := open(t)
		const writers, each = 8, 10
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := 0; i < each; i++ {
					if !AppendAfterHead(t, s, fmt.Sprintf("w%d-%d", w, i)) {
						return
					}
				}
			})
		}
		wg.Wait()
		es := all(t, s)
		if len(es) != writers*each {
			t.Fatalf("%d entries, want %d", len(es), writers*each)
		}
		seen := map[string]bool{}
		prev := ""
		for i, e := range es {
			if e.Seq != int64(i+1) || e.PrevHash != prev || e.Hash != chainHash(e.PrevHash, e.Body) {
				t.Fatalf("entry %d (Seq %d) breaks the chain", i, e.Seq)
			}
			prev = e.Hash
			if seen[string(e.Body)] {
				t.Errorf("body %s appended twice", e.Body)
			}
			seen[string(e.Body)] = true
		}
	})

	t.Run("Checkpoints", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		c5 := store.Checkpoint{Seq: 5, Head: "h5", At: at(5 * time.Second), Body: []byte("signed 5")}
		c2 := store.Checkpoint{Seq: 2, Head: "h2", At: at(2 * time.Second), Body: []byte("signed 2")}
		c9 := store.Checkpoint{Seq: 9, Head: "h9", At: at(9 * time.Second), Body: []byte("signed 9")}
		for _, c := range []store.Checkpoint{c5, c2, c9} {
			must(t, "PutCheckpoint", s.PutCheckpoint(ctx, c))
		}
		dup := c5
		dup.Head, dup.Body = "other", []byte("other")
		wantErr(t, "PutCheckpoint repeated Seq", s.PutCheckpoint(ctx, dup), store.ErrExists)
		cs, err := s.Checkpoints(ctx)
		must(t, "Checkpoints", err)
		same(t, "Checkpoints", cs, []store.Checkpoint{c2, c5, c9}, func(cs []store.Checkpoint) []store.Checkpoint {
			out := make([]store.Checkpoint, len(cs))
			for i, c := range cs {
				out[i] = normCheckpoint(c)
			}
			return out
		})
	})
}
