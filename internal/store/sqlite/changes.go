package sqlite

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// changes is a counter every process on one database file shares through memory: a page of
// the file beside the database (its path and ".changes", mode 0600) mapped shared by each.
// Every write transaction that can change what a cached decision depends on (a token revoked,
// a client disabled, a mandate or an app changed, a consent answered) adds one once it has
// committed; the writes of the call path that cannot (audit records and checkpoints, the
// apps' own state, a token's use taken, which its check at use reads anyway) do not. So a
// process that read the counter, then the store, and finds the counter unchanged later knows
// that no process has made such a change since: what it read still holds. The page holds no
// secret, and a process that can write it can write the database. It stays mapped until the
// process ends, so that a load after the store's Close cannot fault.
type changes struct {
	mem  []byte         // the mapped page; nil when the counter could not be mapped
	word *atomic.Uint64 // its first eight bytes
	// state is a second counter in the next eight bytes: the apps' own state, moved by every
	// write of it (stateCache).
	state *atomic.Uint64
}

// changesPageSize is the size of the counter's file: one page, of which eight bytes are used.
const changesPageSize = 4096

// openChanges maps the counter file at path, creating it when missing. A file that cannot be
// made or mapped leaves the counter unavailable: every check then reads the store.
func openChanges(path string) (*changes, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return &changes{}, fmt.Errorf("sqlite: change counter: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return &changes{}, fmt.Errorf("sqlite: change counter: %w", err)
	}
	if fi.Size() < changesPageSize {
		// Truncate only grows a short file (a new one, or one cut by hand): its counter reads
		// as whatever it held, and a change made after is still told by the next add.
		if err := f.Truncate(changesPageSize); err != nil {
			return &changes{}, fmt.Errorf("sqlite: change counter: %w", err)
		}
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, changesPageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return &changes{}, fmt.Errorf("sqlite: change counter: %w", err)
	}
	return &changes{mem: mem, word: (*atomic.Uint64)(unsafe.Pointer(&mem[0])), state: (*atomic.Uint64)(unsafe.Pointer(&mem[8]))}, nil
}

// load returns the counter, and false when it is not available.
func (c *changes) load() (uint64, bool) {
	if c.word == nil {
		return 0, false
	}
	return c.word.Load(), true
}

// add tells every process sharing the counter that a change committed.
func (c *changes) add() {
	if c.word != nil {
		c.word.Add(1)
	}
}

// loadState returns the state counter, and false when it is not available.
func (c *changes) loadState() (uint64, bool) {
	if c.state == nil {
		return 0, false
	}
	return c.state.Load(), true
}

// addState tells every process sharing the counter that an app's state changed.
func (c *changes) addState() {
	if c.state != nil {
		c.state.Add(1)
	}
}
