package sqlite

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/storetest"
)

// crash ends s as a killed process would: its files (and the lock) and the database closed,
// nothing else done.
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.alog.close()
	s.db.Close()
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

// smallSegments makes segments and marks small for a test, so that a few entries span many.
func smallSegments(t *testing.T, segment, marks int64) {
	savedSeg, savedMarks := segmentBytes, markEvery
	segmentBytes, markEvery = segment, marks
	t.Cleanup(func() { segmentBytes, markEvery = savedSeg, savedMarks })
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
	sameEntries(t, got, want)
	if len(want) > 0 {
		h, err := s.AuditHead(t.Context())
		if err != nil || h.Seq != want[len(want)-1].Seq || h.Hash != want[len(want)-1].Hash {
			t.Fatalf("the head is %+v (%v), want seq %d", h, err, want[len(want)-1].Seq)
		}
	}
}

func sameEntries(t *testing.T, got, want []store.AuditEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Seq != w.Seq || g.Hash != w.Hash || g.PrevHash != w.PrevHash || !bytes.Equal(g.Body, w.Body) || !g.At.Equal(w.At) {
			t.Fatalf("entry %d: %+v, want %+v", i, g, w)
		}
	}
}

// segments are the names of the log's segment files.
func segments(t *testing.T, path string) []string {
	t.Helper()
	des, err := os.ReadDir(path + auditLogSuffix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if _, ok := parseSegmentName(de.Name()); ok {
			out = append(out, de.Name())
		}
	}
	return out
}

// lastSegment is the path of the log's last segment.
func lastSegment(t *testing.T, path string) string {
	t.Helper()
	segs := segments(t, path)
	if len(segs) == 0 {
		t.Fatal("the log has no segment")
	}
	return filepath.Join(path+auditLogSuffix, segs[len(segs)-1])
}

