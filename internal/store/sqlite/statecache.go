package sqlite

import (
	"bytes"
	"sync"
	"time"
)

// Bounds of the apps' state kept in memory (stateCache).
const (
	// maxCachedStates is how many keys are kept; a full cache is emptied.
	maxCachedStates = 4096
	// maxCachedStateBytes is the largest value kept; a larger one is read every time.
	maxCachedStateBytes = 16 << 10
	// StateCacheTTL is how long a kept value is served at most: a change made to the file by
	// other means than capgate (which moves the state counter) is seen within it.
	StateCacheTTL = time.Second
)

// stateCache keeps the apps' state values (and missing keys) read from the file, each with
// the state counter's value read before it was read from the file: a value is served only
// while the counter, shared by every process on the file, has not moved since, and for at
// most StateCacheTTL. Every write of state moves the counter, so a value another capgate
// process changed is read again at the next get. It is safe for concurrent use.
type stateCache struct {
	mu sync.Mutex
	m  map[stateKey]stateEntry
}

type stateKey struct{ app, key string }

type stateEntry struct {
	value []byte // nil: the key was missing
	at    uint64 // the state counter before the read
	read  time.Time
}

// get returns a copy of the value kept for app's key at counter value at, and whether one is
// kept (value nil: the key is missing).
func (c *stateCache) get(app, key string, at uint64, now time.Time) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[stateKey{app, key}]
	if !ok || e.at != at || now.Sub(e.read) >= StateCacheTTL || now.Before(e.read) {
		return nil, false
	}
	if e.value == nil {
		return nil, true
	}
	return bytes.Clone(e.value), true
}

// put keeps a copy of value (nil: missing) for app's key, read after the counter read at.
func (c *stateCache) put(app, key string, value []byte, at uint64, now time.Time) {
	if len(value) > maxCachedStateBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedStates {
		c.m = map[stateKey]stateEntry{}
	}
	var v []byte
	if value != nil {
		v = bytes.Clone(value)
		if v == nil {
			v = []byte{}
		}
	}
	c.m[stateKey{app, key}] = stateEntry{value: v, at: at, read: now}
}
