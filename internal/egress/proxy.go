package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/intent"
)

// Options configure a Proxy. A nil *Options, and the zero value of each field, is the safe
// choice: the system's DNS servers and certificate roots, no private destination, no
// credentials, no callbacks, no log.
type Options struct {
	// Resolver resolves destination names; nil means DNSResolver{} (the servers of
	// /etc/resolv.conf).
	Resolver Resolver

	// Host is the host's policy: its AllowPrivate prefixes are the private addresses a
	// connection may reach. Every other special-purpose address is refused whatever it
	// holds. Its AllowPrivateNames change nothing here: any address inside an allowed prefix
	// could be declared as a literal, so a name resolving into one reaches nothing more.
	Host intent.Host

	// Credentials is the host's credential catalog. New checks it and refuses a catalog
	// with any problem, naming each with its field path.
	Credentials []Credential

	// RootCAs verifies the certificates of destinations the proxy opens TLS to itself (for
	// a request with a credential handle); nil means the system's roots.
	RootCAs *x509.CertPool

	// OnRefusal, when not nil, is told of every request the proxy refuses for a call: the
	// call, the destination asked for (HostPort.String, or "" when the request named none
	// the proxy could read) and the rule broken, which never holds the client's input. It is
	// called before the client is answered, from the goroutine serving the request; it must
	// be safe for concurrent use and should be quick. A request with no valid proxy
	// credential belongs to no call and is not reported here (it is logged).
	OnRefusal func(call Call, dest string, rule string)

	// OnConnect, when not nil, is told of every connection the proxy makes, once connected
	// and before any byte passes: the call, the destination and the checked address it
	// connected to. The same connection is in Observed and done's list. Same contract as
	// OnRefusal.
	OnConnect func(call Call, dest HostPort, addr netip.AddrPort)

	// Logger receives the proxy's own log; nil discards it. No line holds a secret, a
	// handle, a proxy credential or a header value.
	Logger *slog.Logger
}

// Proxy is capgate's egress proxy. Create it with New, register calls with Open, and serve
// it on one listener per sandbox with Serve. Its methods are safe for concurrent use.
type Proxy struct {
	resolver  Resolver
	host      intent.Host
	catalog   map[string]*credential
	roots     *x509.CertPool
	onRefusal func(Call, string, string)
	onConnect func(Call, HostPort, netip.AddrPort)
	log       *slog.Logger
	srv       *http.Server

	mu      sync.Mutex
	closed  bool
	calls   map[[32]byte]*callEntry // by SHA-256 of the proxy credential
	byID    map[string]*callEntry
	handles map[[32]byte]*handleEntry // by SHA-256 of the handle
}

// New returns a Proxy configured by o (nil is the zero Options). It fails only when the
// credential catalog has problems, each named with its field path.
func New(o *Options) (*Proxy, error) {
	if o == nil {
		o = &Options{}
	}
	catalog, err := checkCatalog(o.Credentials)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	p := &Proxy{
		resolver: o.Resolver, host: o.Host, catalog: catalog, roots: o.RootCAs,
		onRefusal: o.OnRefusal, onConnect: o.OnConnect, log: o.Logger,
		calls: map[[32]byte]*callEntry{}, byID: map[string]*callEntry{}, handles: map[[32]byte]*handleEntry{},
	}
	if p.resolver == nil {
		p.resolver = DNSResolver{}
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	return p, nil
}

// Serve accepts the clients of one sandbox on l until Close, and returns nil then (or the
// error that stopped l). It may be called for several listeners at once; a call's
// credential works on any of them.
func (p *Proxy) Serve(l net.Listener) error {
	err := p.srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops every Serve, closes their listeners and every connection, and ends every open
// call as its done would. Later Opens fail with ErrClosed.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	var open []*callEntry
	for _, e := range p.calls {
		open = append(open, e)
	}
	p.mu.Unlock()
	for _, e := range open {
		p.end(e)
	}
	return p.srv.Close()
}

// ServeHTTP serves one client request: CONNECT host:port, or a plain HTTP request in
// absolute form (GET http://host/path). Every request carries its call's proxy credential.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Values("Proxy-Authorization")
	var e *callEntry
	expired := false
	if len(auth) == 1 {
		if cred, ok := parseProxyAuthorization(auth[0]); ok {
			e, expired = p.lookup(cred)
		}
	}
	switch {
	case len(auth) == 0:
		p.unauthorized(w, "the request carries no proxy credential: send Proxy-Authorization: Basic with user capgate and the call's credential as password")
		return
	case e == nil:
		p.unauthorized(w, "the proxy credential is unknown, malformed, or its call has ended")
		return
	case expired:
		p.unauthorized(w, "the proxy credential has expired with its call")
		return
	}
	switch {
	case r.Method == http.MethodConnect:
		p.connect(w, r, e)
	case r.URL.IsAbs():
		p.forward(w, r, e)
	default:
		p.refuse(w, e, HostPort{}, &refusal{rule: ruleForm, status: "http_request_error", code: http.StatusBadRequest})
	}
}

