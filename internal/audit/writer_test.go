package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// quietLogger drops log lines that tests provoke on purpose.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// countingStore counts AppendAudit calls; while gate is set, every call blocks after
// announcing itself on started until gate is closed.
type countingStore struct {
	*memAudit
	calls   atomic.Int64
	started chan struct{}
	gate    chan struct{}
}

func (c *countingStore) AppendAudit(ctx context.Context, es []store.AuditEntry) error {
	c.enter()
	return c.memAudit.AppendAudit(ctx, es)
}

// enter counts a call and holds it at the gate, if one is set.
func (c *countingStore) enter() {
	c.calls.Add(1)
	if c.gate != nil {
		select {
		case c.started <- struct{}{}:
		default:
		}
		<-c.gate
	}
}

func TestChaining(t *testing.T) {
	m := &memAudit{}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w := NewWriter(m, &Options{Now: func() time.Time { return now }})
	rec := sampleRecord(0)
	rec.Timestamp = 0 // set by Append
	seqs := appendN(t, w, 4)
	seq, err := w.Append(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	seqs = append(seqs, seq)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqs, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("seqs = %v", seqs)
	}
	prev := ""
	for i, e := range m.entries {
		if e.Seq != int64(i+1) || e.PrevHash != prev || e.Hash != EntryHash(prev, e.Seq, e.Body) || !e.At.Equal(now) {
			t.Fatalf("entry %d: %+v", i, e)
		}
		prev = e.Hash
		r, err := DecodeRecord(e.Body)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		want := sampleRecord(i)
		if i == 4 {
			want = rec
			want.Timestamp = now.Unix()
		}
		if r != want {
			t.Fatalf("entry %d record = %+v, want %+v", i, r, want)
		}
	}
	// A second writer on the same store continues the chain.
	w2 := NewWriter(m, nil)
	if seq, err := w2.Append(context.Background(), sampleRecord(9)); err != nil || seq != 6 {
		t.Fatalf("second writer: seq %d, %v", seq, err)
	}
	w2.Close()
	rep, err := Verify(context.Background(), m, pubOf(testKey()))
	if err != nil || !rep.OK() || rep.Entries != 6 || rep.Head != m.entries[5].Hash {
		t.Fatalf("Verify: %+v, %v", rep, err)
	}
}

// TestGroupCommit holds the first batch inside the store until 63 more Appends are queued,
// then lets it go: the 63 must go to the store as one batch.
func TestGroupCommit(t *testing.T) {
	const n = 64
	cs := &countingStore{memAudit: &memAudit{}, started: make(chan struct{}, 1), gate: make(chan struct{})}
	w := NewWriter(cs, &Options{MaxBatch: n})
	seqs := make([]int64, n)
	var wg sync.WaitGroup
	appendAt := func(i int) {
		defer wg.Done()
		seq, err := w.Append(context.Background(), sampleRecord(i))
		if err != nil {
			t.Errorf("Append %d: %v", i, err)
		}
		seqs[i] = seq
	}
	wg.Add(1)
	go appendAt(0)
	<-cs.started
	wg.Add(n - 1)
	for i := 1; i < n; i++ {
		go appendAt(i)
	}
	for w.queued() < n-1 {
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
	close(cs.gate)
	wg.Wait()
	w.Close()
	wantOneToN(t, seqs, n)
	if got := cs.calls.Load(); got != 2 {
		t.Fatalf("AppendAudit called %d times for %d records, want 2", got, n)
	}
	if st := w.Stats(); st.Records != n || st.Batches != 2 {
		t.Fatalf("stats = %+v", st)
	}
	if rep, _ := Verify(context.Background(), cs, pubOf(testKey())); !rep.OK() || rep.Entries != n {
		t.Fatalf("Verify: %+v", rep)
	}
}

// wantOneToN fails t unless seqs, in any order, are 1 to n: distinct and gap-free.
func wantOneToN(t *testing.T, seqs []int64, n int) {
	t.Helper()
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("seqs are not 1..%d: %v", n, seqs)
		}
	}
}