// framesEnd is where the frames of the segment file end.
func framesEnd(t *testing.T, seg string) int64 {
	t.Helper()
	data, err := os.ReadFile(seg)
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

// An acknowledged append is in the log whatever happens next: a crash loses nothing, and the
// next open reads it back, head and all.
func TestAuditLogSurvivesACrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	want := appendBatches(t, a, 3)
	crash(t, a)
	b := openAt(t, path)
	wantLog(t, b, want)
	next := storetest.EntriesAfter(want[len(want)-1], 3, "k")
	if err := b.AppendAudit(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	wantLog(t, b, append(want, next...))
	// Nothing of the log is in the database.
	var rows int
	if err := b.db.QueryRow(`SELECT count(*) FROM audit_log`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("audit_log holds %d rows (%v), want none", rows, err)
	}
}

// A frame cut short by a crash before its sync returned was never acknowledged: the next
// open zeroes it, and the log goes on after the last whole frame.
func TestAuditLogTornFrame(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	want := appendBatches(t, a, 3)
	crash(t, a)
	seg := lastSegment(t, path)
	end := framesEnd(t, seg)
	// What a crash in the middle of a write leaves: a frame's length and part of it.
	torn, _ := encodeFrame(storetest.EntriesAfter(want[len(want)-1], 2, "torn"))
	for _, cut := range []int{3, 8, 20, len(torn) - 1} {
		f, err := os.OpenFile(seg, os.O_RDWR, 0)
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
		if e := framesEnd(t, seg); e != end {
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
		end = framesEnd(t, seg)
	}
}

// A frame that fails its checks with another after it is damage, not a torn write: the store
// refuses to open, naming the segment and the offset, rather than drop what follows it. So is
// a segment shortened under a running store, and a frame out of order.
func TestAuditLogDamagedFrame(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	appendBatches(t, a, 3)
	crash(t, a)
	seg := lastSegment(t, path)
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[20] ^= 0x40 // inside the first frame's payload
	if err := os.WriteFile(seg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), path)
	if !errors.Is(err, ErrAuditDamaged) || !strings.Contains(err.Error(), "byte 0") || !strings.Contains(err.Error(), filepath.Base(seg)) {
		t.Fatalf("opening a damaged log: %v", err)
	}
	data[20] ^= 0x40
	// The second frame put first: whole frames, out of order.
	end := framesEnd(t, seg)
	n1 := 8 + int64(binary.BigEndian.Uint32(data))
	n2 := 8 + int64(binary.BigEndian.Uint32(data[n1:]))
	swapped := append(append(slices.Clone(data[n1:n1+n2]), data[:n1]...), data[n1+n2:]...)
	if err := os.WriteFile(seg, swapped, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), path); !errors.Is(err, ErrAuditDamaged) || !strings.Contains(err.Error(), "begins at seq 3, not 1") {
		t.Fatalf("opening a log with frames out of order: %v", err)
	}
	if err := os.WriteFile(seg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	b := openAt(t, path)
	appendBatches(t, b, 2)
	if err := os.Truncate(seg, end/2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AuditRange(t.Context(), 1, 0, 0); !errors.Is(err, ErrAuditDamaged) {
		t.Fatalf("after the segment was shortened: %v", err)
	}
	if err := b.AppendAudit(t.Context(), storetest.EntriesAfter(store.AuditEntry{}, 1, "x")); !errors.Is(err, ErrAuditDamaged) {
		t.Fatalf("an append after the segment was shortened: %v", err)
	}
}

// Damage in a segment before the last is found by the read that reaches it, which names it.
func TestAuditLogDamageInAnEarlierSegment(t *testing.T) {
	smallSegments(t, 512, 128)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	appendBatches(t, a, 20)
	crash(t, a)
	segs := segments(t, path)
	if len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	second := filepath.Join(path+auditLogSuffix, segs[1])
	data, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	data[30] ^= 1
	if err := os.WriteFile(second, data, 0o600); err != nil {
		t.Fatal(err)
	}
	b := openAt(t, path) // the last segment is whole
	if _, err := b.AuditRange(t.Context(), 1, 0, 0); !errors.Is(err, ErrAuditDamaged) || !strings.Contains(err.Error(), segs[1]) {
		t.Fatalf("reading through a damaged segment: %v", err)
	}
	// A read that stays out of it is answered.
	if es, err := b.AuditRange(t.Context(), 1, 2, 0); err != nil || len(es) != 2 {
		t.Fatalf("reading the first segment: %d entries, %v", len(es), err)
	}
	// A missing segment is a gap: said, never skipped.
	if err := os.Remove(second); err != nil {
		t.Fatal(err)
	}
	c := openAt(t, path)
	if _, err := c.AuditRange(t.Context(), 1, 0, 0); !errors.Is(err, ErrAuditDamaged) {
		t.Fatalf("reading a log with a segment removed: %v", err)
	}
}

// Two stores on one file (two processes) append in turn while segments fill and new ones
// start: one chain, every entry in it, each new segment seen by the other store.
func TestAuditLogSegmentsUnderTwoAppenders(t *testing.T) {
	smallSegments(t, 2048, 256)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a, b := openAt(t, path), openAt(t, path)
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
	}
	<-done
	if n := len(segments(t, path)); n < 3 {
		t.Errorf("%d segments for 200 entries of segments of 2 KiB", n)
	}
	for _, s := range []*Store{a, b, openAt(t, path)} {
		es, err := s.AuditRange(context.Background(), 1, 0, 0)
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
}

// Every range of a log of many segments and marks reads back exactly, from any store on it,
// whatever ranges were read before (the marks built by earlier reads).
func TestAuditLogRanges(t *testing.T) {
	smallSegments(t, 1500, 200)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	var all []store.AuditEntry
	rng := rand.New(rand.NewPCG(1, 2))
	for range 60 {
		var h store.AuditEntry
		if len(all) > 0 {
			h = all[len(all)-1]
		}
		batch := storetest.EntriesAfter(h, 1+rng.IntN(5), strings.Repeat("x", rng.IntN(120)))
		if err := a.AppendAudit(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
	}
	n := int64(len(all))
	for _, s := range []*Store{a, openAt(t, path)} {
		for range 300 {
			from, to, limit := rng.Int64N(n+3)-1, rng.Int64N(n+3)-1, rng.IntN(8)
			got, err := s.AuditRange(t.Context(), from, to, limit)
			if err != nil {
				t.Fatalf("range %d..%d limit %d: %v", from, to, limit, err)
			}
			lo, hi := max(from, 1), to
			if hi <= 0 || hi > n {
				hi = n
			}
			if limit > 0 && lo-1+int64(limit) < hi {
				hi = lo - 1 + int64(limit)
			}
			var want []store.AuditEntry
			if lo <= hi {
				want = all[lo-1 : hi]
			}
			sameEntries(t, got, want)
		}
	}
	if len(segments(t, path)) < 4 {
		t.Fatalf("%d segments", len(segments(t, path)))
	}
}

// A crash just after a new segment was put in place, before its first frame, leaves it
// empty: the head is the last entry of the segment before, and appends go on in the new one.
func TestAuditLogEmptyLastSegment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	want := appendBatches(t, a, 2)
	a.alog.mu.Lock()
	unlock, err := a.alog.lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.alog.startSegment(want[len(want)-1].Seq+1, 64); err != nil {
		t.Fatal(err)
	}
	unlock()
	a.alog.mu.Unlock()
	crash(t, a)
	if n := len(segments(t, path)); n != 2 {
		t.Fatalf("%d segments, want 2", n)
	}
	b := openAt(t, path)
	wantLog(t, b, want)
	next := storetest.EntriesAfter(want[len(want)-1], 2, "n")
	if err := b.AppendAudit(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	wantLog(t, openAt(t, path), append(want, next...))
	if n := len(segments(t, path)); n != 2 {
		t.Fatalf("%d segments after the append, want 2", n)
	}
}

// Appends and reads at once, in one process and from another store: every read is a
// prefix of the chain (run with -race).
func TestAuditLogReadsDuringAppends(t *testing.T) {
	smallSegments(t, 4096, 512)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a, b := openAt(t, path), openAt(t, path)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, s := range []*Store{a, b, a} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				es, err := s.AuditRange(t.Context(), 1, 0, 0)
				if err != nil {
					t.Error(err)
					return
				}
				for i, e := range es {
					if e.Seq != int64(i+1) || (i > 0 && e.PrevHash != es[i-1].Hash) {
						t.Errorf("entry %d is not in the chain", i)
						return
					}
				}
			}
		})
	}
	for range 150 {
		if !storetest.AppendAfterHead(t, a, "w") {
			break
		}
	}
	close(stop)
	wg.Wait()
}