// The rules a refusal names. None holds any part of the request.
const (
	ruleForm          = "a request must be CONNECT host:port or a plain http:// request in absolute form"
	ruleScheme        = "a forwarded request must be http:// in absolute form; https goes through CONNECT"
	ruleUserinfo      = "the request URI must not carry userinfo"
	ruleUndeclared    = "the destination (host and port) must be one of the calling capability's network_intents"
	ruleDryRun        = "a dry run must not connect anywhere: a connection is a network effect, above read"
	ruleHandleTunnel  = "a credential handle must travel on a plain http:// request, never CONNECT: the proxy opens the TLS connection itself"
	ruleHandleMany    = "a request must carry at most one " + HandleHeader + " header"
	ruleHandleUnknown = "the credential handle must be one the proxy minted for a call that is still open"
	ruleHandleCall    = "the credential handle must belong to the call whose proxy credential the request carries"
	ruleHandleDest    = "the destination must be one of the credential intent's destinations"
)

var ruleTooMany = fmt.Sprintf("a call must make at most %d connection attempts", MaxConnectionsPerCall)

// refusal is a request the proxy refuses by rule.
type refusal struct {
	rule   string
	status string // the RFC 9209 Proxy-Status error type
	code   int    // 403 when zero
}

func (r *refusal) Error() string { return "refused: " + r.rule }

// upstreamError is a connection that failed for want of the destination, not by rule.
type upstreamError struct {
	msg    string // what the client is told
	status string // the RFC 9209 Proxy-Status error type
	err    error
}

func (u *upstreamError) Error() string { return u.msg + ": " + u.err.Error() }
func (u *upstreamError) Unwrap() error { return u.err }

var errCallEnded = &upstreamError{msg: "the call has ended", status: "proxy_internal_error", err: errors.New("call ended")}

// unauthorized answers 407.
func (p *Proxy) unauthorized(w http.ResponseWriter, why string) {
	p.log.Info("egress: a request without a valid proxy credential", "why", why)
	h := w.Header()
	h.Set("Proxy-Authenticate", `Basic realm="capgate egress"`)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Proxy-Status", "capgate; error=http_request_denied")
	w.WriteHeader(http.StatusProxyAuthRequired)
	io.WriteString(w, "capgate egress proxy: "+why+"\n")
}