// TestConcurrentAppends runs 64 Appends at once with the default options and a short
// MaxDelay, without any gate: seqs are distinct and gap-free, and batching happened.
func TestConcurrentAppends(t *testing.T) {
	const n = 64
	cs := &countingStore{memAudit: &memAudit{}}
	w := NewWriter(cs, &Options{MaxDelay: 20 * time.Millisecond})
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seqs []int64
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq, err := w.Append(context.Background(), sampleRecord(i))
			if err != nil {
				t.Errorf("Append: %v", err)
			}
			mu.Lock()
			seqs = append(seqs, seq)
			mu.Unlock()
		}()
	}
	wg.Wait()
	w.Close()
	wantOneToN(t, seqs, n)
	if got := cs.calls.Load(); got >= n {
		t.Fatalf("AppendAudit called %d times for %d records: no batching", got, n)
	}
	t.Logf("%d records in %d store calls", n, cs.calls.Load())
}

// durableStore marks a seq durable only after the inner store returned from writing it, and
// is slow, so that an Append returning early would be seen.
type durableStore struct {
	*memAudit
	durable atomic.Int64
}

func (d *durableStore) AppendAudit(ctx context.Context, es []store.AuditEntry) error {
	time.Sleep(time.Millisecond)
	if err := d.memAudit.AppendAudit(ctx, es); err != nil {
		return err
	}
	d.durable.Store(es[len(es)-1].Seq)
	return nil
}

func TestAppendReturnsOnlyWhenDurable(t *testing.T) {
	ds := &durableStore{memAudit: &memAudit{}}
	w := NewWriter(ds, nil)
	defer w.Close()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq, err := w.Append(context.Background(), sampleRecord(i))
			if err != nil {
				t.Errorf("Append: %v", err)
				return
			}
			if d := ds.durable.Load(); d < seq {
				t.Errorf("Append returned seq %d while only %d was durable", seq, d)
			}
			if es, _ := ds.AuditRange(context.Background(), seq, seq, 1); len(es) != 1 {
				t.Errorf("seq %d not in the store when Append returned", seq)
			}
		}()
	}
	wg.Wait()
}

var errDisk = errors.New("disk on fire")

// failingStore fails every AppendAudit while fail is set, counting it and holding it at the
// gate as countingStore does.
type failingStore struct {
	*countingStore
	fail atomic.Bool
}

func (f *failingStore) AppendAudit(ctx context.Context, es []store.AuditEntry) error {
	if f.fail.Load() {
		f.enter()
		return errDisk
	}
	return f.memAudit.AppendAudit(ctx, es)
}

func TestStoreFailureReachesEveryWaiter(t *testing.T) {
	const n = 16
	fs := &failingStore{countingStore: &countingStore{memAudit: &memAudit{}, started: make(chan struct{}, 1), gate: make(chan struct{})}}
	fs.fail.Store(true)
	w := NewWriter(fs, &Options{MaxBatch: n})
	defer w.Close()
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, errs[0] = w.Append(context.Background(), sampleRecord(0)) }()
	<-fs.started
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = w.Append(context.Background(), sampleRecord(i)) }()
	}
	for w.queued() < n-1 {
		time.Sleep(100 * time.Microsecond)
	}
	close(fs.gate)
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, errDisk) {
			t.Fatalf("Append %d: err = %v, want the store's error", i, err)
		}
	}
	if len(fs.entries) != 0 {
		t.Fatalf("%d entries written by a failing store", len(fs.entries))
	}
	if st := w.Stats(); st.Failures != 2 || st.Records != 0 {
		t.Fatalf("stats = %+v", st)
	}
	// The store recovers: the next record starts the log.
	fs.fail.Store(false)
	if seq, err := w.Append(context.Background(), sampleRecord(0)); err != nil || seq != 1 {
		t.Fatalf("after recovery: seq %d, %v", seq, err)
	}
}

// rivalStore lets another writer append one entry just before our first AppendAudit, so that
// our batch, built on the old head, is refused by the (faithful) store with ErrConflict.
type rivalStore struct {
	*memAudit
	raced atomic.Bool
	calls atomic.Int64
}

func (r *rivalStore) AppendAudit(ctx context.Context, es []store.AuditEntry) error {
	r.calls.Add(1)
	if r.raced.CompareAndSwap(false, true) {
		rival := NewWriter(r.memAudit, nil)
		rec := sampleRecord(99)
		rec.ClientID = "cl_rival"
		if _, err := rival.Append(ctx, rec); err != nil {
			return err
		}
		rival.Close()
	}
	return r.memAudit.AppendAudit(ctx, es)
}