// A closed store refuses appends and reads; the log is whole at the next open.
func TestAuditLogAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	a, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	want := appendBatches(t, a, 4)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendAudit(t.Context(), storetest.EntriesAfter(want[len(want)-1], 1, "late")); err == nil {
		t.Fatal("an append after Close was taken")
	}
	if _, err := a.AuditRange(t.Context(), 1, 0, 0); err == nil {
		t.Fatal("a read after Close was answered")
	}
	wantLog(t, openAt(t, path), want)
}

// legacyLayout makes the log of a database from before the folder: rows in audit_log, and a
// journal beside it whose frames repeat the last rows and go on past them.
func legacyLayout(t *testing.T, path string, rows, journal []store.AuditEntry, tail []byte) {
	t.Helper()
	s := openAt(t, path)
	for _, e := range rows {
		if _, err := s.db.Exec(`INSERT INTO audit_log (`+store.AuditColumns+`) VALUES (?, ?, ?, ?, ?)`,
			e.Seq, e.PrevHash, e.Hash, atCol(e.At).Int64, e.Body); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if err := os.RemoveAll(path + auditLogSuffix); err != nil {
		t.Fatal(err)
	}
	if journal == nil {
		return
	}
	var data []byte
	for i := 0; i < len(journal); i += 3 {
		frame, err := encodeFrame(journal[i:min(i+3, len(journal))])
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, frame...)
	}
	data = append(data, tail...)
	data = append(data, make([]byte, 4096)...)
	if err := os.WriteFile(path+legacyJournalSuffix, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A log from before the folder (audit_log's rows and the journal's frames past them, a torn
// frame at its end) is moved into segments at the first open, whole; the old copies go.
func TestLegacyLogMoved(t *testing.T) {
	smallSegments(t, 1024, 128)
	all := storetest.EntriesAfter(store.AuditEntry{}, 40, "legacy")
	torn, _ := encodeFrame(storetest.EntriesAfter(all[len(all)-1], 2, "torn"))
	for name, c := range map[string]struct {
		rows, journal []store.AuditEntry
		tail          []byte
	}{
		"rows and journal":    {all[:30], all[25:], torn[:len(torn)-3]},
		"rows alone":          {all, nil, nil},
		"journal alone":       {nil, all, nil},
		"rows, empty journal": {all, []store.AuditEntry{}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "capgate.db")
			legacyLayout(t, path, c.rows, c.journal, c.tail)
			s := openAt(t, path)
			wantLog(t, s, all)
			if _, err := os.Stat(path + legacyJournalSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the old journal is still there: %v", err)
			}
			var rows int
			if err := s.db.QueryRow(`SELECT count(*) FROM audit_log`).Scan(&rows); err != nil || rows != 0 {
				t.Errorf("audit_log holds %d rows (%v) after the move", rows, err)
			}
			next := storetest.EntriesAfter(all[len(all)-1], 1, "after")
			if err := s.AppendAudit(t.Context(), next); err != nil {
				t.Fatal(err)
			}
			wantLog(t, openAt(t, path), append(slices.Clone(all), next...))
		})
	}
}

// A move cut short by a crash: before the rename, the half-made folder is made again from the
// old log; after it, the old copies are removed at the next open. A legacy log with a gap is
// not moved, and the store says so.
func TestLegacyMoveInterrupted(t *testing.T) {
	all := storetest.EntriesAfter(store.AuditEntry{}, 12, "legacy")

	path := filepath.Join(t.TempDir(), "capgate.db")
	legacyLayout(t, path, all[:8], all[6:], nil)
	if err := os.MkdirAll(path+auditLogSuffix+".new", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path+auditLogSuffix+".new", segmentName(1)), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantLog(t, openAt(t, path), all)

	path = filepath.Join(t.TempDir(), "capgate.db")
	legacyLayout(t, path, all[:8], all[6:], nil)
	// The folder in place, the old copies not yet removed: they hold nothing the folder lacks.
	s := openAt(t, path)
	s.Close()
	if err := os.WriteFile(path+legacyJournalSuffix, []byte("left"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path)
	wantLog(t, s, all)
	if _, err := os.Stat(path + legacyJournalSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old journal was left: %v", err)
	}

	path = filepath.Join(t.TempDir(), "capgate.db")
	gap := append(slices.Clone(all[:4]), all[5:]...)
	legacyLayout(t, path, gap, nil, nil)
	if _, err := Open(t.Context(), path); !errors.Is(err, ErrAuditDamaged) || !strings.Contains(err.Error(), "lacks seq 5") {
		t.Fatalf("a legacy log with a gap: %v", err)
	}
}

// RewriteAuditUnsafe cuts the tail or edits an entry, as someone holding the folder could:
// the store reads back what was written, frames and checksums right.
func TestRewriteAuditUnsafe(t *testing.T) {
	smallSegments(t, 600, 100)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	want := appendBatches(t, a, 10)
	a.Close()
	if err := RewriteAuditUnsafe(path, func(es []store.AuditEntry) []store.AuditEntry {
		es[3].Body = []byte(`{"edited":true}`)
		return es[:15]
	}); err != nil {
		t.Fatal(err)
	}
	want = want[:15]
	want[3].Body = []byte(`{"edited":true}`)
	wantLog(t, openAt(t, path), want)
	if err := RewriteAuditUnsafe(path, func(es []store.AuditEntry) []store.AuditEntry {
		return append(es[:2], es[3:]...)
	}); err == nil {
		t.Fatal("a rewrite with a gap was taken")
	}
	wantLog(t, openAt(t, path), want)
}

func TestSegmentNames(t *testing.T) {
	for _, seq := range []int64{1, 9, 10, 123456789, 1 << 62} {
		name := segmentName(seq)
		if got, ok := parseSegmentName(name); !ok || got != seq {
			t.Errorf("%d: %q parses as %d, %v", seq, name, got, ok)
		}
	}
	for _, bad := range []string{"", "1.seg", "00000000000000000000.seg", "0000000000000000000a.seg", "00000000000000000001.seg.new", "00000000000000000001.log", fmt.Sprintf("%021d.seg", 1)} {
		if _, ok := parseSegmentName(bad); ok {
			t.Errorf("%q parses", bad)
		}
	}
	if segmentName(2) > segmentName(10) {
		t.Error("names do not sort as seqs")
	}
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
		total, count, first, ok := frameSpan(b)
		if !ok || total != n || int(count) != len(entries) || first != entries[0].Seq {
			t.Fatalf("frameSpan says %d bytes, %d entries from %d, %v", total, count, first, ok)
		}
	})
}