// refuse tells OnRefusal and the log of a refusal and answers the client.
func (p *Proxy) refuse(w http.ResponseWriter, e *callEntry, dest HostPort, ref *refusal) {
	if p.onRefusal != nil {
		p.onRefusal(e.call, dest.String(), ref.rule)
	}
	p.log.Info("egress refused", "app", e.call.AppID, "capability", e.call.CapabilityID, "call", e.call.CallID,
		"dest", dest.String(), "rule", ref.rule)
	code := ref.code
	if code == 0 {
		code = http.StatusForbidden
	}
	what := "the request"
	if dest.IsValid() {
		what = "the connection to " + dest.String()
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Proxy-Status", "capgate; error="+ref.status)
	w.WriteHeader(code)
	io.WriteString(w, "capgate egress proxy: refused "+what+": "+ref.rule+"\n")
}

// fail answers a request whose connection could not be made: a refusal by rule, or a
// failure of the destination. The client is told a fixed sentence, never the error's text.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, e *callEntry, dest HostPort, err error) {
	var ref *refusal
	if errors.As(err, &ref) {
		p.refuse(w, e, dest, ref)
		return
	}
	msg, status, code := "the destination could not be reached", "destination_unavailable", http.StatusBadGateway
	var ue *upstreamError
	var cve *tls.CertificateVerificationError
	var ne net.Error
	switch {
	case errors.As(err, &ue):
		msg, status = ue.msg, ue.status
	case errors.As(err, &cve):
		msg, status = "the destination's TLS certificate did not verify", "tls_certificate_error"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		msg, status, code = "the destination did not answer in time", "connection_timeout", http.StatusGatewayTimeout
	}
	if r.Context().Err() != nil {
		return // the client has gone; nobody to answer
	}
	p.log.Warn("egress: a connection failed", "app", e.call.AppID, "capability", e.call.CapabilityID, "call", e.call.CallID,
		"dest", dest.String(), "error", err.Error())
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Proxy-Status", "capgate; error="+status)
	w.WriteHeader(code)
	io.WriteString(w, "capgate egress proxy: "+msg+"\n")
}

// admit checks dest for e before anything is resolved: the host's spelling and literal
// address by capgate's own rules, a dry run, and the capability's declaration.
func (p *Proxy) admit(e *callEntry, dest HostPort) *refusal {
	if rule := intent.HostRule(dest.Host(), p.host); rule != "" {
		return &refusal{rule: "the host " + rule, status: "destination_ip_prohibited"}
	}
	if e.call.DryRun {
		return &refusal{rule: ruleDryRun, status: "http_request_denied"}
	}
	if !e.dests[dest] {
		return &refusal{rule: ruleUndeclared, status: "http_request_denied"}
	}
	return nil
}

// dial makes one connection for e to dest: admitted, counted, resolved once if it is a
// name, every address classified, and a connection to a checked address, never to the name.
// intent is the credential intent the connection will carry, or "".
func (p *Proxy) dial(ctx context.Context, e *callEntry, dest HostPort, intentName string, tunnel bool) (net.Conn, error) {
	if ref := p.admit(e, dest); ref != nil {
		return nil, ref
	}
	if intentName != "" {
		if cr := p.catalog[intentName]; cr == nil || !cr.destinations[dest] {
			return nil, &refusal{rule: ruleHandleDest, status: "http_request_denied"}
		}
	}
	e.mu.Lock()
	switch {
	case e.ended || e.expired:
		e.mu.Unlock()
		return nil, errCallEnded
	case e.attempts >= MaxConnectionsPerCall:
		e.mu.Unlock()
		return nil, &refusal{rule: ruleTooMany, status: "http_request_denied"}
	}
	e.attempts++
	e.mu.Unlock()

	var addrs []netip.Addr
	named := false
	if a, ok := dest.addr(); ok {
		addrs = []netip.Addr{a}
	} else {
		named = true
		rctx, cancel := context.WithTimeout(ctx, ResolveTimeout)
		got, err := p.resolver.LookupNetIP(rctx, dest.Host())
		cancel()
		if err != nil {
			return nil, &upstreamError{msg: "the destination's name could not be resolved", status: "dns_error", err: err}
		}
		if len(got) == 0 {
			return nil, &upstreamError{msg: "the destination's name has no address", status: "dns_error", err: errors.New("empty answer")}
		}
		addrs = got
	}
	// Every address is classified, and one refused address refuses the whole answer: an
	// answer that mixes a good address with a special one comes from a zone that is
	// misconfigured or hostile (rebinding), and dialling only its good addresses would
	// still let whoever writes the zone choose, answer by answer, what the proxy tries.
	for _, a := range addrs {
		if rule := intent.AddrRule(a, p.host); rule != "" {
			where := "the address "
			if named {
				where = "an address the name resolves to "
			}
			return nil, &refusal{rule: where + rule, status: "destination_ip_prohibited"}
		}
	}
	var last error
	for i, a := range addrs {
		if i == MaxDialAttempts {
			break
		}
		ap := netip.AddrPortFrom(a, dest.port)
		d := net.Dialer{Timeout: DialTimeout}
		c, err := d.DialContext(ctx, "tcp", ap.String())
		if err != nil {
			last = err
			continue
		}
		tc := &trackedConn{Conn: c, e: e}
		if !e.track(tc) {
			return nil, errCallEnded
		}
		conn := Connection{Dest: dest, Addr: ap, Tunnel: tunnel, Intent: intentName, At: time.Now()}
		e.mu.Lock()
		e.observed = append(e.observed, conn)
		e.mu.Unlock()
		if p.onConnect != nil {
			p.onConnect(e.call, dest, ap)
		}
		p.log.Debug("egress connected", "app", e.call.AppID, "capability", e.call.CapabilityID, "call", e.call.CallID,
			"dest", dest.String(), "addr", ap.String(), "tunnel", tunnel, "credential", intentName)
		return tc, nil
	}
	return nil, &upstreamError{msg: "the destination could not be reached", status: "destination_unavailable", err: last}
}