func TestConflictRetriesOnNewHead(t *testing.T) {
	rs := &rivalStore{memAudit: &memAudit{}}
	// One record already there, so that the writer's head is not the empty log.
	pre := NewWriter(rs.memAudit, nil)
	appendN(t, pre, 1)
	pre.Close()

	w := NewWriter(rs, &Options{MaxDelay: 5 * time.Millisecond})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.Append(context.Background(), sampleRecord(i)); err != nil {
				t.Errorf("Append: %v", err)
			}
		}()
	}
	wg.Wait()
	w.Close()
	if st := w.Stats(); st.Conflicts != 1 || st.Records != 8 {
		t.Fatalf("stats = %+v, want one conflict and 8 records", st)
	}
	if len(rs.entries) != 10 {
		t.Fatalf("%d entries, want 1 + 1 rival + 8", len(rs.entries))
	}
	if rep, _ := Verify(context.Background(), rs, pubOf(testKey())); !rep.OK() {
		t.Fatalf("Verify: %+v", rep.Problems)
	}
	clients := 0
	for _, e := range rs.entries {
		if r, _ := DecodeRecord(e.Body); r.ClientID == "cl_rival" {
			clients++
			if e.Seq != 2 {
				t.Fatalf("rival's record at seq %d, want 2", e.Seq)
			}
		}
	}
	if clients != 1 {
		t.Fatalf("rival's record found %d times", clients)
	}
}

// alwaysConflict refuses every append as if another writer always got there first.
type alwaysConflict struct {
	*memAudit
	calls atomic.Int64
}

func (a *alwaysConflict) AppendAudit(context.Context, []store.AuditEntry) error {
	a.calls.Add(1)
	return store.ErrConflict
}

func TestConflictRetriesAreBounded(t *testing.T) {
	ac := &alwaysConflict{memAudit: &memAudit{}}
	w := NewWriter(ac, &Options{ConflictRetries: 3})
	defer w.Close()
	if _, err := w.Append(context.Background(), sampleRecord(0)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if got := ac.calls.Load(); got != 4 {
		t.Fatalf("AppendAudit called %d times, want 1 + 3 retries", got)
	}
}

func TestInvalidRecordIsRefused(t *testing.T) {
	m := &memAudit{}
	w := NewWriter(m, nil)
	defer w.Close()
	rec := sampleRecord(0)
	rec.Decision = "maybe"
	if _, err := w.Append(context.Background(), rec); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("err = %v, want ErrInvalidRecord", err)
	}
	if len(m.entries) != 0 {
		t.Fatal("invalid record written")
	}
}

