package mcp

import (
	"sync"
	"time"

	"github.com/capgate/capgate/internal/broker"
)

// warmSessions keeps the server built for a client's 2026-07-28 requests between them, one
// per client and gateway URL (the URL its approval links name). Building one registers every
// tool the client may use with the SDK, which resolves each tool's schemas: milliseconds,
// where the call itself takes far less. A kept server is brought up to date before each
// request (session.sync: the tools its client may use now, with a tool whose definition
// changed registered again), so a request sees what a server built for it would; each
// request's caller is still the one authenticated on that request. It is safe for
// concurrent use; the zero value is empty.
type warmSessions struct {
	mu sync.Mutex
	m  map[warmKey]*warmSession
}

type warmKey struct{ client, base string }

type warmSession struct {
	s    *session
	used time.Time
}

// get returns the kept session of caller's client at base, brought up to date, or a new one,
// kept.
func (w *warmSessions) get(h *Handler, caller broker.Caller, base string) *session {
	k := warmKey{caller.ClientID, base}
	now := time.Now()
	w.mu.Lock()
	ws, ok := w.m[k]
	if ok && now.Sub(ws.used) < WarmIdle {
		ws.used = now
		w.mu.Unlock()
		ws.s.sync(caller)
		return ws.s
	}
	w.mu.Unlock()
	s := newSession(h, caller, base)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[warmKey]*warmSession{}
	}
	w.dropIdle(now)
	if len(w.m) >= MaxWarmSessions {
		var lru warmKey
		first := true
		for key, e := range w.m {
			if first || e.used.Before(w.m[lru].used) {
				lru, first = key, false
			}
		}
		delete(w.m, lru)
	}
	w.m[k] = &warmSession{s: s, used: now}
	return s
}

// dropIdle forgets the sessions not used for WarmIdle. w.mu is held.
func (w *warmSessions) dropIdle(now time.Time) {
	for k, e := range w.m {
		if now.Sub(e.used) >= WarmIdle {
			delete(w.m, k)
		}
	}
}
