package sqlite

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/storetest"
)

// crash ends s as a killed process would: the indexer stopped, the journal's file (and its
// lock) and the database closed, nothing indexed or rotated.
func crash(t *testing.T, s *Store) {
	t.Helper()
	j := s.journal
	j.once.Do(func() {
		close(j.stop)
		<-j.done
		j.mu.Lock()
		if j.f != nil {
			j.f.Close()
			j.f = nil
		}
		j.closed = true
		j.mu.Unlock()
	})
	s.db.Close()
}

// noIndexing keeps the indexer from running during a test: entries reach the index only
// when the log is read.
func noIndexing(t *testing.T) {
	savedDelay, savedBatch := indexDelay, indexBatch
	indexDelay, indexBatch = time.Hour, 1<<30
	t.Cleanup(func() { indexDelay, indexBatch = savedDelay, savedBatch })
}

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func indexRows(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM audit_log`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// appendBatches appends n batches of two entries after the head.
func appendBatches(t *testing.T, s *Store, n int) []store.AuditEntry {
	t.Helper()
	var all []store.AuditEntry
	for range n {
		h, err := s.AuditHead(t.Context())
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if len(all) > 0 {
			h = all[len(all)-1]
		}
		batch := storetest.EntriesAfter(h, 2, "j")
		if err := s.AppendAudit(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
	}
	return all
}

func wantLog(t *testing.T, s *Store, want []store.AuditEntry) {
	t.Helper()
	got, err := s.AuditRange(t.Context(), 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("the log holds %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Seq != w.Seq || g.Hash != w.Hash || g.PrevHash != w.PrevHash || !bytes.Equal(g.Body, w.Body) || !g.At.Equal(w.At) {
			t.Fatalf("entry %d: %+v, want %+v", i, g, w)
		}
	}
}

// The indexer runs indexDelay after an append, or as soon as indexBatch entries wait,
// whichever comes first.
func TestIndexerRunsAfterItsDelayOrAFullBatch(t *testing.T) {
	savedDelay, savedBatch := indexDelay, indexBatch
	t.Cleanup(func() { indexDelay, indexBatch = savedDelay, savedBatch })
	indexed := func(s *Store, want int) bool {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if indexRows(t, s) == want {
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	}

	// Appends without a read of the log, which would index first.
	var head store.AuditEntry
	appendTwo := func(s *Store) {
		t.Helper()
		batch := storetest.EntriesAfter(head, 2, "j")
		if err := s.AppendAudit(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		head = batch[len(batch)-1]
	}

	// A batch: four waiting entries start the run long before the hour is up.
	indexDelay, indexBatch = time.Hour, 4
	s := openAt(t, filepath.Join(t.TempDir(), "capgate.db"))
	appendTwo(s)
	time.Sleep(50 * time.Millisecond)
	if n := indexRows(t, s); n != 0 {
		t.Fatalf("%d rows indexed with fewer than indexBatch entries waiting", n)
	}
	appendTwo(s)
	if !indexed(s, 4) {
		t.Fatalf("a full batch was not indexed: %d rows", indexRows(t, s))
	}

	// The delay: two entries, far fewer than a batch, are indexed once it is up.
	indexDelay, indexBatch = 20*time.Millisecond, 1<<30
	s = openAt(t, filepath.Join(t.TempDir(), "capgate.db"))
	head = store.AuditEntry{}
	appendTwo(s)
	if !indexed(s, 2) {
		t.Fatalf("entries were not indexed after the delay: %d rows", indexRows(t, s))
	}
}

// An append is in the journal, synced, before the index has it; a crash before the index
// does loses nothing: the next open indexes it.
func TestJournalRecoversWhatTheIndexLacks(t *testing.T) {
	noIndexing(t)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	want := appendBatches(t, a, 1)
	want = append(want, func() []store.AuditEntry {
		batch := storetest.EntriesAfter(want[len(want)-1], 3, "k")
		if err := a.AppendAudit(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		return batch
	}()...)
	if n := indexRows(t, a); n != 0 {
		// Appended, acknowledged, and not yet in the index: no read has asked for them.
		t.Fatalf("the index holds %d rows before a read, want none", n)
	}
	crash(t, a)
	b := openAt(t, path)
	if n := indexRows(t, b); n != len(want) {
		t.Fatalf("after the crash the index holds %d rows, want %d", n, len(want))
	}
	wantLog(t, b, want)
}

// journalEnd is where the frames of the journal at path end.
func journalEnd(t *testing.T, path string) int64 {
	t.Helper()
	data, err := os.ReadFile(path + journalSuffix)
	if err != nil {
		t.Fatal(err)
	}
	var off int64
	for off+8 <= int64(len(data)) {
		n := int64(binary.BigEndian.Uint32(data[off:]))
		if n == 0 {
			break
		}
		off += 8 + n
	}
	return off
}

// A frame cut short by a crash before its sync returned was never acknowledged: the next
// open zeroes it, and the log goes on after the last whole frame.
func TestJournalTornFrame(t *testing.T) {
	noIndexing(t)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	want := appendBatches(t, a, 3)
	crash(t, a)
	end := journalEnd(t, path)
	// What a crash in the middle of a write leaves: a frame's length and part of it.
	torn, _ := encodeFrame(storetest.EntriesAfter(want[len(want)-1], 2, "torn"))
	for _, cut := range []int{3, 8, 20, len(torn) - 1} {
		f, err := os.OpenFile(path+journalSuffix, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(torn[:cut], end); err != nil {
			t.Fatal(err)
		}
		f.Close()
		b, err := Open(t.Context(), path)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		wantLog(t, b, want)
		if e := journalEnd(t, path); e != end {
			t.Fatalf("cut at %d: the frames end at %d, want %d", cut, e, end)
		}
		// The next append follows the last whole frame.
		next := storetest.EntriesAfter(want[len(want)-1], 1, "next")
		if err := b.AppendAudit(t.Context(), next); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		want = append(want, next...)
		wantLog(t, b, want)
		crash(t, b)
		end = journalEnd(t, path)
	}
}

// A frame that fails its checks with another after it is damage, not a torn write: the store
// refuses to open, naming the journal and the offset, rather than drop what follows it.
func TestJournalDamagedFrame(t *testing.T) {
	noIndexing(t)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	appendBatches(t, a, 3)
	crash(t, a)
	data, err := os.ReadFile(path + journalSuffix)
	if err != nil {
		t.Fatal(err)
	}
	data[20] ^= 0x40 // inside the first frame's payload
	if err := os.WriteFile(path+journalSuffix, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), path)
	if !errors.Is(err, ErrJournalDamaged) || !strings.Contains(err.Error(), "byte 0") || !strings.Contains(err.Error(), journalSuffix) {
		t.Fatalf("opening a damaged journal: %v", err)
	}
	// Shortened by a tool outside capgate while a store has it open: refused too.
	if err := os.WriteFile(path+journalSuffix, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b := openAt(t, path) // an empty journal: the index has what it had
	appendBatches(t, b, 2)
	if err := os.Truncate(path+journalSuffix, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AuditRange(t.Context(), 1, 0, 0); !errors.Is(err, ErrJournalDamaged) {
		t.Fatalf("after the journal was shortened: %v", err)
	}
}

// Two stores on one file (two processes) append in turn while the journal is replaced again
// and again: one chain, every entry in it, each replacement seen by the other store.
func TestJournalRotatesUnderTwoAppenders(t *testing.T) {
	saved, savedDelay := journalRotateBytes, indexDelay
	// The index, after which a full journal is replaced, runs at once after each append.
	journalRotateBytes, indexDelay = 2048, time.Millisecond
	t.Cleanup(func() { journalRotateBytes, indexDelay = saved, savedDelay })
	path := filepath.Join(t.TempDir(), "capgate.db")
	a, b := openAt(t, path), openAt(t, path)
	inodes := map[uint64]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			if !storetest.AppendAfterHead(t, b, "b") {
				return
			}
		}
	}()
	for range 100 {
		if !storetest.AppendAfterHead(t, a, "a") {
			break
		}
		var st unix.Stat_t
		if unix.Stat(path+journalSuffix, &st) == nil {
			inodes[st.Ino] = true
		}
	}
	<-done
	if len(inodes) < 2 {
		t.Errorf("the journal was never replaced (%d files seen)", len(inodes))
	}
	es, err := a.AuditRange(context.Background(), 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 200 {
		t.Fatalf("the log holds %d entries, want 200", len(es))
	}
	for i, e := range es {
		if e.Seq != int64(i+1) || (i > 0 && e.PrevHash != es[i-1].Hash) {
			t.Fatalf("entry %d is not in the chain: %+v", i, e)
		}
	}
}

// A closed store's journal is empty: every entry is in the index.
func TestJournalEmptyAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	a, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	want := appendBatches(t, a, 4)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if e := journalEnd(t, path); e != 0 {
		t.Fatalf("after Close the journal's frames end at %d", e)
	}
	if err := a.AppendAudit(t.Context(), storetest.EntriesAfter(want[len(want)-1], 1, "late")); err == nil {
		t.Fatal("an append after Close was taken")
	}
	b := openAt(t, path)
	wantLog(t, b, want)
}

func FuzzDecodeFrame(f *testing.F) {
	good, _ := encodeFrame(storetest.EntriesAfter(store.AuditEntry{}, 3, "f"))
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, n, ok := decodeFrame(b)
		if !ok {
			return
		}
		if n > len(b) || len(entries) == 0 {
			t.Fatalf("accepted %d bytes of %d, %d entries", n, len(b), len(entries))
		}
		again, err := encodeFrame(entries)
		if err != nil || !bytes.Equal(again, b[:n]) {
			t.Fatalf("the frame does not encode back: %v", err)
		}
	})
}

// An index that falls far behind keeps at most maxPending entries in memory; the rest are read
// from the journal again, and every entry reaches the index.
func TestJournalPendingBounded(t *testing.T) {
	noIndexing(t)
	saved := maxPending
	maxPending = 3
	t.Cleanup(func() { maxPending = saved })
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	var want []store.AuditEntry
	for range 6 {
		head := store.AuditEntry{}
		if len(want) > 0 {
			head = want[len(want)-1]
		}
		batch := storetest.EntriesAfter(head, 2, "p")
		if err := a.AppendAudit(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		want = append(want, batch...)
		a.journal.mu.Lock()
		n := len(a.journal.pending)
		a.journal.mu.Unlock()
		if n > maxPending {
			t.Fatalf("%d entries kept in memory, at most %d", n, maxPending)
		}
	}
	wantLog(t, a, want)
	// And after a crash with an index behind, as at the next open.
	more := storetest.EntriesAfter(want[len(want)-1], 8, "q")
	if err := a.AppendAudit(t.Context(), more[:4]); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendAudit(t.Context(), more[4:]); err != nil {
		t.Fatal(err)
	}
	want = append(want, more...)
	crash(t, a)
	b := openAt(t, path)
	wantLog(t, b, want)
}

// A read of entries the index already holds needs no index run, though more wait in the
// journal; a read that reaches past them runs the index first, so that every read of the log
// is a read of the stored index (what verify checks, and what an edit of the database shows).
func TestReadOfIndexedEntriesRunsNoIndex(t *testing.T) {
	noIndexing(t)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a, b := openAt(t, path), openAt(t, path)
	var head store.AuditEntry
	var all []store.AuditEntry
	appendTwo := func(s *Store) {
		t.Helper()
		batch := storetest.EntriesAfter(head, 2, "r")
		if err := s.AppendAudit(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		head, all = batch[len(batch)-1], append(all, batch...)
	}
	for i := range 4 {
		appendTwo([]*Store{a, b}[i%2]) // the two stores take turns
	}
	if n := indexRows(t, a); n != 0 {
		t.Fatalf("%d rows indexed with the indexer held off", n)
	}
	wantLog(t, a, all) // past the index: it runs first
	if n := indexRows(t, a); n != len(all) {
		t.Fatalf("%d rows indexed after a read of the log, want %d", n, len(all))
	}
	appendTwo(b) // seqs 9 and 10, in the journal alone
	for _, r := range [][3]int64{{2, 2, 0}, {1, 8, 0}, {1, 0, 8}, {5, 0, 4}} {
		if held, err := a.journal.indexHolds(t.Context(), r[0], r[1], int(r[2])); err != nil || !held {
			t.Fatalf("range %v: the index holds it, yet an index run is asked for (%v)", r, err)
		}
		es, err := a.AuditRange(t.Context(), r[0], r[1], int(r[2]))
		if err != nil || len(es) == 0 || es[0].Seq != r[0] || es[len(es)-1].Seq > 8 {
			t.Fatalf("range %v: %d entries, %v", r, len(es), err)
		}
	}
	if n := indexRows(t, a); n != 8 {
		t.Fatalf("%d rows indexed after reads of indexed entries, want 8", n)
	}
	for _, r := range [][3]int64{{1, 0, 0}, {1, 9, 0}, {9, 9, 1}, {1, 0, 9}, {11, 0, 0}} {
		if held, _ := a.journal.indexHolds(t.Context(), r[0], r[1], int(r[2])); held {
			t.Fatalf("range %v reaches past the index, yet needs no run", r)
		}
	}
	wantLog(t, a, all)
	if n := indexRows(t, a); n != len(all) {
		t.Fatalf("%d rows indexed, want %d", n, len(all))
	}
}
