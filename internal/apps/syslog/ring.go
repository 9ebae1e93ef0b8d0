package syslog

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// The severities of an entry: the token document's words.
const (
	SeverityInfo  = "info"
	SeverityWarn  = "warn"
	SeverityError = "error"
	SeverityOK    = "ok"
)

// Entry is one line of the log.
type Entry struct {
	Timestamp int64  `json:"timestamp"` // Unix seconds
	Severity  string `json:"severity"`  // one of the Severity constants
	Message   string `json:"message"`   // at most MaxEntryBytes, as logged
}

// Ring keeps the last entries of the log, oldest first, forgetting the oldest when full. It is
// safe for concurrent use. A nil *Ring records nothing and holds nothing.
type Ring struct {
	mu   sync.RWMutex
	buf  []Entry // fixed length: the capacity
	next int     // where the next entry goes
	n    int     // how many entries it holds
	seq  uint64  // entries ever added, for the event ids of error entries
	id   string  // random: names this ring in those ids, so that no two runs share one

	onError func(id string, e Entry) // OnError's
}

// OnError sets fn to be told of every error entry from now on, with an id no other entry of
// this ring has (the app's event entry.error). fn is called outside the ring's lock, on the
// goroutine that logged, and must not block or log.
func (r *Ring) OnError(fn func(id string, e Entry)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.onError = fn
	r.mu.Unlock()
}

// NewRing returns an empty Ring holding at most capacity entries: DefaultCapacity when
// capacity is 0 or less, MaxCapacity when it is more.
func NewRing(capacity int) *Ring {
	switch {
	case capacity <= 0:
		capacity = DefaultCapacity
	case capacity > MaxCapacity:
		capacity = MaxCapacity
	}
	var b [8]byte
	rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	return &Ring{buf: make([]Entry, capacity), id: hex.EncodeToString(b[:])}
}

// Add records an entry at t (now when t is zero) with severity, one of the Severity
// constants (any other word is recorded as info), and message, cut to MaxEntryBytes.
func (r *Ring) Add(t time.Time, severity, message string) {
	switch severity {
	case SeverityInfo, SeverityWarn, SeverityError, SeverityOK:
	default:
		severity = SeverityInfo
	}
	r.add(t, severity, clip(message))
}

func (r *Ring) add(t time.Time, severity, message string) {
	if r == nil {
		return
	}
	if t.IsZero() {
		t = time.Now()
	}
	e := Entry{Timestamp: t.Unix(), Severity: severity, Message: message}
	r.mu.Lock()
	r.buf[r.next] = e
	r.next = (r.next + 1) % len(r.buf)
	if r.n < len(r.buf) {
		r.n++
	}
	r.seq++
	seq, fn := r.seq, r.onError
	r.mu.Unlock()
	if fn != nil && severity == SeverityError {
		fn(r.id+"-"+strconv.FormatUint(seq, 10), e)
	}
}

// Len returns how many entries the Ring holds.
func (r *Ring) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.n
}

// Entries returns the entries of severity ("all" or one of the Severity constants), oldest
// first: skipping the first offset of them, at most count. total is how many there are in
// all. A count of 0 or less returns none.
func (r *Ring) Entries(severity string, offset, count int) (entries []Entry, total int) {
	entries = []Entry{}
	if r == nil {
		return entries, 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	start := (r.next - r.n + len(r.buf)) % len(r.buf)
	for i := range r.n {
		e := r.buf[(start+i)%len(r.buf)]
		if severity != "all" && e.Severity != severity {
			continue
		}
		if total >= offset && len(entries) < count {
			entries = append(entries, e)
		}
		total++
	}
	return entries, total
}

// ellipsis marks an entry that was cut.
const ellipsis = "…"

// clip cuts s to MaxEntryBytes, ending it with an ellipsis when it was cut, without splitting
// a character.
func clip(s string) string {
	if len(s) <= MaxEntryBytes {
		return s
	}
	return cutRunes(s, MaxEntryBytes-len(ellipsis)) + ellipsis
}

// cutRunes returns the longest prefix of s of at most n bytes that does not end inside a
// character.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				s = s[:i]
			}
			break
		}
	}
	return s
}
