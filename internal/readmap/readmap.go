// Package readmap is a map for the caches on every call's path, which are read far more
// often than they change: a lookup takes no lock and writes no shared memory, so that
// callers on every core read it at once without passing a cache line between them (a
// sync.RWMutex's read lock is two atomic writes to one word every reader shares).
//
// The map is two: a frozen map that is never changed once published, read through an atomic
// pointer, and a small map of recent additions behind a mutex. An addition goes to the
// recent map, and the recent map is folded into a new frozen map once it holds more than an
// eighth of the frozen one's entries (at once while the frozen map is small), so that every
// addition costs a bounded number of copies on average and a lookup of an entry added
// lately takes the mutex only until the next fold. Each key's value sits in a cell of its
// own, which a change replaces atomically: changing or deleting a key already frozen needs
// no fold.
//
// Values are handed out as pointers and must not be changed through them: Store a new one.
// Map is safe for concurrent use; the zero Map is empty and ready.
package readmap

import (
	"sync"
	"sync/atomic"
)

// Map is a read-mostly map from K to *V.
type Map[K comparable, V any] struct {
	frozen    atomic.Pointer[map[K]*cell[V]] // never changed once stored
	hasRecent atomic.Bool                    // recent holds a key

	mu     sync.Mutex
	recent map[K]*cell[V] // keys not in frozen
	live   int            // keys with a value, frozen and recent
	dead   int            // frozen cells deleted, gone at the next fold
}

type cell[V any] struct {
	v atomic.Pointer[V] // nil: deleted
}

// Load returns the value stored for k.
func (m *Map[K, V]) Load(k K) (*V, bool) {
	for {
		f := m.frozen.Load()
		if f != nil {
			if c, ok := (*f)[k]; ok {
				v := c.v.Load()
				return v, v != nil
			}
		}
		if !m.hasRecent.Load() {
			// A fold publishes its frozen map before it says the recent one is empty: a
			// frozen map changed since the one read may hold k.
			if m.frozen.Load() == f {
				return nil, false
			}
			continue
		}
		m.mu.Lock()
		c := m.cellLocked(k)
		m.mu.Unlock()
		if c == nil {
			return nil, false
		}
		v := c.v.Load()
		return v, v != nil
	}
}

// Store sets k's value to v, which must not be nil.
func (m *Map[K, V]) Store(k K, v *V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.cellLocked(k); c != nil {
		if c.v.Swap(v) == nil {
			m.live++
			if m.inFrozenLocked(k) {
				m.dead--
			}
		}
		return
	}
	if m.recent == nil {
		m.recent = make(map[K]*cell[V])
	}
	c := &cell[V]{}
	c.v.Store(v)
	m.recent[k] = c
	m.live++
	m.hasRecent.Store(true)
	if len(m.recent) > m.frozenLenLocked()/8 {
		m.foldLocked(nil)
	}
}

// Delete forgets k.
func (m *Map[K, V]) Delete(k K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.recent[k]; ok {
		delete(m.recent, k)
		if c.v.Swap(nil) != nil {
			m.live--
		}
		if len(m.recent) == 0 {
			m.hasRecent.Store(false)
		}
		return
	}
	if f := m.frozen.Load(); f != nil {
		if c, ok := (*f)[k]; ok && c.v.Swap(nil) != nil {
			m.live--
			m.dead++
			if m.dead > m.live {
				m.foldLocked(nil) // mostly dead: drop them
			}
		}
	}
}

// Len is the number of keys with a value.
func (m *Map[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// Clear forgets every key.
func (m *Map[K, V]) Clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.frozen.Store(nil)
	m.recent, m.live, m.dead = nil, 0, 0
	m.hasRecent.Store(false)
}

// Range calls f for every key with a value, in no order, until f returns false. f is called
// with the map's mutex held: it must not call the map.
func (m *Map[K, V]) Range(f func(K, *V) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if fr := m.frozen.Load(); fr != nil {
		for k, c := range *fr {
			if v := c.v.Load(); v != nil && !f(k, v) {
				return
			}
		}
	}
	for k, c := range m.recent {
		if v := c.v.Load(); v != nil && !f(k, v) {
			return
		}
	}
}

// Prune keeps the keys for which keep reports true and forgets the others, in one fold.
// keep is called with the map's mutex held: it must not call the map.
func (m *Map[K, V]) Prune(keep func(K, *V) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.foldLocked(keep)
}

// cellLocked returns k's cell, frozen or recent, or nil; with m.mu held.
func (m *Map[K, V]) cellLocked(k K) *cell[V] {
	if f := m.frozen.Load(); f != nil {
		if c, ok := (*f)[k]; ok {
			return c
		}
	}
	return m.recent[k]
}

func (m *Map[K, V]) inFrozenLocked(k K) bool {
	f := m.frozen.Load()
	if f == nil {
		return false
	}
	_, ok := (*f)[k]
	return ok
}

func (m *Map[K, V]) frozenLenLocked() int {
	if f := m.frozen.Load(); f != nil {
		return len(*f)
	}
	return 0
}

// foldLocked publishes a new frozen map of every live key (those keep keeps, when it is not
// nil) and empties the recent one; with m.mu held. The cells move, not copies of them, so a
// reader holding the old frozen map sees the same values.
func (m *Map[K, V]) foldLocked(keep func(K, *V) bool) {
	old := m.frozen.Load()
	n := len(m.recent)
	if old != nil {
		n += len(*old)
	}
	f := make(map[K]*cell[V], n-m.dead)
	live := 0
	add := func(k K, c *cell[V]) {
		v := c.v.Load()
		if v == nil {
			return
		}
		if keep != nil && !keep(k, v) {
			c.v.Store(nil) // a reader of the old map misses it too
			return
		}
		f[k] = c
		live++
	}
	if old != nil {
		for k, c := range *old {
			add(k, c)
		}
	}
	for k, c := range m.recent {
		add(k, c)
	}
	m.frozen.Store(&f)
	m.recent, m.live, m.dead = nil, live, 0
	m.hasRecent.Store(false)
}
