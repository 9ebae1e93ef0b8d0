// Package revcache holds what was read from the store, each fill tagged with the store
// revision (store.Store.Revision) read before the read that filled it, so that a cache never
// holds a stale decision: a fill that started before a change and lands after the change was
// noticed is dropped, never served.
//
// The rule, for a cache at revision c and a fill or lookup at revision r:
//
//   - a lookup at r == c may be served; at r > c the cache empties and moves to r; at r < c
//     it misses (a caller that read an older revision gets no newer entry either);
//   - a fill at r == c is kept; at r > c the cache empties and moves to r first; at r < c it
//     is dropped: it may have been read before the change that moved the cache to c.
//
// Callers read the revision first, then the store, then fill with the revision they read
// first. A change the caller makes itself must move the revision it reads next (the store
// moves its revision on every change a cache here holds; read it again after writing).
//
// Map and Value are safe for concurrent use; their zero values are empty caches at revision
// 0.
package revcache

import "sync"

// Map caches values by key at one store revision, at most Max of them (0: DefaultMax); a
// full map empties before the next fill.
type Map[K comparable, V any] struct {
	Max int

	mu  sync.RWMutex
	rev int64
	m   map[K]V
}

// DefaultMax bounds a Map whose Max is 0.
const DefaultMax = 1 << 16

// Get returns the value cached for k at rev.
func (c *Map[K, V]) Get(rev int64, k K) (V, bool) {
	c.mu.RLock()
	if rev == c.rev {
		v, ok := c.m[k]
		c.mu.RUnlock()
		return v, ok
	}
	c.mu.RUnlock()
	if rev > c.revision() {
		c.mu.Lock()
		c.advance(rev)
		c.mu.Unlock()
	}
	var zero V
	return zero, false
}

// Put caches v for k as read at rev, unless the cache has moved past rev.
func (c *Map[K, V]) Put(rev int64, k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev < c.rev {
		return
	}
	c.advance(rev)
	max := c.Max
	if max <= 0 {
		max = DefaultMax
	}
	if c.m == nil || len(c.m) >= max {
		c.m = make(map[K]V)
	}
	c.m[k] = v
}

// Update changes the value cached for k at rev, if there is one, with f; a value at another
// revision is left alone. It is for what the caller learnt itself (a use it took).
func (c *Map[K, V]) Update(rev int64, k K, f func(V) V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev != c.rev {
		return
	}
	if v, ok := c.m[k]; ok {
		c.m[k] = f(v)
	}
}

// Delete forgets k.
func (c *Map[K, V]) Delete(k K) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

// Clear forgets everything, keeping the revision.
func (c *Map[K, V]) Clear() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}

func (c *Map[K, V]) revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// advance moves the cache to rev, emptying it if rev is newer; with c.mu held.
func (c *Map[K, V]) advance(rev int64) {
	if rev > c.rev {
		c.rev, c.m = rev, nil
	}
}

// Value caches one value at one store revision.
type Value[V any] struct {
	mu  sync.RWMutex
	rev int64
	v   V
	ok  bool
}

// Get returns the value cached at rev.
func (c *Value[V]) Get(rev int64) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if rev != c.rev || !c.ok {
		var zero V
		return zero, false
	}
	return c.v, true
}

// Put caches v as read at rev, unless the cache has moved past rev.
func (c *Value[V]) Put(rev int64, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev < c.rev {
		return
	}
	c.rev, c.v, c.ok = rev, v, true
}

// Clear forgets the value, keeping the revision.
func (c *Value[V]) Clear() {
	c.mu.Lock()
	var zero V
	c.v, c.ok = zero, false
	c.mu.Unlock()
}
