package providers

import (
	"context"
	"sync"
)

// phaseLock keeps two kinds of a provider's calls apart, so that capgate can judge what it
// sees in the provider's read_write folders: calls that may write there (writers) run
// together, calls that may not (judged: side effects below write, or a dry run) run
// together, never one of each at once. A write seen while judged calls run is then one of
// theirs, or the provider's own beside them: either way the provider broke what those calls
// declared. Neither kind starves: once a call of the other kind waits, no new call joins the
// kind that runs, which drains and lets the waiting kind in.
type phaseLock struct {
	mu      sync.Mutex
	active  [2]int
	waiting [2]int
	changed chan struct{} // closed and replaced at every release
}

// The kinds of call.
const (
	writerCall = 0
	judgedCall = 1
)

// lock waits until a call of kind k may run, or ctx ends (its error then).
func (l *phaseLock) lock(ctx context.Context, k int) error {
	o := 1 - k
	l.mu.Lock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	l.waiting[k]++
	for l.active[o] > 0 || (l.waiting[o] > 0 && l.active[k] > 0) {
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			l.mu.Lock()
			l.waiting[k]--
			l.notify()
			l.mu.Unlock()
			return ctx.Err()
		}
		l.mu.Lock()
	}
	l.waiting[k]--
	l.active[k]++
	l.mu.Unlock()
	return nil
}

// unlock ends a call of kind k.
func (l *phaseLock) unlock(k int) {
	l.mu.Lock()
	l.active[k]--
	l.notify()
	l.mu.Unlock()
}

// notify wakes every waiter to look again; l.mu is held.
func (l *phaseLock) notify() {
	if l.changed != nil {
		close(l.changed)
	}
	l.changed = make(chan struct{})
}
