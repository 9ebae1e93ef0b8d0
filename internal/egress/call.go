package egress

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Call is one capability call in flight whose sandbox may use the proxy: every connection the
// proxy makes is attributed to exactly one Call, by the proxy credential Open returned for it.
type Call struct {
	// AppID, CapabilityID and CallID say who is calling, for the callbacks and the log.
	// CallID must be unique among the calls open at once.
	AppID        string
	CapabilityID string
	CallID       string
	// DryRun is set for a dry run, which may do nothing above read: every connection is
	// refused (a connection is a network effect), and reported through OnRefusal.
	DryRun bool
	// Destinations are the calling capability's network_intents. Nothing else is reachable;
	// none means no network at all.
	Destinations []HostPort
	// Credentials are the credential intents the call may hold handles for: the
	// capability's credential_intents that the grant allows.
	Credentials []string
	// Expires, when not zero, is when the call's credential, its handles and its
	// connections end even if done is never called; zero means they end at done only.
	Expires time.Time
}

// Connection is one connection the proxy made for a call: an observed side effect, which
// capgate holds against the capability's declaration whatever the provider reports.
type Connection struct {
	// Dest is the destination the client asked for, as declared.
	Dest HostPort
	// Addr is the checked address the proxy connected to.
	Addr netip.AddrPort
	// Tunnel is true for a CONNECT tunnel (the client's bytes, TLS or not, pass through),
	// false for a connection carrying forwarded plain HTTP requests.
	Tunnel bool
	// Intent is the credential intent whose secret the proxy sends on this connection (over
	// TLS it opened itself), or "".
	Intent string
	// At is when the connection was made.
	At time.Time
}

// Errors of Open.
var (
	// ErrInvalidCall: the Call has no CallID, or a destination that is the zero HostPort.
	ErrInvalidCall = errors.New("invalid egress call")
	// ErrDuplicateCall: a call with the same CallID is open already.
	ErrDuplicateCall = errors.New("a call with this id is open in the egress proxy already")
	// ErrClosed: the proxy is closed.
	ErrClosed = errors.New("the egress proxy is closed")
)

// callEntry is an open call's state in the proxy.
type callEntry struct {
	call  Call
	sum   [32]byte // SHA-256 of the proxy credential
	dests map[HostPort]bool
	creds map[string]bool
	timer *time.Timer

	mu         sync.Mutex
	ended      bool // done called, or the proxy closed
	expired    bool // Expires passed
	attempts   int  // connections started, against MaxConnectionsPerCall
	observed   []Connection
	conns      map[net.Conn]struct{} // live connections, client and upstream, closed at the end
	transports map[string]*http.Transport
	handles    [][32]byte // digests of the handles minted for the call
}

// handleEntry is a minted credential handle.
type handleEntry struct {
	call   *callEntry
	cred   *credential
	secret []byte
}

// Open registers call and returns its proxy credential (the password of the proxy URL, see
// ProxyAuthorization) and done, which ends the call: its credential and handles stop
// working at once, every connection it holds (tunnels, forwarded requests, pooled
// connections) is closed, and done returns every Connection the call made, which stay
// available from Observed until done is called. done may be called more than once; later
// calls return the same list.
func (p *Proxy) Open(call Call) (cred string, done func() []Connection, err error) {
	if call.CallID == "" {
		return "", nil, fmt.Errorf("%w: call_id: must not be empty", ErrInvalidCall)
	}
	e := &callEntry{call: call, dests: map[HostPort]bool{}, creds: map[string]bool{},
		conns: map[net.Conn]struct{}{}, transports: map[string]*http.Transport{}}
	e.call.Destinations = slices.Clone(call.Destinations)
	e.call.Credentials = slices.Clone(call.Credentials)
	for i, d := range call.Destinations {
		if !d.IsValid() {
			return "", nil, fmt.Errorf("%w: destinations[%d]: must be a valid host and port", ErrInvalidCall, i)
		}
		e.dests[d] = true
	}
	for _, c := range call.Credentials {
		e.creds[c] = true
	}
	cred, e.sum = newToken(credPrefix)

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return "", nil, ErrClosed
	}
	if p.byID[call.CallID] != nil {
		p.mu.Unlock()
		return "", nil, ErrDuplicateCall
	}
	p.calls[e.sum] = e
	p.byID[call.CallID] = e
	p.mu.Unlock()

	if !call.Expires.IsZero() {
		e.timer = time.AfterFunc(time.Until(call.Expires), func() { p.expire(e) })
	}
	var once sync.Once
	var final []Connection
	done = func() []Connection {
		once.Do(func() { final = p.end(e) })
		return slices.Clone(final)
	}
	return cred, done, nil
}