func TestAppendCancelled(t *testing.T) {
	m := &memAudit{}
	w := NewWriter(m, nil)
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Append(ctx, sampleRecord(0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if len(m.entries) != 0 {
		t.Fatal("record of a cancelled Append written")
	}
}

func TestCloseWritesCheckpoint(t *testing.T) {
	m := &memAudit{}
	w := NewWriter(m, &Options{CheckpointKey: testKey()})
	appendN(t, w, 3)
	if len(m.checkpoints) != 0 {
		t.Fatal("checkpoint before Close without CheckpointEvery")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := w.Append(context.Background(), sampleRecord(0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if len(m.checkpoints) != 1 || m.checkpoints[0].Seq != 3 || m.checkpoints[0].Head != m.entries[2].Hash {
		t.Fatalf("checkpoints = %+v", m.checkpoints)
	}
	if err := VerifyCheckpoint(pubOf(testKey()), m.checkpoints[0]); err != nil {
		t.Fatal(err)
	}
	// A writer that appended nothing has no head that moved: no checkpoint.
	w2 := NewWriter(m, &Options{CheckpointKey: testKey()})
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if len(m.checkpoints) != 1 {
		t.Fatalf("idle writer signed a checkpoint: %d", len(m.checkpoints))
	}
	rep, err := Verify(context.Background(), m, pubOf(testKey()))
	if err != nil || !rep.OK() || len(rep.Warnings) != 0 || rep.LastCheckpointSeq != 3 {
		t.Fatalf("Verify: %+v %v", rep, err)
	}
}

func TestCheckpointEvery(t *testing.T) {
	m := &memAudit{}
	w := NewWriter(m, &Options{CheckpointKey: testKey(), CheckpointEvery: 4})
	appendN(t, w, 10)
	w.Close()
	var seqs []int64
	for _, c := range m.checkpoints {
		seqs = append(seqs, c.Seq)
	}
	if !slices.Equal(seqs, []int64{4, 8, 10}) {
		t.Fatalf("checkpoint seqs = %v, want [4 8 10]", seqs)
	}
}

func TestCheckpointInterval(t *testing.T) {
	m := &memAudit{}
	w := NewWriter(m, &Options{CheckpointKey: testKey(), CheckpointInterval: time.Millisecond})
	appendN(t, w, 2)
	// Wait (without a deadline assertion) until the ticker has signed the head.
	for w.Stats().Checkpoints == 0 {
		time.Sleep(time.Millisecond)
	}
	w.Close()
	// A tick may have come between the two appends too; the last checkpoint is the head's.
	n := len(m.checkpoints)
	if n == 0 || n > 2 || m.checkpoints[n-1].Seq != 2 {
		t.Fatalf("checkpoints = %+v", m.checkpoints)
	}
	if rep, _ := Verify(context.Background(), m, pubOf(testKey())); !rep.OK() || len(rep.Warnings) != 0 {
		t.Fatalf("Verify: %+v", rep)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errDisk }

func TestMirror(t *testing.T) {
	m := &memAudit{}
	var buf bytes.Buffer
	w := NewWriter(m, &Options{Mirror: &buf})
	appendN(t, w, 3)
	w.Close()
	var want bytes.Buffer
	if err := Export(context.Background(), m, &want, 1, 0); err != nil {
		t.Fatal(err)
	}
	if buf.String() != want.String() {
		t.Fatalf("mirror:\n%s\nexport:\n%s", buf.String(), want.String())
	}
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != 3 {
		t.Fatalf("%d mirror lines", n)
	}

	// A failing mirror is counted, never fatal.
	m2 := &memAudit{}
	w2 := NewWriter(m2, &Options{Mirror: failingWriter{}, Logger: quietLogger()})
	appendN(t, w2, 2)
	w2.Close()
	if st := w2.Stats(); st.MirrorErrors != 2 || st.Records != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestMirrorPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	m := &memAudit{}
	w := NewWriter(m, &Options{MirrorPath: path})
	appendN(t, w, 2)
	w.Close()
	w = NewWriter(m, &Options{MirrorPath: path})
	appendN(t, w, 1)
	w.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	f, _ := os.Open(path)
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		lines++
	}
	if lines != 3 {
		t.Fatalf("%d lines, want 3 (appended across writers)", lines)
	}

	// A path that cannot be opened is counted (at the writer's start and at its batch), never
	// fatal.
	w = NewWriter(m, &Options{MirrorPath: filepath.Join(t.TempDir(), "no", "such", "dir", "x"), Logger: quietLogger()})
	appendN(t, w, 1)
	w.Close()
	if st := w.Stats(); st.MirrorErrors == 0 || st.Records != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestNewWriterBadKeyPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a short key")
		}
	}()
	NewWriter(&memAudit{}, &Options{CheckpointKey: testKey()[:32]})
}

// A record submitted after another is not written when that one's write failed, though the
// store has recovered by the time its own batch is written; one without a predecessor is.
func TestSubmitAfterAFailedRecordIsNotWritten(t *testing.T) {
	fs := &failingStore{countingStore: &countingStore{memAudit: &memAudit{}, started: make(chan struct{}, 1), gate: make(chan struct{})}}
	fs.fail.Store(true)
	w := NewWriter(fs, nil)
	defer w.Close()
	ctx := context.Background()
	decision, err := w.Submit(ctx, sampleRecord(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	<-fs.started // the decision's batch is in the store, failing
	fs.fail.Store(false)
	outcome, err := w.Submit(ctx, sampleRecord(1), decision)
	if err != nil {
		t.Fatal(err)
	}
	other, err := w.Submit(ctx, sampleRecord(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	close(fs.gate)
	if _, err := decision.Wait(ctx); !errors.Is(err, errDisk) {
		t.Fatalf("decision: %v, want the store's error", err)
	}
	if _, err := outcome.Wait(ctx); !errors.Is(err, ErrDependency) {
		t.Fatalf("outcome after a failed decision: %v, want ErrDependency", err)
	}
	if seq, err := other.Wait(ctx); err != nil || seq != 1 {
		t.Fatalf("an unrelated record: seq %d, %v", seq, err)
	}
	if _, err := outcome.Wait(ctx); !errors.Is(err, ErrDependency) {
		t.Fatalf("a second Wait: %v", err)
	}
	if len(fs.entries) != 1 {
		t.Fatalf("%d entries written, want only the unrelated one", len(fs.entries))
	}
}

// A record submitted after one that was written is written, after it in the chain.
func TestSubmitAfterAWrittenRecord(t *testing.T) {
	m := &memAudit{}
	w := NewWriter(m, nil)
	defer w.Close()
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		d, err := w.Submit(ctx, sampleRecord(2*i), nil)
		if err != nil {
			t.Fatal(err)
		}
		o, err := w.Submit(ctx, sampleRecord(2*i+1), d)
		if err != nil {
			t.Fatal(err)
		}
		ds, err1 := d.Wait(ctx)
		os, err2 := o.Wait(ctx)
		if err1 != nil || err2 != nil || os <= ds {
			t.Fatalf("decision seq %d (%v), outcome seq %d (%v)", ds, err1, os, err2)
		}
	}
}

// TestSubmitPair: the two records of a pair are written in one transaction, one after the
// other, however many other records arrive at the same moment; an invalid second record
// submits neither.
func TestSubmitPair(t *testing.T) {
	m := &memAudit{}
	w := NewWriter(m, &Options{MaxBatch: 3})
	ctx := context.Background()
	var wg sync.WaitGroup
	const pairs = 50
	seqs := make([][2]int64, pairs)
	for i := range pairs {
		wg.Go(func() {
			if i%2 == 0 { // others' records in between
				if _, err := w.Append(ctx, sampleRecord(1000+i)); err != nil {
					t.Error(err)
				}
			}
			p1, p2, err := w.SubmitPair(ctx, sampleRecord(2*i), sampleRecord(2*i+1))
			if err != nil {
				t.Error(err)
				return
			}
			s1, err1 := p1.Wait(ctx)
			s2, err2 := p2.Wait(ctx)
			if err1 != nil || err2 != nil {
				t.Error(err1, err2)
			}
			seqs[i] = [2]int64{s1, s2}
		})
	}
	wg.Wait()
	for i, s := range seqs {
		if s[1] != s[0]+1 {
			t.Errorf("pair %d written at seqs %d and %d, not one after the other", i, s[0], s[1])
		}
	}
	bad := sampleRecord(0)
	bad.Kind = "Decision"
	before := w.Stats().Records
	if _, _, err := w.SubmitPair(ctx, sampleRecord(1), bad); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("a pair with an invalid record: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := w.Stats().Records; got != before {
		t.Errorf("%d records written after the refused pair, want none", got-before)
	}
}

// slowCheckpoints holds every PutCheckpoint until gate is closed.
type slowCheckpoints struct {
	*memAudit
	gate chan struct{}
}

func (s *slowCheckpoints) PutCheckpoint(ctx context.Context, c store.Checkpoint) error {
	<-s.gate
	return s.memAudit.PutCheckpoint(ctx, c)
}

// A checkpoint is signed and stored off the writer's goroutine: a store slow to take one holds
// no append back, and every checkpoint asked for is stored, in order, by Close.
func TestCheckpointsDoNotHoldAppends(t *testing.T) {
	s := &slowCheckpoints{memAudit: &memAudit{}, gate: make(chan struct{})}
	w := NewWriter(s, &Options{CheckpointKey: testKey(), CheckpointEvery: 3})
	done := make(chan struct{})
	go func() {
		defer close(done)
		appendN(t, w, 10)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("appends waited for a checkpoint to be stored")
	}
	close(s.gate)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, c := range s.checkpoints {
		seqs = append(seqs, c.Seq)
	}
	if !slices.Equal(seqs, []int64{3, 6, 9, 10}) {
		t.Fatalf("checkpoint seqs = %v, want [3 6 9 10]", seqs)
	}
}
