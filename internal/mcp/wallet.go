package mcp

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/token"
)

// held is a token a session holds: its wire form stays in the gateway.
type held struct {
	wire        string
	id          string
	grants      []string
	expires     time.Time
	maxUses     int64
	constrained bool // the token constrains params (paths, commands, a condition)
	added       int64
}

// wallet is the tokens of one MCP session. It is safe for concurrent use.
type wallet struct {
	mu   sync.Mutex
	toks []held
	seq  int64
}

// add keeps a token, dropping expired ones and, when full, the oldest.
func (w *wallet) add(h held, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.toks = slices.DeleteFunc(w.toks, func(t held) bool { return !now.Before(t.expires) })
	if len(w.toks) >= MaxSessionTokens {
		w.toks = w.toks[1:]
	}
	w.seq++
	h.added = w.seq
	w.toks = append(w.toks, h)
}

// drop forgets a token the gateway no longer accepts (used up, expired, revoked).
func (w *wallet) drop(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.toks = slices.DeleteFunc(w.toks, func(t held) bool { return t.id == id })
}

// covering returns the unexpired tokens whose grants cover perm, narrowest first: a grant
// naming the permission exactly before a wildcard, fewer grants before more, a use limit
// before none, constrained before unconstrained, the sooner expiry first.
func (w *wallet) covering(perm string, now time.Time) []held {
	w.mu.Lock()
	var out []held
	for _, t := range w.toks {
		if now.Before(t.expires) && token.Covers(t.grants, perm) {
			out = append(out, t)
		}
	}
	w.mu.Unlock()
	exact := func(t held) int {
		if slices.Contains(t.grants, perm) {
			return 0
		}
		return 1
	}
	limited := func(t held) int {
		if t.maxUses > 0 {
			return 0
		}
		return 1
	}
	constrained := func(t held) int {
		if t.constrained {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(out, func(a, b held) int {
		for _, d := range []int{exact(a) - exact(b), len(a.grants) - len(b.grants), limited(a) - limited(b), constrained(a) - constrained(b)} {
			if d != 0 {
				return d
			}
		}
		if c := a.expires.Compare(b.expires); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return out
}