// Observed returns the connections the open call callID has made so far, or nil when no such
// call is open.
func (p *Proxy) Observed(callID string) []Connection {
	p.mu.Lock()
	e := p.byID[callID]
	p.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.observed)
}

// end removes e from the proxy and closes everything it holds; it returns what e observed.
func (p *Proxy) end(e *callEntry) []Connection {
	p.mu.Lock()
	if p.calls[e.sum] == e {
		delete(p.calls, e.sum)
	}
	if p.byID[e.call.CallID] == e {
		delete(p.byID, e.call.CallID)
	}
	e.mu.Lock()
	for _, h := range e.handles {
		delete(p.handles, h)
	}
	e.handles = nil
	e.mu.Unlock()
	p.mu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
	}
	e.shut(true)
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.observed)
}

// expire ends e's connections at its Expires; its credential then answers 407 "expired"
// until done removes it.
func (p *Proxy) expire(e *callEntry) {
	e.mu.Lock()
	e.expired = true
	e.mu.Unlock()
	e.shut(false)
}

// shut closes e's connections and transports; with ended it also refuses any new one.
func (e *callEntry) shut(ended bool) {
	e.mu.Lock()
	if ended {
		e.ended = true
	}
	conns := e.conns
	e.conns = map[net.Conn]struct{}{}
	ts := e.transports
	e.transports = map[string]*http.Transport{}
	e.mu.Unlock()
	for c := range conns {
		c.Close()
	}
	for _, t := range ts {
		t.CloseIdleConnections()
	}
}

// live reports whether e may still make connections.
func (e *callEntry) live() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.ended && !e.expired
}

// track adds c to e's live connections, or closes it and returns false when e is over.
func (e *callEntry) track(c net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended || e.expired {
		c.Close()
		return false
	}
	e.conns[c] = struct{}{}
	return true
}

// untrack removes c from e's live connections.
func (e *callEntry) untrack(c net.Conn) {
	e.mu.Lock()
	delete(e.conns, c)
	e.mu.Unlock()
}

// lookup returns the call whose proxy credential is cred, and whether it has expired.
func (p *Proxy) lookup(cred string) (*callEntry, bool) {
	sum := sha256.Sum256([]byte(cred))
	p.mu.Lock()
	e := p.calls[sum]
	p.mu.Unlock()
	if e == nil {
		return nil, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return nil, false
	}
	return e, e.expired || (!e.call.Expires.IsZero() && !time.Now().Before(e.call.Expires))
}

// Handle mints a credential handle for intent, bound to the open call call.CallID (whose app
// and capability must match call's): the call's capability must declare the intent
// (call.Credentials at Open), the host's catalog must have an entry for it, and its secret
// must be readable. The secret is read now and held by the proxy until the call ends (so a
// rotated file takes effect at the next handle). The handle is worthless in any other call,
// after the call, and for a destination that is not both the intent's and the call's.
// Errors are the Err values above, wrapped; none carries the secret or where it comes from
// (the proxy's log says that).
func (p *Proxy) Handle(call Call, intent string) (string, error) {
	p.mu.Lock()
	e := p.byID[call.CallID]
	p.mu.Unlock()
	if e == nil || e.call.AppID != call.AppID || e.call.CapabilityID != call.CapabilityID || !e.live() {
		return "", ErrCallNotOpen
	}
	if !e.creds[intent] {
		return "", ErrIntentNotDeclared
	}
	cr := p.catalog[intent]
	if cr == nil {
		return "", ErrIntentNotInCatalog
	}
	secret, err := readSecret(cr.Source)
	if err != nil {
		p.log.Warn("egress: a credential's secret cannot be read", "intent", intent, "call", call.CallID, "why", err.Error())
		return "", fmt.Errorf("%w: credential intent %s", ErrSecretUnavailable, intent)
	}
	h, sum := newToken(handlePrefix)
	p.mu.Lock()
	defer p.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended || e.expired {
		return "", ErrCallNotOpen
	}
	if len(e.handles) >= MaxHandlesPerCall {
		return "", ErrTooManyHandles
	}
	e.handles = append(e.handles, sum)
	p.handles[sum] = &handleEntry{call: e, cred: cr, secret: secret}
	return h, nil
}

// handle returns the handle entry for h, or nil.
func (p *Proxy) handle(h string) *handleEntry {
	if !wellFormedToken(h, handlePrefix) {
		return nil
	}
	sum := sha256.Sum256([]byte(h))
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.handles[sum]
}
