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

import (
	"sync"
	"sync/atomic"

	"github.com/capgate/capgate/internal/readmap"
)

// Map caches values by key at one store revision, at most Max of them (0: DefaultMax); a
// full map empties before the next fill. A lookup takes no lock (readmap): the caches here
// are on every call's path, read from every core at once.
type Map[K comparable, V any] struct {
	Max int

	mu  sync.Mutex                // held by every change
	gen atomic.Pointer[gen[K, V]] // nil: revision 0, empty
}

// gen is the cache at one revision; a move to a newer one, or an emptying, is a new gen.
type gen[K comparable, V any] struct {
	rev int64
	m   readmap.Map[K, V]
}

// DefaultMax bounds a Map whose Max is 0.
const DefaultMax = 1 << 16

// Get returns the value cached for k at rev.
func (c *Map[K, V]) Get(rev int64, k K) (V, bool) {
	if v, ok := c.Ref(rev, k); ok {
		return *v, true
	}
	var zero V
	return zero, false
}

// Ref is Get without the copy: the value cached for k at rev, which the caller must not
// change (Update replaces it; it does not change it in place).
func (c *Map[K, V]) Ref(rev int64, k K) (*V, bool) {
	g := c.gen.Load()
	if g != nil && g.rev == rev {
		return g.m.Load(k)
	}
	if g == nil || rev > g.rev {
		c.mu.Lock()
		c.advanceLocked(rev)
		c.mu.Unlock()
	}
	return nil, false
}

// Put caches v for k as read at rev, unless the cache has moved past rev.
func (c *Map[K, V]) Put(rev int64, k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.advanceLocked(rev)
	if rev < g.rev {
		return
	}
	max := c.Max
	if max <= 0 {
		max = DefaultMax
	}
	if g.m.Len() >= max {
		g = &gen[K, V]{rev: rev}
		c.gen.Store(g)
	}
	g.m.Store(k, &v)
}

// Update changes the value cached for k at rev, if there is one, with f; a value at another
// revision is left alone. It is for what the caller learnt itself (a use it took).
func (c *Map[K, V]) Update(rev int64, k K, f func(V) V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.gen.Load()
	if g == nil || rev != g.rev {
		return
	}
	if v, ok := g.m.Load(k); ok {
		nv := f(*v)
		g.m.Store(k, &nv)
	}
}

// Delete forgets k.
func (c *Map[K, V]) Delete(k K) {
	c.mu.Lock()
	if g := c.gen.Load(); g != nil {
		g.m.Delete(k)
	}
	c.mu.Unlock()
}

// Clear forgets everything, keeping the revision.
func (c *Map[K, V]) Clear() {
	c.mu.Lock()
	if g := c.gen.Load(); g != nil {
		c.gen.Store(&gen[K, V]{rev: g.rev})
	}
	c.mu.Unlock()
}

// advanceLocked moves the cache to rev, emptying it, if rev is newer, and returns the
// current gen; with c.mu held.
func (c *Map[K, V]) advanceLocked(rev int64) *gen[K, V] {
	g := c.gen.Load()
	if g == nil || rev > g.rev {
		g = &gen[K, V]{rev: rev}
		c.gen.Store(g)
	}
	return g
}

// Value caches one value at one store revision. A lookup takes no lock.
type Value[V any] struct {
	mu  sync.Mutex // held by every change
	cur atomic.Pointer[valueAt[V]]
}

type valueAt[V any] struct {
	rev int64
	v   V
	ok  bool
}

// Get returns the value cached at rev.
func (c *Value[V]) Get(rev int64) (V, bool) {
	p := c.cur.Load()
	if p == nil || rev != p.rev || !p.ok {
		var zero V
		return zero, false
	}
	return p.v, true
}

// Put caches v as read at rev, unless the cache has moved past rev.
func (c *Value[V]) Put(rev int64, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.cur.Load(); p != nil && rev < p.rev {
		return
	}
	c.cur.Store(&valueAt[V]{rev: rev, v: v, ok: true})
}

// Clear forgets the value, keeping the revision.
func (c *Value[V]) Clear() {
	c.mu.Lock()
	if p := c.cur.Load(); p != nil {
		c.cur.Store(&valueAt[V]{rev: p.rev})
	}
	c.mu.Unlock()
}
