package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// headSeq is the seq the head file at path holds, 0 when it holds none or is missing.
func headSeq(t *testing.T, path string) int64 {
	t.Helper()
	c, err := ReadHeadFile(path)
	if err != nil {
		return 0
	}
	return c.Head.Seq
}

// No Append waits for the head file: it is advanced from a goroutine of its own, at once
// when it was idle and then at most once every HeadConfirm, and at Close. A head file that
// another process holds locked (a command line writing it) holds up no call.
func TestHeadFileOffTheAppendPath(t *testing.T) {
	dir := t.TempDir()
	b := sqliteBackend(t, dir)
	path := filepath.Join(dir, "audit.head")
	w := NewWriter(b.st, &Options{HeadPath: path, HeadConfirm: time.Hour, Logger: quietLogger()})
	defer w.Close()
	if _, err := w.Append(t.Context(), sampleRecord(0)); err != nil {
		t.Fatal(err)
	}
	waitHead(t, path, 1) // the first write is at once
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unlock, err := lockFile(f, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 5; i++ {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := w.Append(ctx, sampleRecord(i))
		cancel()
		if err != nil {
			t.Fatalf("an Append while the head file is locked elsewhere: %v", err)
		}
	}
	unlock()
	if got := headSeq(t, path); got != 1 {
		t.Fatalf("the head file is at %d within HeadConfirm of its last write, want 1", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := headSeq(t, path); got != 5 {
		t.Fatalf("after Close the head file is at %d, want 5", got)
	}
}

// At rest the head file reaches the last batch within HeadConfirm of its Append.
func TestHeadFileConfirmedAtRest(t *testing.T) {
	dir := t.TempDir()
	b := sqliteBackend(t, dir)
	path := filepath.Join(dir, "audit.head")
	w := NewWriter(b.st, &Options{HeadPath: path, HeadConfirm: 5 * time.Millisecond, Logger: quietLogger()})
	defer w.Close()
	for i := range 3 {
		seq, err := w.Append(t.Context(), sampleRecord(i))
		if err != nil {
			t.Fatal(err)
		}
		waitHead(t, path, seq)
	}
}

// failingAudit is a real store whose appends fail while fail is set, as a full disk does.
type failingAudit struct {
	store.Audit
	fail atomic.Bool
}

func (f *failingAudit) AppendAudit(ctx context.Context, entries []store.AuditEntry) error {
	if f.fail.Load() {
		return errors.New("disk full")
	}
	return f.Audit.AppendAudit(ctx, entries)
}

// The head file is never ahead of the store: a batch the store refused is not in it, and the
// durable batch before it is, whatever came after.
func TestHeadFileNeverAheadOfTheStore(t *testing.T) {
	dir := t.TempDir()
	b := sqliteBackend(t, dir)
	st := &failingAudit{Audit: b.st}
	path := filepath.Join(dir, "audit.head")
	w := NewWriter(st, &Options{HeadPath: path, HeadConfirm: time.Millisecond, Logger: quietLogger()})
	if _, err := w.Append(t.Context(), sampleRecord(0)); err != nil {
		t.Fatal(err)
	}
	waitHead(t, path, 1)
	st.fail.Store(true)
	if _, err := w.Append(t.Context(), sampleRecord(1)); err == nil {
		t.Fatal("an Append the store refused succeeded")
	}
	time.Sleep(50 * time.Millisecond) // many HeadConfirms: whatever was posted is written
	if got := headSeq(t, path); got != 1 {
		t.Fatalf("the head file is at %d, want 1: the durable batch, not the refused one", got)
	}
	st.fail.Store(false)
	seq, err := w.Append(t.Context(), sampleRecord(2))
	if err != nil || seq != 2 {
		t.Fatalf("the Append after the failure: seq %d, %v; want 2", seq, err)
	}
	w.Close()
	if got := headSeq(t, path); got != 2 {
		t.Fatalf("after Close the head file is at %d, want 2", got)
	}
	e, err := b.st.AuditHead(t.Context())
	if err != nil || e.Seq != 2 {
		t.Fatalf("the store's head: %d %v", e.Seq, err)
	}
	rep, err := VerifyWith(t.Context(), b.st, pubOf(testKey()), &VerifyOptions{HeadFile: path})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep.Problems, err)
	}
}

// rangeCounting is a store that counts its AuditRange reads.
type rangeCounting struct {
	store.Audit
	reads atomic.Int64
}

func (r *rangeCounting) AuditRange(ctx context.Context, from, to int64, limit int) ([]store.AuditEntry, error) {
	r.reads.Add(1)
	return r.Audit.AuditRange(ctx, from, to, limit)
}

// Between two writes of the head file the keeper holds every batch committed since the last,
// so that the check linking the head it wrote last to the new one reads nothing from the
// store, however many batches came between.
func TestHeadFileLinksWithoutReadingTheStore(t *testing.T) {
	dir := t.TempDir()
	st := &rangeCounting{Audit: sqliteBackend(t, dir).st}
	path := filepath.Join(dir, "audit.head")
	w := NewWriter(st, &Options{HeadPath: path, HeadConfirm: 100 * time.Millisecond, Logger: quietLogger()})
	defer w.Close()
	if _, err := w.Append(t.Context(), sampleRecord(0)); err != nil {
		t.Fatal(err)
	}
	waitHead(t, path, 1)
	before := st.reads.Load()
	for i := 1; i <= 40; i++ { // many batches within one HeadConfirm
		if _, err := w.Append(t.Context(), sampleRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitHead(t, path, 41)
	if n := st.reads.Load() - before; n != 0 {
		t.Fatalf("the head file's link check read the store %d times", n)
	}
	if s := w.Stats(); s.HeadErrors != 0 {
		t.Fatalf("head file errors: %+v", s)
	}
}

// The keeper holds the batches posted since its last write without a gap and within
// headKeptEntries: a batch that does not follow, or one that would pass the bound, starts
// them again from itself, so that a head file that cannot be written for long costs no
// commit more than its own batch, and what is held always ends at the newest entry.
func TestHeadKeeperHoldsBoundedBatches(t *testing.T) {
	k := newHeadKeeper(&Writer{o: Options{HeadConfirm: time.Hour}})
	batch := func(first, n int64) []store.AuditEntry {
		es := make([]store.AuditEntry, n)
		for i := range es {
			es[i].Seq = first + int64(i)
		}
		return es
	}
	held := func() (int64, int64, int) {
		k.mu.Lock()
		defer k.mu.Unlock()
		for i := 1; i < len(k.entries); i++ {
			if k.entries[i].Seq != k.entries[i-1].Seq+1 {
				t.Fatalf("a gap after seq %d", k.entries[i-1].Seq)
			}
		}
		return k.entries[0].Seq, k.entries[len(k.entries)-1].Seq, len(k.entries)
	}
	next := int64(1)
	post := func(n int64) {
		k.post(batch(next, n), Head{Seq: next + n - 1})
		next += n
	}
	post(3)
	post(5)
	if first, last, n := held(); first != 1 || last != 8 || n != 8 {
		t.Fatalf("held %d..%d (%d), want 1..8", first, last, n)
	}
	next += 10 // another process's appends between
	post(2)
	if first, last, _ := held(); first != 19 || last != 20 {
		t.Fatalf("after a gap held %d..%d, want 19..20", first, last)
	}
	for range 3 * headKeptEntries / 100 {
		post(100)
		if _, last, n := held(); n > headKeptEntries || last != next-1 {
			t.Fatalf("held %d entries ending at %d, want at most %d ending at %d", n, last, headKeptEntries, next-1)
		}
	}
	post(headKeptEntries + 7) // one batch past the bound: its newest
	if first, last, n := held(); n != headKeptEntries || last != next-1 || first != next-headKeptEntries {
		t.Fatalf("held %d..%d (%d) of a batch past the bound", first, last, n)
	}
	if _, es, ok := k.take(); !ok || len(es) != headKeptEntries {
		t.Fatalf("take: %d entries, %v", len(es), ok)
	}
}