// trackedConn is a connection of a call, closed when the call ends.
type trackedConn struct {
	net.Conn
	e    *callEntry
	once sync.Once
}

func (c *trackedConn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		c.e.untrack(c)
		err = c.Conn.Close()
	})
	return err
}

// CloseWrite half-closes the connection where the underlying one can.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// connect serves CONNECT host:port: a tunnel to a checked address.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request, e *callEntry) {
	dest, err := ParseHostPort(r.RequestURI)
	if err != nil {
		p.refuse(w, e, HostPort{}, &refusal{rule: "the CONNECT target is " + err.Error(), status: "http_request_error", code: http.StatusBadRequest})
		return
	}
	if len(r.Header.Values(HandleHeader)) > 0 {
		p.refuse(w, e, dest, &refusal{rule: ruleHandleTunnel, status: "http_request_denied"})
		return
	}
	up, err := p.dial(r.Context(), e, dest, "", true)
	if err != nil {
		p.fail(w, r, e, dest, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		p.fail(w, r, e, dest, errors.New("the connection cannot be taken over"))
		return
	}
	raw, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	client := &trackedConn{Conn: raw, e: e}
	if !e.track(client) {
		up.Close()
		return
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		up.Close()
		return
	}
	// Bytes the client sent after its CONNECT that the server already read go first.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			client.Close()
			up.Close()
			return
		}
	}
	splice(client, up)
}

