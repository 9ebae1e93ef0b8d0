package audit

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// Options tunes a Writer. A nil *Options is the zero Options: batches of up to
// DefaultMaxBatch with no added wait, no mirror, no checkpoints.
type Options struct {
	// MaxBatch is the most records written in one store call (one more when the last is a
	// SubmitPair, whose two records are never split); zero means DefaultMaxBatch.
	MaxBatch int
	// MaxDelay is how long the writer waits, after the first record of a batch arrives, for
	// more to join it. Zero waits for nothing: records that arrive while a batch is being
	// written form the next batch, which is group commit without added latency. A positive
	// delay trades that much latency per call for fewer, larger transactions.
	MaxDelay time.Duration
	// ConflictRetries is how many times a batch is rebuilt on a new head after
	// store.ErrConflict (another process appended first); zero means
	// DefaultConflictRetries, negative means none.
	ConflictRetries int
	// WriteTimeout bounds each store call; zero means DefaultWriteTimeout.
	WriteTimeout time.Duration

	// Mirror, when set, receives one JSON line per entry this writer makes (the Export
	// format) after the entry is durable in the store. MirrorPath names a file kept as a whole
	// copy of the log instead (created with mode 0600): every entry once, in seq order,
	// appended from a goroutine of its own under a lock on the file by every writer that
	// shares it, each adding from the store what the file lacks (another writer's entries,
	// lines lost in a crash); a line cut short by a crash is replaced (see mirrorFile).
	// Mirror wins when both are set. The store is the record of truth, so a failed mirror
	// write is logged and counted (Stats.MirrorErrors) and never fails an Append. A line may
	// be missing from the mirror for a while after a failure or a crash, never present for
	// an entry that is not durable.
	Mirror     io.Writer
	MirrorPath string

	// HeadPath names the head file (HeadFile) kept beside the store: a goroutine of the
	// writer advances it, synced, to the head of the batches made durable in the store, at
	// most once every HeadConfirm, and no Append waits for it; each checkpoint the writer signs
	// goes in it too. So every record a caller was told is durable is at or below the head
	// file's seq within HeadConfirm (and the time of one head write) of its Append's return,
	// and at Close; a store cut below it no longer matches it. The head file is never ahead of
	// the store, so a crash never makes it disagree. A head file that cannot be written, or that disagrees with the
	// store (ErrHeadFork: the store was cut or rewritten, and the file is left as evidence),
	// is logged and counted (Stats.HeadErrors) and never fails an Append: the record is in
	// the store, and `capgate audit verify` reports the disagreement.
	HeadPath string
	// HeadConfirm is the least time between two head file writes, and so how long the head
	// file may stay behind the store; zero means DefaultHeadConfirm.
	HeadConfirm time.Duration

	// Witnesses receive every checkpoint the writer signs, once it is stored, from a
	// goroutine of their own: the latest one is sent, older ones not yet sent are dropped.
	// A witness that cannot be reached is logged and counted (Stats.WitnessErrors); one that
	// holds a higher checkpoint (another replica sent it) is not an error.
	Witnesses []Witness

	// CheckpointKey signs checkpoints; nil means the writer signs none. It must be 64 bytes
	// (an ed25519.PrivateKey), or NewWriter panics.
	CheckpointKey ed25519.PrivateKey
	// CheckpointEvery signs a checkpoint once the head is this many entries past the last
	// one this writer signed; zero means not by count.
	CheckpointEvery int64
	// CheckpointInterval signs a checkpoint this often when the head moved; zero means not
	// by time. With a key set, Close always signs one when the head moved.
	CheckpointInterval time.Duration

	// Logger receives mirror and checkpoint failures; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Stats counts what a Writer did, for metrics and tests.
type Stats struct {
	Records          int64 // records made durable
	Batches          int64 // successful AppendAudit calls
	Conflicts        int64 // AppendAudit calls refused with store.ErrConflict
	Failures         int64 // batches that failed, every waiter told
	MirrorErrors     int64 // failed mirror writes (or opens)
	Checkpoints      int64 // checkpoints stored
	CheckpointErrors int64 // checkpoints that could not be stored
	HeadErrors       int64 // head file writes that failed or were refused (ErrHeadFork)
	WitnessErrors    int64 // checkpoints a witness did not take (other than a higher one held)
}

// Writer appends records to the audit log with group commit: concurrent Appends are gathered
// into one store transaction, and each returns only once its own record is durable. It is
// safe for concurrent use. Several Writers, in one process or many, may share one store:
// the store's compare-and-set append (store.ErrConflict) keeps the chain single, and a
// Writer that loses the race rebuilds its batch on the new head.
type Writer struct {
	s    store.Audit
	o    Options
	log  *slog.Logger
	done chan struct{}

	// The records handed to the writer wait in queue, in batches: the last is open, and
	// Submit adds to it; the run goroutine takes the first. Each batch has one channel, closed
	// once every record in it is settled, which every waiter of the batch waits on: one
	// channel and one wake-up per batch, not per record.
	mu     sync.Mutex
	closed bool
	queue  []*batch
	nq     int           // records in queue: past MaxBatch, Submit waits for room
	space  chan struct{} // closed when records leave a full queue; nil when none waits
	kick   chan struct{} // cap 1: the queue was empty and is not

	// Owned by the run goroutine.
	head      head
	headKnown bool
	lastCP    int64
	mirror    io.Writer
	headFile  *HeadFile   // when HeadPath is set
	heads     *headKeeper // advances headFile, when HeadPath is set
	headErr   string      // owned by heads: the last head file error logged, so that a lasting one is logged once
	closeErr  error
	live      []*request         // the records of the batch being written, kept for the next
	written   []store.AuditEntry // the entries write made durable, for the mirror

	mirrorQ     chan []store.AuditEntry // to the mirror file's goroutine, when MirrorPath is set
	mirrorDone  chan struct{}
	witnessQ    chan store.Checkpoint // to the witnesses' goroutine: the latest checkpoint
	witnessDone chan struct{}
	cpQ         chan head // to the checkpointer's goroutine: the heads to sign, in order
	cpDone      chan struct{}
	cpErr       error       // the checkpointer's last error; read once it has stopped
	cpRetry     atomic.Bool // the last checkpoint failed: ask for one at the next batch

	records, batches, conflicts, failures, mirrorErrs, cps, cpErrs, headErrs, witnessErrs atomic.Int64
}

// request is one record handed to the writer.
type request struct {
	ctx   context.Context
	body  []byte
	after *request // written only if this one is (see Submit)
	pair  bool     // the first record of a SubmitPair: the next one in its batch goes with it
	b     *batch   // the batch it waits in, set as it is queued

	// Set by the run goroutine, before b.done is closed: what the request came to.
	res     result
	settled bool
}

// batch is records that the writer takes from the queue together.
type batch struct {
	reqs []*request
	done chan struct{}
}

// settle records how r ended, for its waiter (once its batch's channel is closed) and for
// the requests that depend on it.
func (r *request) settle(res result) {
	r.res, r.settled = res, true
}

// ErrDependency is the error of a record submitted after another whose write failed.
var ErrDependency = errors.New("audit: the record it follows was not written")

// Pending is a record handed to the writer and not yet known to be durable.
type Pending struct {
	r *request
}

// Wait returns the record's seq once it is durable, or the error that kept it from the
// log. It may be called more than once.
func (p *Pending) Wait(ctx context.Context) (int64, error) {
	select {
	case <-p.r.b.done:
		return p.r.res.seq, p.r.res.err
	case <-ctx.Done():
		return 0, fmt.Errorf("audit: stopped waiting for the record to be durable: %w", ctx.Err())
	}
}

type result struct {
	seq int64
	err error
}

// NewWriter starts a writer on s. Close it to flush and stop. It panics when
// opts.CheckpointKey is set and not 64 bytes, a programming error better found at start than
// at the first checkpoint.
func NewWriter(s store.Audit, opts *Options) *Writer {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.ConflictRetries == 0 {
		o.ConflictRetries = DefaultConflictRetries
	}
	o.ConflictRetries = max(o.ConflictRetries, 0)
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.HeadConfirm <= 0 {
		o.HeadConfirm = DefaultHeadConfirm
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.CheckpointKey != nil && len(o.CheckpointKey) != ed25519.PrivateKeySize {
		panic("audit: NewWriter: CheckpointKey is not a 64-byte ed25519.PrivateKey")
	}
	w := &Writer{
		s:      s,
		o:      o,
		log:    o.Logger,
		kick:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		mirror: o.Mirror,
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	if o.HeadPath != "" {
		w.headFile = NewHeadFile(o.HeadPath)
		w.heads = newHeadKeeper(w)
		go w.heads.run()
	}
	if w.mirror == nil && o.MirrorPath != "" {
		w.mirrorQ, w.mirrorDone = make(chan []store.AuditEntry, mirrorQueue), make(chan struct{})
		go newMirrorFile(o.MirrorPath, s, w.log, &w.mirrorErrs, o.WriteTimeout).run(w.mirrorQ, w.mirrorDone)
	}
	if len(o.Witnesses) > 0 {
		w.witnessQ, w.witnessDone = make(chan store.Checkpoint, 1), make(chan struct{})
		go w.runWitnesses()
	}
	if o.CheckpointKey != nil {
		w.cpQ, w.cpDone = make(chan head, checkpointQueue), make(chan struct{})
		go w.runCheckpoints()
	}
	go w.run()
	return w
}

// Append validates rec, writes it to the log and returns its seq once it is durable in the
// store. A zero rec.Timestamp is set to now. An invalid record is an error wrapping
// ErrInvalidRecord and is not written.
//
// Any error means the caller must act as if nothing was recorded: refuse the call. When the
// store fails, every Append of the batch gets the error. When ctx ends first, Append returns
// its error; the record is then dropped if it was not yet handed to the store, and may still
// be written if it was (the log can hold a decision whose call was refused, never a call
// without its decision).
func (w *Writer) Append(ctx context.Context, rec Record) (int64, error) {
	p, err := w.Submit(ctx, rec, nil)
	if err != nil {
		return 0, err
	}
	return p.Wait(ctx)
}

// Submit validates rec and hands it to the writer without waiting for it to be durable:
// Wait on the Pending says when it is. With after set, rec is written only if after is: it
// goes into the same transaction as after or a later one, and if after's write fails, rec
// fails with ErrDependency and is not written. So a call that submits its decision, runs a
// read, then submits the outcome after the decision, can never leave an outcome in the log
// without its decision. Submit's errors are Append's.
func (w *Writer) Submit(ctx context.Context, rec Record, after *Pending) (*Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rec.Timestamp == 0 {
		rec.Timestamp = w.o.Now().Unix()
	}
	body, err := rec.Body()
	if err != nil {
		return nil, err
	}
	p := &struct {
		r request
		p Pending
	}{r: request{ctx: ctx, body: body}}
	if after != nil {
		p.r.after = after.r
	}
	if err := w.enqueue(ctx, &p.r); err != nil {
		return nil, err
	}
	p.p.r = &p.r
	return &p.p, nil
}

// SubmitPair hands two records to the writer at once, to be written in the same transaction,
// the second after the first and only if it is: one commit makes both durable. A read that
// has run submits its decision and outcome records this way, so that its answer waits for one
// commit instead of two in a row. The errors are Submit's; on an error neither is submitted.
func (w *Writer) SubmitPair(ctx context.Context, first, second Record) (*Pending, *Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	// One allocation for both records and their Pendings.
	p := &struct {
		r [2]request
		p [2]Pending
	}{}
	for i, rec := range [2]Record{first, second} {
		if rec.Timestamp == 0 {
			rec.Timestamp = w.o.Now().Unix()
		}
		body, err := rec.Body()
		if err != nil {
			return nil, nil, err
		}
		p.r[i] = request{ctx: ctx, body: body}
	}
	p.r[0].pair, p.r[1].after = true, &p.r[0]
	if err := w.enqueue(ctx, &p.r[0], &p.r[1]); err != nil {
		return nil, nil, err
	}
	p.p[0].r, p.p[1].r = &p.r[0], &p.r[1]
	return &p.p[0], &p.p[1], nil
}

// enqueue adds rs, in order and together, to the open batch, or to a new one when that is
// full; it waits for room in the queue (MaxBatch records, more for rs alone) until ctx ends.
func (w *Writer) enqueue(ctx context.Context, rs ...*request) error {
	w.mu.Lock()
	for {
		if w.closed {
			w.mu.Unlock()
			return ErrClosed
		}
		if w.nq == 0 || w.nq+len(rs) <= w.o.MaxBatch {
			break
		}
		if w.space == nil {
			w.space = make(chan struct{})
		}
		space := w.space
		w.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
	var b *batch
	if n := len(w.queue); n > 0 && len(w.queue[n-1].reqs) < w.o.MaxBatch {
		b = w.queue[n-1]
	} else {
		b = &batch{done: make(chan struct{})}
		w.queue = append(w.queue, b)
	}
	for _, r := range rs {
		r.b = b
		b.reqs = append(b.reqs, r)
	}
	w.nq += len(rs)
	first := w.nq == len(rs)
	w.mu.Unlock()
	if first {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// taken says that n records left the queue: Submits waiting for room may go on. w.mu is
// held.
func (w *Writer) taken(n int) {
	w.nq -= n
	if w.space != nil {
		close(w.space)
		w.space = nil
	}
}

// take removes batches from the queue, the first and those after it up to MaxBatch records
// in all; nil when there is none.
func (w *Writer) take(bs []*batch) []*batch {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, k := 0, 0
	for k < len(w.queue) && (k == 0 || n+len(w.queue[k].reqs) <= w.o.MaxBatch) {
		bs = append(bs, w.queue[k])
		n += len(w.queue[k].reqs)
		w.queue[k] = nil
		k++
	}
	w.queue = w.queue[k:]
	w.taken(n)
	return bs
}

// queued is how many records wait in the queue, for tests.
func (w *Writer) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nq
}

// Close writes every record already accepted, signs a last checkpoint when a key is set and
// the head moved since the last one, closes a mirror file it opened, and stops the writer.
// Later Appends fail with ErrClosed. It returns the error of that last checkpoint, if any.
// Close is safe to call more than once.
func (w *Writer) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	<-w.done
	return w.closeErr
}

// Stats returns the writer's counters.
func (w *Writer) Stats() Stats {
	return Stats{
		Records:          w.records.Load(),
		Batches:          w.batches.Load(),
		Conflicts:        w.conflicts.Load(),
		Failures:         w.failures.Load(),
		MirrorErrors:     w.mirrorErrs.Load(),
		Checkpoints:      w.cps.Load(),
		CheckpointErrors: w.cpErrs.Load(),
		HeadErrors:       w.headErrs.Load(),
		WitnessErrors:    w.witnessErrs.Load(),
	}
}

// run is the writer's one goroutine: it owns the head, the mirror and the checkpoints.
func (w *Writer) run() {
	defer close(w.done)
	var tick <-chan time.Time
	if w.o.CheckpointKey != nil && w.o.CheckpointInterval > 0 {
		t := time.NewTicker(w.o.CheckpointInterval)
		defer t.Stop()
		tick = t.C
	}
	var bs []*batch
	for {
		for bs = w.take(bs[:0]); len(bs) > 0; bs = w.take(bs[:0]) {
			bs = w.gather(bs)
			w.commit(bs)
			clear(bs)
			if w.o.CheckpointKey != nil && w.o.CheckpointEvery > 0 && w.headKnown && w.head.seq-w.lastCP >= w.o.CheckpointEvery {
				w.checkpoint()
			}
		}
		w.mu.Lock()
		done := w.closed && len(w.queue) == 0
		w.mu.Unlock()
		if done {
			if w.o.CheckpointKey != nil {
				w.checkpoint()
				close(w.cpQ)
				<-w.cpDone
				w.closeErr = w.cpErr
			}
			w.stop()
			return
		}
		select {
		case <-w.kick:
		case <-tick:
			w.checkpoint()
		}
	}
}

// gather waits, when Options.MaxDelay asks for it, up to MaxDelay for more records to join
// the batches taken, until they hold MaxBatch: the batches queued meanwhile are taken too.
func (w *Writer) gather(bs []*batch) []*batch {
	if w.o.MaxDelay <= 0 {
		return bs
	}
	count := func() int {
		n := 0
		for _, b := range bs {
			n += len(b.reqs)
		}
		return n
	}
	timer := time.NewTimer(w.o.MaxDelay)
	defer timer.Stop()
	for count() < w.o.MaxBatch {
		select {
		case <-timer.C:
			return bs
		case <-w.kick:
		}
		w.mu.Lock()
		n := count()
		m := n
		for len(w.queue) > 0 && n+len(w.queue[0].reqs) <= w.o.MaxBatch {
			bs = append(bs, w.queue[0])
			n += len(w.queue[0].reqs)
			w.queue[0] = nil
			w.queue = w.queue[1:]
		}
		w.taken(n - m)
		w.mu.Unlock()
	}
	return bs
}

// commit writes the records of batches in one store call and tells every waiter its seq or
// the error, closing each batch's channel once all its records are settled.
func (w *Writer) commit(bs []*batch) {
	live := w.live[:0]
	for _, b := range bs {
		for _, r := range b.reqs {
			live = w.keep(live, r)
		}
	}
	w.write(live)
	clear(live)
	w.live = live[:0]
	for _, b := range bs {
		close(b.done)
	}
	if w.written == nil {
		return
	}
	// The waiters just woken are queued on this goroutine's processor, and the next commit
	// ends in an fsync that keeps the processor until the runtime's monitor takes it back
	// (up to milliseconds later): let them run first. Measured in capgate bench gateway:
	// about 7% more calls a second and larger batches.
	runtime.Gosched()
	w.writeMirror(w.written)
	w.written = nil
}

// keep appends r to live, unless it is not to be written: its caller left, or the record it
// follows failed or was dropped; those are settled here.
func (w *Writer) keep(live []*request, r *request) []*request {
	if err := r.ctx.Err(); err != nil {
		r.settle(result{err: err})
		return live
	}
	// A record whose predecessor failed, or was dropped above, is not written. One whose
	// predecessor is in this batch is written with it, all or nothing.
	if a := r.after; a != nil && a.settled && a.res.err != nil {
		r.settle(result{err: ErrDependency})
		return live
	}
	return append(live, r)
}

// write writes live's records in one store call and settles each.
func (w *Writer) write(live []*request) {
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.o.WriteTimeout)
	defer cancel()
	var (
		entries []store.AuditEntry
		err     error
	)
	seqr, sequenced := w.s.(store.AuditSequencer)
	for attempt := 0; ; attempt++ {
		var h head
		if sequenced {
			// The store gives each writer its turn at the head: no head to keep, no race.
			err = seqr.AppendAuditSequenced(ctx, func(e store.AuditEntry) ([]store.AuditEntry, error) {
				entries, h = w.chain(head{seq: e.Seq, hash: e.Hash}, live)
				return entries, nil
			})
		} else {
			if !w.headKnown {
				if err = w.readHead(ctx); err != nil {
					break
				}
			}
			entries, h = w.chain(w.head, live)
			err = w.s.AppendAudit(ctx, entries)
		}
		if err == nil {
			w.head, w.headKnown = h, true
			break
		}
		// The head may have moved (a conflict), or the write may have failed in a way that
		// leaves us unsure: read it again before the next batch either way.
		w.headKnown = false
		if !errors.Is(err, store.ErrConflict) {
			break
		}
		w.conflicts.Add(1)
		if attempt >= w.o.ConflictRetries {
			break
		}
	}
	if err != nil {
		w.failures.Add(1)
		err = fmt.Errorf("audit: append %d records: %w", len(live), err)
		for _, r := range live {
			r.settle(result{err: err})
		}
		return
	}
	w.batches.Add(1)
	w.records.Add(int64(len(live)))
	// The head file takes this batch's head within HeadConfirm, from its own goroutine: no
	// caller waits for its sync (docs/performance.md, "The audit head file").
	if w.heads != nil {
		last := entries[len(entries)-1]
		w.heads.post(entries, Head{Seq: last.Seq, Hash: last.Hash})
	}
	for i, r := range live {
		r.settle(result{seq: entries[i].Seq})
	}
	w.written = entries
}

// chain links live's records after h, every entry stamped with one time, and returns the
// entries with the head after the last of them.
func (w *Writer) chain(h head, live []*request) ([]store.AuditEntry, head) {
	entries := make([]store.AuditEntry, len(live))
	at := w.o.Now().UTC()
	for i, r := range live {
		entries[i], h = h.next(r.body, at)
	}
	return entries, h
}

// readHead loads the head from the store.
func (w *Writer) readHead(ctx context.Context) error {
	e, err := w.s.AuditHead(ctx)
	switch {
	case errors.Is(err, store.ErrNotFound):
		w.head = head{}
	case err != nil:
		return fmt.Errorf("read head: %w", err)
	default:
		w.head = head{seq: e.Seq, hash: e.Hash}
	}
	w.headKnown = true
	return nil
}

// writeMirror hands durable entries to the mirror file's goroutine, or appends their lines to
// Options.Mirror.
func (w *Writer) writeMirror(entries []store.AuditEntry) {
	if w.mirrorQ != nil {
		select {
		case w.mirrorQ <- entries:
		default:
			// The mirror is behind by a full queue: its next write reads what it lacks from
			// the store.
		}
		return
	}
	if w.mirror == nil {
		return
	}
	var buf []byte
	for _, e := range entries {
		buf = appendLineOf(buf, e, true) // the writer's own bodies, canonical by Record.Body
	}
	if _, err := w.mirror.Write(buf); err != nil {
		w.mirrorFailed(err)
	}
}

func (w *Writer) mirrorFailed(err error) {
	w.mirrorErrs.Add(1)
	w.log.Error("audit: mirror write failed; the store still holds the records", "err", err)
}

// checkpoint asks for a checkpoint of the head, when it moved since the last one asked for:
// the checkpointer's goroutine signs and stores it, so that no batch waits for a signature
// and a database commit. It is owned by the run goroutine.
func (w *Writer) checkpoint() {
	if w.cpRetry.Swap(false) {
		w.lastCP = min(w.lastCP, w.head.seq-1) // the last one asked for failed: ask again
	}
	if !w.headKnown || w.head.seq == 0 || w.head.seq <= w.lastCP {
		return
	}
	w.lastCP = w.head.seq
	w.cpQ <- w.head
}

// runCheckpoints signs and stores each checkpoint asked for, in order, and hands it to the
// head file and the witnesses; the last one's error is the Writer's Close error.
func (w *Writer) runCheckpoints() {
	defer close(w.cpDone)
	for h := range w.cpQ {
		w.cpErr = w.storeCheckpoint(h)
	}
}

// storeCheckpoint signs and stores a checkpoint of h.
func (w *Writer) storeCheckpoint(h head) error {
	ctx, cancel := context.WithTimeout(context.Background(), w.o.WriteTimeout)
	defer cancel()
	c := SignCheckpoint(w.o.CheckpointKey, h.seq, h.hash, w.o.Now())
	err := w.s.PutCheckpoint(ctx, c)
	if errors.Is(err, store.ErrExists) {
		// Another writer sharing the store checkpointed this seq first: the seq is covered.
		err = nil
	}
	if err != nil {
		w.cpErrs.Add(1)
		w.cpRetry.Store(true)
		w.log.Error("audit: checkpoint failed", "seq", h.seq, "err", err)
		return fmt.Errorf("audit: checkpoint at seq %d: %w", h.seq, err)
	}
	w.cps.Add(1)
	if w.heads != nil {
		w.heads.post(nil, Head{Seq: c.Seq, Hash: c.Head, Checkpoint: c})
	}
	if w.witnessQ != nil {
		// Only the latest matters: replace one not yet taken.
		select {
		case <-w.witnessQ:
		default:
		}
		w.witnessQ <- c
	}
	return nil
}

// advanceHead moves the head file, when there is one, to next; entries are the batch just
// made durable (none for a checkpoint). The head kept before must be in the log: the entry
// before the batch, one in it, or one in the store with the same hash. When it is not (the
// store was cut or rewritten), or the file cannot be written, the error is logged (once while
// it lasts) and counted, and the file is left as it is.
func (w *Writer) advanceHead(ctx context.Context, entries []store.AuditEntry, next Head) {
	if w.headFile == nil {
		return
	}
	linked := func(cur Head) error {
		if len(entries) > 0 {
			first, last := entries[0], entries[len(entries)-1]
			switch {
			case cur.Seq == first.Seq-1:
				if first.PrevHash == cur.Hash {
					return nil
				}
				return fmt.Errorf("%w: the store's entry %d does not follow the head file's head at seq %d: the log was rewritten", ErrHeadFork, first.Seq, cur.Seq)
			case cur.Seq >= first.Seq && cur.Seq <= last.Seq:
				if entries[cur.Seq-first.Seq].Hash == cur.Hash {
					return nil
				}
				return fmt.Errorf("%w: the store's entry %d has another hash than the head file's: the log was rewritten", ErrHeadFork, cur.Seq)
			}
		}
		es, err := w.s.AuditRange(ctx, cur.Seq, cur.Seq, 1)
		switch {
		case err != nil:
			return fmt.Errorf("read the store's entry %d: %w", cur.Seq, err)
		case len(es) == 0 || es[0].Seq != cur.Seq:
			return fmt.Errorf("%w: the store has no entry at seq %d, which the head file holds: entries were deleted from the store", ErrHeadFork, cur.Seq)
		case es[0].Hash != cur.Hash:
			return fmt.Errorf("%w: the store's entry %d has another hash than the head file's: the log was rewritten", ErrHeadFork, cur.Seq)
		}
		return nil
	}
	hf := w.headFile
	_, err := hf.Advance(next, linked)
	if err == nil {
		w.headErr = ""
		return
	}
	w.headErrs.Add(1)
	if msg := err.Error(); msg != w.headErr {
		w.headErr = msg
		if errors.Is(err, ErrHeadFork) {
			w.log.Error("audit: the head file disagrees with the store and is left as it is; run capgate audit verify", "head_file", hf.Path(), "err", err)
		} else {
			w.log.Error("audit: the head file could not be written; the store still holds the records", "head_file", hf.Path(), "err", err)
		}
	}
}

// runWitnesses sends each checkpoint from witnessQ to every witness.
func (w *Writer) runWitnesses() {
	defer close(w.witnessDone)
	for c := range w.witnessQ {
		for _, wit := range w.o.Witnesses {
			ctx, cancel := context.WithTimeout(context.Background(), DefaultWitnessTimeout)
			err := wit.Submit(ctx, c)
			cancel()
			switch {
			case err == nil:
			case errors.Is(err, ErrWitnessLower):
				w.log.Debug("audit: the witness holds a later checkpoint", "witness", wit.String(), "seq", c.Seq)
			default:
				w.witnessErrs.Add(1)
				w.log.Error("audit: the witness did not take the checkpoint", "witness", wit.String(), "seq", c.Seq, "err", err)
			}
		}
	}
}

// stop ends the writer's goroutines once the last checkpoint is signed: the mirror's after
// it wrote what it was handed, the witnesses' after they were sent the last checkpoint.
func (w *Writer) stop() {
	if w.mirrorQ != nil {
		close(w.mirrorQ)
		<-w.mirrorDone
	}
	if w.witnessQ != nil {
		close(w.witnessQ)
		<-w.witnessDone
	}
	if w.heads != nil {
		w.heads.stop()
		if err := w.headFile.Close(); err != nil {
			w.log.Warn("audit: closing the head file", "err", err)
		}
	}
}
