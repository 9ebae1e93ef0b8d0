package audit

import (
	"context"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// headKeeper advances a writer's head file from a goroutine of its own, so that no Append
// waits for the head file's sync: the writer posts each durable batch's head and each
// checkpoint, and the keeper writes the latest of them at once when it has been idle, then at
// most once every Options.HeadConfirm. What it writes is always durable in the store already,
// so the head file is never ahead of it.
type headKeeper struct {
	w     *Writer
	every time.Duration

	mu      sync.Mutex
	pending bool
	next    Head // the highest head and checkpoint posted and not yet written
	// entries are the batches posted since the last write, in order and without a gap (a
	// batch that does not follow them, another process's appends between, starts them
	// again, and so does one that would pass headKeptEntries): the link check finds the head
	// the file holds among them, or right before them, without reading the store, and reads
	// it from the store otherwise.
	entries []store.AuditEntry
	spare   []store.AuditEntry // the slice write handed back, for the next entries

	wake  chan struct{} // cap 1: something was posted
	quit  chan struct{} // closed by stop
	ended chan struct{} // closed when run returns
}

func newHeadKeeper(w *Writer) *headKeeper {
	return &headKeeper{w: w, every: w.o.HeadConfirm, wake: make(chan struct{}, 1), quit: make(chan struct{}), ended: make(chan struct{})}
}

// post hands the keeper a head made durable in the store: a batch's (with its entries) or a
// checkpoint's (entries nil).
func (k *headKeeper) post(entries []store.AuditEntry, h Head) {
	k.mu.Lock()
	if !k.pending {
		k.next = Head{}
	}
	if h.Seq > k.next.Seq {
		k.next.Seq, k.next.Hash = h.Seq, h.Hash
	}
	if h.Checkpoint.Seq > k.next.Checkpoint.Seq {
		k.next.Checkpoint = h.Checkpoint
	}
	if len(entries) > 0 {
		n := len(k.entries)
		if n > 0 && k.entries[n-1].Seq+1 == entries[0].Seq && n+len(entries) <= headKeptEntries {
			k.entries = append(k.entries, entries...)
		} else {
			// Not following them, or past the bound (a head file that cannot be written for
			// a while): start again from this batch, its newest headKeptEntries, so that no
			// commit copies more than its own batch.
			clear(k.entries)
			k.entries = append(k.entries[:0], entries[max(0, len(entries)-headKeptEntries):]...)
		}
	}
	k.pending = true
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// take returns what was posted since the last take.
func (k *headKeeper) take() (Head, []store.AuditEntry, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.pending {
		return Head{}, nil, false
	}
	h, es := k.next, k.entries
	k.pending, k.entries, k.spare = false, k.spare, nil
	return h, es, true
}

// write advances the head file to what was posted, if anything was.
func (k *headKeeper) write() {
	h, es, ok := k.take()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.w.o.WriteTimeout)
	defer cancel()
	k.w.advanceHead(ctx, es, h)
	clear(es) // no body held for longer than the write
	k.mu.Lock()
	k.spare = es[:0]
	k.mu.Unlock()
}

func (k *headKeeper) run() {
	defer close(k.ended)
	pause := time.NewTimer(k.every)
	pause.Stop()
	defer pause.Stop()
	for {
		select {
		case <-k.wake:
		case <-k.quit:
			k.write()
			return
		}
		k.write()
		pause.Reset(k.every)
		select {
		case <-pause.C:
		case <-k.quit:
			k.write()
			return
		}
	}
}

// stop writes what is still posted and ends the keeper.
func (k *headKeeper) stop() {
	close(k.quit)
	<-k.ended
}