// splice copies both ways until both sides are done, half-closing each side when the other
// has finished sending, and closes both at the end or at the first error.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		buf := copyBuffers.Get()
		defer copyBuffers.Put(buf)
		_, err := io.CopyBuffer(dst, src, buf)
		if err != nil {
			a.Close()
			b.Close()
			return
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}
	wg.Add(2)
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// forward serves a plain HTTP request in absolute form, with or without a credential handle.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, e *callEntry) {
	switch {
	case r.URL.Scheme != "http":
		p.refuse(w, e, HostPort{}, &refusal{rule: ruleScheme, status: "http_request_error", code: http.StatusBadRequest})
		return
	case r.URL.User != nil:
		p.refuse(w, e, HostPort{}, &refusal{rule: ruleUserinfo, status: "http_request_error", code: http.StatusBadRequest})
		return
	}
	handles := r.Header.Values(HandleHeader)
	defaultPort := 80
	if len(handles) > 0 {
		defaultPort = 443
	}
	dest, err := parseAuthority(r.URL.Host, defaultPort)
	if err != nil {
		p.refuse(w, e, HostPort{}, &refusal{rule: "the request URI's authority is " + err.Error(), status: "http_request_error", code: http.StatusBadRequest})
		return
	}
	if ref := p.admit(e, dest); ref != nil {
		p.refuse(w, e, dest, ref)
		return
	}
	var he *handleEntry
	switch {
	case len(handles) > 1:
		p.refuse(w, e, dest, &refusal{rule: ruleHandleMany, status: "http_request_error", code: http.StatusBadRequest})
		return
	case len(handles) == 1:
		he = p.handle(handles[0])
		switch {
		case he == nil:
			p.refuse(w, e, dest, &refusal{rule: ruleHandleUnknown, status: "http_request_denied"})
			return
		case he.call != e:
			p.refuse(w, e, dest, &refusal{rule: ruleHandleCall, status: "http_request_denied"})
			return
		case !he.cred.destinations[dest]:
			p.refuse(w, e, dest, &refusal{rule: ruleHandleDest, status: "http_request_denied"})
			return
		}
	}
	intentName, scheme := "", "http"
	if he != nil {
		intentName, scheme = he.cred.Intent, "https"
	}
	tr := p.transport(e, intentName)
	if tr == nil {
		p.fail(w, r, e, dest, errCallEnded)
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := pr.Out
			out.URL.Scheme = scheme
			out.URL.Host = urlHost(dest, scheme)
			out.Host = ""
			out.Header.Del(HandleHeader)
			out.Header.Del("Proxy-Authorization")
			if he != nil {
				// An identity encoding, so that an echo of the secret can be masked.
				out.Header.Del("Accept-Encoding")
				out.Header.Set(he.cred.headerName, he.cred.valuePrefix+string(he.secret)+he.cred.valueSuffix)
			}
		},
		Transport:     tr,
		FlushInterval: -1,
		BufferPool:    copyBuffers,
		ErrorLog:      slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.fail(w, r, e, dest, err)
		},
	}
	if he != nil {
		secret := he.secret
		rp.ModifyResponse = func(resp *http.Response) error {
			mask := maskByte(secret)
			for _, vs := range resp.Header {
				for i, v := range vs {
					vs[i] = maskString(v, secret, mask)
				}
			}
			resp.Body = newRedactor(resp.Body, secret)
			// Trailers arrive after the body and would pass unmasked: they are dropped.
			resp.Trailer = nil
			return nil
		}
	}
	rp.ServeHTTP(w, r)
}

// copyBuffers are ReverseProxy's copy buffers, shared by every forwarded request.
var copyBuffers = &bufferPool{sync.Pool{New: func() any { return make([]byte, tunnelBuffer) }}}

type bufferPool struct{ sync.Pool }

func (b *bufferPool) Get() []byte { return b.Pool.Get().([]byte) }
func (b *bufferPool) Put(x []byte) {
	//lint:ignore SA6002 boxing a slice header costs a few words; the buffer it keeps is 32 KiB
	b.Pool.Put(x)
}

// transport returns e's pooled transport for requests carrying intentName ("" for none),
// making it on first use, or nil when e is over. Each call, and each intent within it, has
// its own pool, so that a connection is never shared between calls nor between a request
// with a secret and one without.
func (p *Proxy) transport(e *callEntry, intentName string) *http.Transport {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended || e.expired {
		return nil
	}
	if t := e.transports[intentName]; t != nil {
		return t
	}
	t := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			dest, err := ParseHostPort(addr)
			if err != nil {
				return nil, err
			}
			return p.dial(ctx, e, dest, intentName, false)
		},
		TLSClientConfig:        &tls.Config{RootCAs: p.roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    TLSHandshakeTimeout,
		ResponseHeaderTimeout:  ResponseHeaderTimeout,
		IdleConnTimeout:        UpstreamIdleTimeout,
		MaxIdleConnsPerHost:    MaxIdlePerDestination,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		DisableCompression:     true,
	}
	e.transports[intentName] = t
	return t
}