// The next segment is made ready in the background once the last is half full, and the
// append that fills the last one starts the next with it, not with a file of its own.
func TestAuditLogPreparesTheNextSegment(t *testing.T) {
	smallSegments(t, 8192, 1024)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	ready := func() (string, bool) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			a.alog.mu.Lock()
			p, ok := a.alog.preparedPath, a.alog.prepared != nil
			a.alog.mu.Unlock()
			if ok {
				return p, true
			}
		}
		return "", false
	}
	var all []store.AuditEntry
	for len(segments(t, path)) < 2 {
		a.alog.mu.Lock()
		half := a.alog.size >= a.alog.alloc/2 && a.alog.f != nil
		a.alog.mu.Unlock()
		var prepared uint64
		if half {
			p, ok := ready()
			if !ok {
				t.Fatal("no segment was made ready with the last one half full")
			}
			var st unix.Stat_t
			if err := unix.Stat(p, &st); err != nil {
				t.Fatal(err)
			}
			prepared = st.Ino
		}
		n := len(segments(t, path))
		var h store.AuditEntry
		if len(all) > 0 {
			h = all[len(all)-1]
		}
		batch := storetest.EntriesAfter(h, 2, "p")
		if err := a.AppendAudit(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
		if segs := segments(t, path); len(segs) > n && n > 0 {
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(path+auditLogSuffix, segs[len(segs)-1]), &st); err != nil {
				t.Fatal(err)
			}
			if prepared == 0 || st.Ino != prepared {
				t.Fatal("the new segment is not the one made ready")
			}
		}
	}
	wantLog(t, openAt(t, path), all)
	// The sealed segment lost its zeros.
	first := filepath.Join(path+auditLogSuffix, segments(t, path)[0])
	if fi, err := os.Stat(first); err != nil || fi.Size() != framesEnd(t, first) {
		t.Fatalf("the sealed segment is %d bytes, its frames %d (%v)", fi.Size(), framesEnd(t, first), err)
	}
}

