package mcp

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// heldCache keeps each client's held tokens as the store last listed them, for a store that
// counts its changes (store.ChangeCounter: SQLite, whose processes share one machine). Every
// holding kept or dropped, by any capgate process on the store, moves the counter, so a list
// read when the counter stood where it stands now is still the store's; an expiry is applied
// at each use. A store without the counter (PostgreSQL replicas) is read every time. It is
// safe for concurrent use; the zero value is empty.
type heldCache struct {
	mu sync.Mutex
	m  map[string]heldList // by client id
	// reads counts the store's listings, for tests.
	reads atomic.Int64
}

// heldList is one client's holdings with one more than the counter's value read before the
// store listed them.
type heldList struct {
	at   uint64
	list []store.Holding
}

// list returns the client's holdings unexpired at now, from memory when nothing changed
// since the store last listed them. The result is the caller's to change.
func (c *heldCache) list(ctx context.Context, s store.Holdings, client string, now time.Time) ([]store.Holding, error) {
	cc, counted := s.(store.ChangeCounter)
	var n uint64
	if counted {
		n, counted = cc.Changes()
	}
	if counted {
		c.mu.Lock()
		e, ok := c.m[client]
		c.mu.Unlock()
		if ok && e.at == n+1 {
			return slices.DeleteFunc(slices.Clone(e.list), func(h store.Holding) bool { return !h.ExpiresAt.After(now) }), nil
		}
	}
	c.reads.Add(1)
	// n was read before the store: a change committed after it moves the counter past it.
	all, err := s.ListHoldings(ctx, client, now)
	if err != nil || !counted {
		return all, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]heldList{}
	}
	if _, ok := c.m[client]; !ok && len(c.m) >= MaxCachedHolders {
		for k := range c.m { // any one: an entry is stale at the store's next change anyway
			delete(c.m, k)
			break
		}
	}
	c.m[client] = heldList{at: n + 1, list: slices.Clone(all)}
	return all, nil
}
