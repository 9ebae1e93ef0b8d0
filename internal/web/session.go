package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// sessions holds the one-time login links and the signed-in browsers, in memory: a restart
// of capgate signs everyone out, and prints a new link. Both are keyed by the SHA-256 of
// the secret, so that the maps hold no secret and a lookup's timing says nothing about it.
// It is safe for concurrent use.
type sessions struct {
	now func() time.Time

	mu     sync.Mutex
	links  map[[32]byte]time.Time // login link -> expiry
	active map[[32]byte]*session  // session id -> session
}

// session is one signed-in browser.
type session struct {
	csrf     string // the token every POST of this session carries
	lastSeen time.Time
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, links: map[[32]byte]time.Time{}, active: map[[32]byte]*session{}}
}

// randomToken returns tokenBytes random bytes, base64url without padding.
func randomToken() string {
	var b [tokenBytes]byte
	rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func key(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// newLink makes a login link secret that works once within LoginTTL.
func (s *sessions) newLink() string {
	t := randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpired(now)
	if len(s.links) >= MaxLoginLinks {
		var oldest [32]byte
		first := true
		for k, exp := range s.links {
			if first || exp.Before(s.links[oldest]) {
				oldest, first = k, false
			}
		}
		delete(s.links, oldest)
	}
	s.links[key(t)] = now.Add(LoginTTL)
	return t
}

// login spends the link secret t and, if it was unused and unexpired, opens a session and
// returns its id. A link works once, whatever the outcome.
func (s *sessions) login(t string) (string, bool) {
	now := s.now()
	k := key(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.links[k]
	delete(s.links, k)
	if !ok || !now.Before(exp) {
		return "", false
	}
	return s.open(now), true
}

// open starts a session, first forgetting the idle ones and, when MaxSessions are open, the
// one used least recently, and returns its id. s.mu is held.
func (s *sessions) open(now time.Time) string {
	s.dropExpired(now)
	if len(s.active) >= MaxSessions {
		var lru [32]byte
		first := true
		for k, se := range s.active {
			if first || se.lastSeen.Before(s.active[lru].lastSeen) {
				lru, first = k, false
			}
		}
		delete(s.active, lru)
	}
	id := randomToken()
	s.active[key(id)] = &session{csrf: randomToken(), lastSeen: now}
	return id
}

// openSession starts a session for a login link checked elsewhere (one kept in the store).
func (s *sessions) openSession() string {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open(now)
}

// get returns the CSRF token of the session id and marks it used; false when there is no
// such session or it was idle longer than SessionIdle.
func (s *sessions) get(id string) (string, bool) {
	if id == "" {
		return "", false
	}
	now := s.now()
	k := key(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.active[k]
	if !ok {
		return "", false
	}
	if now.Sub(se.lastSeen) >= SessionIdle {
		delete(s.active, k)
		return "", false
	}
	se.lastSeen = now
	return se.csrf, true
}

// dropExpired forgets expired links and idle sessions. s.mu is held.
func (s *sessions) dropExpired(now time.Time) {
	for k, exp := range s.links {
		if !now.Before(exp) {
			delete(s.links, k)
		}
	}
	for k, se := range s.active {
		if now.Sub(se.lastSeen) >= SessionIdle {
			delete(s.active, k)
		}
	}
}

// sameToken compares a CSRF token sent with the session's in constant time.
func sameToken(sent, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(want)) == 1
}