// A segment being made ready by a process that is gone is removed when the folder is read;
// one of a live process is left.
func TestAuditLogRemovesAbandonedSegments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	appendBatches(t, a, 1)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(path+auditLogSuffix, fmt.Sprintf("%s%d-7", preparedPrefix, cmd.Process.Pid))
	live := filepath.Join(path+auditLogSuffix, fmt.Sprintf("%s%d-7", preparedPrefix, os.Getppid()))
	for _, p := range []string{dead, live} {
		if err := os.WriteFile(p, make([]byte, 64), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	openAt(t, path)
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead process's segment was left: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live process's segment was removed: %v", err)
	}
}

// A segment counted as started but never put in place (a crash between the two) is no
// segment: the other stores read the folder again and go on in the last one.
func TestAuditLogSegmentCountedNotMade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	a, b := openAt(t, path), openAt(t, path)
	want := appendBatches(t, a, 2)
	a.alog.mu.Lock()
	unlock, err := a.alog.lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.alog.count(0); err != nil {
		t.Fatal(err)
	}
	unlock()
	a.alog.mu.Unlock()
	next := storetest.EntriesAfter(want[len(want)-1], 2, "b")
	if err := b.AppendAudit(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	want = append(want, next...)
	wantLog(t, a, want)
	wantLog(t, b, want)
	if n := len(segments(t, path)); n != 1 {
		t.Fatalf("%d segments, want 1", n)
	}
}

// A log rewritten under an open store is what that store reads next: the rewrite's count
// makes it read the folder anew, marks and all.
func TestAuditLogRewrittenUnderAnOpenStore(t *testing.T) {
	smallSegments(t, 600, 100)
	path := filepath.Join(t.TempDir(), "capgate.db")
	a := openAt(t, path)
	want := appendBatches(t, a, 10)
	wantLog(t, a, want) // marks built
	if err := RewriteAuditUnsafe(path, func(es []store.AuditEntry) []store.AuditEntry { return es[:7] }); err != nil {
		t.Fatal(err)
	}
	wantLog(t, a, want[:7])
	next := storetest.EntriesAfter(want[6], 1, "after")
	if err := a.AppendAudit(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	wantLog(t, openAt(t, path), append(slices.Clone(want[:7]), next...))
}

// A segment is made of zeros, synced, of the size asked for.
func TestMakeSegment(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int64{4096, 1000, zeroChunk, 3*zeroChunk + 8192} {
		path := filepath.Join(dir, fmt.Sprint(size))
		f, err := makeSegment(path, size)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != size || bytes.Count(data, []byte{0}) != len(data) {
			t.Fatalf("size %d: %d bytes, not all zeros", size, len(data))
		}
	}
}
