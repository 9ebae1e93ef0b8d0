package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// Work a call leaves running (a background terminal command) must not outlive a revocation
// of the token it ran under, nor its client's being disabled or removed. A handler asks to be told (sdk.InvocationContext.WatchRevocation)
// and the broker keeps the watched tokens here: a revocation through this broker checks them
// at once, and one made by another process (the CLI on the store, another replica) moves the
// store's revision, which Sync notices and checks them for. Only watched tokens are checked,
// one small read each, and only when something was revoked or changed.

// watches are the tokens handlers watch.
type watches struct {
	mu sync.Mutex
	m  map[string]*watched // by token id
}

type watched struct {
	revoked chan struct{}
	refs    int
	closed  bool
}

// maxWatched bounds the watched tokens: each is a read on every revocation. A handler that
// asks beyond it gets a watch that is closed at once, so its work stops rather than outlive
// a revocation unseen.
const maxWatched = 4096

// watchRevocation returns the sdk.InvocationContext.WatchRevocation of a call under the
// token id.
func (b *Broker) watchRevocation(id string) func() (<-chan struct{}, func()) {
	return func() (<-chan struct{}, func()) {
		w := &b.watch
		w.mu.Lock()
		if w.m == nil {
			w.m = map[string]*watched{}
		}
		e, ok := w.m[id]
		if !ok {
			if len(w.m) >= maxWatched {
				w.mu.Unlock()
				c := make(chan struct{})
				close(c)
				return c, func() {}
			}
			e = &watched{revoked: make(chan struct{})}
			w.m[id] = e
		}
		e.refs++
		w.mu.Unlock()
		// A revocation may have landed between the call's check at use and now.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b.checkWatched(ctx, []string{id})
		cancel()
		var once sync.Once
		return e.revoked, func() {
			once.Do(func() {
				w.mu.Lock()
				if e.refs--; e.refs == 0 && w.m[id] == e {
					delete(w.m, id)
				}
				w.mu.Unlock()
			})
		}
	}
}

// checkWatchedAll checks every watched token against the store.
func (b *Broker) checkWatchedAll(ctx context.Context) {
	b.watch.mu.Lock()
	ids := make([]string, 0, len(b.watch.m))
	for id := range b.watch.m {
		ids = append(ids, id)
	}
	b.watch.mu.Unlock()
	if len(ids) > 0 {
		b.checkWatched(ctx, ids)
	}
}

// checkWatched closes the watches of those of ids the store refuses for good or for now: a
// token revoked, gone from the store, or whose client is disabled. An expired token is not
// revoked: the work it started runs out its own timeout. A read that fails leaves the watch
// for the next check.
func (b *Broker) checkWatched(ctx context.Context, ids []string) {
	for _, id := range ids {
		err := b.o.Store.CheckToken(ctx, id, b.o.Now())
		if !errors.Is(err, store.ErrRevoked) && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrClientDisabled) {
			continue
		}
		b.watch.mu.Lock()
		if e, ok := b.watch.m[id]; ok && !e.closed {
			e.closed = true
			close(e.revoked)
		}
		b.watch.mu.Unlock()
	}
}
