package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/capgate/capgate/internal/intent"
)

// These tests connect: to servers inside a network namespace of the test's own, through a
// proxy served on a unix socket, resolving names with a DNS server of the test's own.

// fixture is a world and a proxy whose policy allows the world's private prefixes.
type fixture struct {
	w    *world
	tp   *testProxy
	logs *lockedBuffer
	call Call
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	w := newWorld(t)
	ns := w.net.NS.String()
	w.dns.Static("good.example.com", ns)
	w.dns.Static("secure.example.com", ns)
	w.dns.Static("other.example.com", ns)
	w.dns.Static("six.example.com", w.net.NS6.String())
	w.dns.Set("rebind.example.com", func(qtype uint16, n int) []netip.Addr {
		if qtype != dns.TypeA {
			return nil
		}
		if n == 1 {
			return []netip.Addr{w.net.NS}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	})
	tp, logs := startProxy(t, Options{
		Resolver: DNSResolver{Server: w.dns.Addr()},
		Host:     intent.Host{AllowPrivate: []netip.Prefix{w.net.Prefix, w.net.V6}},
		RootCAs:  w.roots,
		Credentials: []Credential{
			{Intent: "example.api", Source: Source{File: secretFile(t)}, Destinations: []HostPort{MustParseHostPort("secure.example.com:443")}},
			{Intent: "other.api", Source: Source{Env: "CAPGATE_EGRESS_TEST_SECRET"}, Destinations: []HostPort{MustParseHostPort("other.example.com:443")}},
			{Intent: "far.api", Source: Source{File: secretFile(t)}, Destinations: []HostPort{MustParseHostPort("secure.example.com:8443")}},
		},
	})
	t.Setenv("CAPGATE_EGRESS_TEST_SECRET", "another-secret-987654321")
	call := Call{AppID: "com.example.app", CapabilityID: "net.com.example.app.fetch", CallID: "call-1",
		Destinations: []HostPort{
			MustParseHostPort("good.example.com:80"),
			MustParseHostPort("secure.example.com:443"),
			MustParseHostPort("other.example.com:443"),
			MustParseHostPort("rebind.example.com:80"),
			MustParseHostPort("six.example.com:80"),
			MustParseHostPort(ns + ":80"),
			MustParseHostPort("[" + w.net.NS6.String() + "]:80"),
		},
		Credentials: []string{"example.api", "other.api", "far.api"},
	}
	return &fixture{w: w, tp: tp, logs: logs, call: call}
}

func TestDeclaredDestinationsWork(t *testing.T) {
	f := newFixture(t)
	cred, done := f.tp.open(t, f.call)
	c := f.tp.client(cred, f.w.roots)
	ns := f.w.net.NS.String()
	for _, u := range []string{
		"http://good.example.com/",
		"http://GOOD.example.com./",
		"http://" + ns + "/",
		"http://six.example.com/",
		"http://[" + f.w.net.NS6.String() + "]/",
		"https://secure.example.com/", // CONNECT, the client's own TLS through the tunnel
	} {
		resp, body := get(t, c, u)
		if resp.StatusCode != 200 || !strings.HasPrefix(body, "hello ") {
			t.Errorf("%s: %d %q", u, resp.StatusCode, body)
		}
	}
	// What was connected is observed, with the address checked.
	obs := f.tp.Observed("call-1")
	want := map[string]bool{
		"good.example.com:80 " + ns + ":80":                                   false,
		ns + ":80 " + ns + ":80":                                              false,
		"six.example.com:80 [" + f.w.net.NS6.String() + "]:80":                false,
		"[" + f.w.net.NS6.String() + "]:80 [" + f.w.net.NS6.String() + "]:80": false,
		"secure.example.com:443 " + ns + ":443":                               false,
	}
	for _, o := range obs {
		k := o.Dest.String() + " " + o.Addr.String()
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected connection %s", k)
		}
		want[k] = true
		if o.Tunnel != (o.Dest.Port() == 443) || o.Intent != "" {
			t.Errorf("%s: tunnel %v intent %q", k, o.Tunnel, o.Intent)
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("connection %s not observed (%v)", k, obs)
		}
	}
	if n := len(f.tp.rec.connections()); n != len(obs) {
		t.Errorf("OnConnect told of %d connections, Observed has %d", n, len(obs))
	}
	// Upstream connections are pooled per call: the same request again makes none.
	get(t, c, "http://good.example.com/again")
	if n := len(f.tp.Observed("call-1")); n != len(obs) {
		t.Errorf("a second request made a new connection: %d, was %d", n, len(obs))
	}
	final := done()
	if len(final) != len(obs) {
		t.Errorf("done returned %d connections, want %d", len(final), len(obs))
	}
	if f.tp.Observed("call-1") != nil {
		t.Error("Observed after done")
	}
}

// TestPrivateNeedsThePolicy: the same destinations, with a policy that allows no private
// prefix, are refused at the address.
func TestPrivateNeedsThePolicy(t *testing.T) {
	w := newWorld(t)
	w.dns.Static("good.example.com", w.net.NS.String())
	tp, _ := startProxy(t, Options{Resolver: DNSResolver{Server: w.dns.Addr()}})
	call := Call{CallID: "c", Destinations: []HostPort{MustParseHostPort("good.example.com:80"), MustParseHostPort(w.net.NS.String() + ":80")}}
	cred, _ := tp.open(t, call)
	c := tp.client(cred, nil)
	for _, u := range []string{"http://good.example.com/", "http://" + w.net.NS.String() + "/"} {
		resp, body := get(t, c, u)
		if resp.StatusCode != 403 || !strings.Contains(body, "must not be a private address") {
			t.Errorf("%s: %d %q", u, resp.StatusCode, body)
		}
	}
	if w.hitCount(80, "/") != 0 {
		t.Error("the server was reached")
	}
}

func TestRebindingIsNeverAskedTwice(t *testing.T) {
	f := newFixture(t)
	cred, _ := f.tp.open(t, f.call)
	c := f.tp.client(cred, nil)
	resp, body := get(t, c, "http://rebind.example.com/")
	if resp.StatusCode != 200 || body != "hello 80" {
		t.Fatalf("first: %d %q", resp.StatusCode, body)
	}
	// One question for the connection: the proxy connected to the address it checked, and
	// did not ask again (the second answer is loopback).
	if n := f.w.dns.Queries("rebind.example.com", dns.TypeA); n != 1 {
		t.Fatalf("%d A questions for one connection, want 1", n)
	}
	// A new connection asks again, gets loopback, and is refused.
	resp, body = f.tp.raw(t, "CONNECT rebind.example.com:80 HTTP/1.1\r\nHost: x\r\n"+auth(cred)+"\r\n")
	if resp.StatusCode != 403 || !strings.Contains(body, "Loopback") {
		t.Fatalf("second connection: %d %q", resp.StatusCode, body)
	}
	if n := f.w.dns.Queries("rebind.example.com", dns.TypeA); n != 2 {
		t.Errorf("%d A questions for two connections, want 2", n)
	}
	if n := len(f.tp.Observed("call-1")); n != 1 {
		t.Errorf("%d connections observed, want 1", n)
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	f := newFixture(t)
	cred, _ := f.tp.open(t, f.call)
	c := f.tp.client(cred, nil)
	for _, tc := range []struct{ path, rule string }{
		{"/redirect-private", ruleUndeclared},
		{"/redirect-metadata", "cloud instance endpoint"},
	} {
		resp, _ := get(t, c, "http://good.example.com"+tc.path)
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusFound || loc == "" {
			t.Fatalf("%s: %d, Location %q: the client must see the redirect", tc.path, resp.StatusCode, loc)
		}
		// Following it is a new request, checked again.
		resp, body := get(t, c, loc)
		if resp.StatusCode != 403 || !strings.Contains(body, tc.rule) {
			t.Errorf("following %s: %d %q", tc.path, resp.StatusCode, body)
		}
	}
	if n := f.w.hitCount(81, "/private"); n != 0 {
		t.Errorf("the private target of the redirect was reached %d times", n)
	}
}

func TestDryRunConnectsNowhere(t *testing.T) {
	f := newFixture(t)
	dry := f.call
	dry.DryRun = true
	cred, _ := f.tp.open(t, dry)
	resp, body := get(t, f.tp.client(cred, nil), "http://good.example.com/")
	if resp.StatusCode != 403 || !strings.Contains(body, ruleDryRun) {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if got := f.tp.rec.lastRefusal(); !strings.Contains(got, ruleDryRun) {
		t.Errorf("OnRefusal: %q", got)
	}
	if len(f.tp.Observed("call-1")) != 0 || f.w.hitCount(80, "/") != 0 {
		t.Error("a dry run connected")
	}
}

func TestNoNetworkIntentNoNetwork(t *testing.T) {
	f := newFixture(t)
	cred, _ := f.tp.open(t, Call{CallID: "bare"})
	resp, body := get(t, f.tp.client(cred, nil), "http://good.example.com/")
	if resp.StatusCode != 403 || !strings.Contains(body, ruleUndeclared) {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

func TestCredentialInjected(t *testing.T) {
	f := newFixture(t)
	cred, done := f.tp.open(t, f.call)
	c := f.tp.client(cred, f.w.roots)
	h, err := f.tp.Handle(f.call, "example.api")
	if err != nil {
		t.Fatal(err)
	}
	// Without the handle, the provider reaches the destination with no secret.
	resp, _ := get(t, c, "https://secure.example.com/api")
	if resp.StatusCode != 401 {
		t.Fatalf("without a handle: %d", resp.StatusCode)
	}
	// With it, over plain HTTP to the proxy, the proxy opens TLS and sets the header. The
	// provider's own Authorization header is replaced, not kept beside it.
	for _, u := range []string{"http://secure.example.com/api", "http://secure.example.com:443/api"} {
		resp, body := get(t, c, u, HandleHeader, h, "Authorization", "Bearer forged-by-the-provider")
		if resp.StatusCode != 200 || body != "authorized" {
			t.Fatalf("%s: %d %q", u, resp.StatusCode, body)
		}
	}
	seen := f.w.lastHeaders(443, "/api")
	if seen.Get(HandleHeader) != "" || seen.Get("Proxy-Authorization") != "" || len(seen.Values("Authorization")) != 1 {
		t.Errorf("the destination saw %v", seen)
	}
	// An endpoint that echoes the header hands back no secret.
	resp, body := get(t, c, "http://secure.example.com/echo", HandleHeader, h)
	if resp.StatusCode != 200 || strings.Contains(body, testSecret) || strings.Contains(resp.Header.Get("X-Echo"), testSecret) {
		t.Fatalf("the echo carries the secret: %q %q", body, resp.Header.Get("X-Echo"))
	}
	if !strings.HasPrefix(body, "you sent: Bearer ***") || resp.ContentLength != int64(len(body)) {
		t.Errorf("the echo is not masked in place: %q (length %d)", body, resp.ContentLength)
	}
	var injected int
	for _, o := range f.tp.Observed("call-1") {
		if o.Intent == "example.api" {
			injected++
			if o.Tunnel || o.Dest.String() != "secure.example.com:443" {
				t.Errorf("the injected connection: %+v", o)
			}
		}
	}
	if injected != 1 {
		t.Errorf("%d connections carried the credential, want 1 (pooled)", injected)
	}

	// The handle is refused for a destination that is not the intent's, even a declared one.
	resp, body = get(t, c, "http://good.example.com:80/", HandleHeader, h)
	if resp.StatusCode != 403 || !strings.Contains(body, ruleHandleDest) {
		t.Errorf("another destination: %d %q", resp.StatusCode, body)
	}
	h2, err := f.tp.Handle(f.call, "other.api")
	if err != nil {
		t.Fatal(err)
	}
	resp, body = get(t, c, "http://secure.example.com/api", HandleHeader, h2)
	if resp.StatusCode != 403 || !strings.Contains(body, ruleHandleDest) {
		t.Errorf("another intent's destination: %d %q", resp.StatusCode, body)
	}
	// An intent destination the call does not declare is refused as undeclared.
	h3, err := f.tp.Handle(f.call, "far.api")
	if err != nil {
		t.Fatal(err)
	}
	resp, body = get(t, c, "http://secure.example.com:8443/api", HandleHeader, h3)
	if resp.StatusCode != 403 || !strings.Contains(body, ruleUndeclared) {
		t.Errorf("an undeclared intent destination: %d %q", resp.StatusCode, body)
	}

	// A handle of another call is refused, and so is one whose call has ended.
	other := f.call
	other.CallID = "call-2"
	cred2, _ := f.tp.open(t, other)
	c2 := f.tp.client(cred2, nil)
	resp, body = get(t, c2, "http://secure.example.com/api", HandleHeader, h)
	if resp.StatusCode != 403 || !strings.Contains(body, ruleHandleCall) {
		t.Errorf("another call's handle: %d %q", resp.StatusCode, body)
	}
	done()
	resp, body = get(t, c2, "http://secure.example.com/api", HandleHeader, h)
	if resp.StatusCode != 403 || !strings.Contains(body, ruleHandleUnknown) {
		t.Errorf("an ended call's handle: %d %q", resp.StatusCode, body)
	}
	if f.w.hitCount(443, "/api") != 3 {
		t.Errorf("the API was reached %d times, want 3", f.w.hitCount(443, "/api"))
	}

	// The secret is nowhere the proxy writes.
	for what, s := range map[string]string{"log": f.logs.String(), "refusals": strings.Join(f.tp.rec.refused, "\n")} {
		if strings.Contains(s, testSecret) || strings.Contains(s, "another-secret") || strings.Contains(s, h) {
			t.Errorf("the %s holds a secret or a handle", what)
		}
	}
}

// TestCertificateVerified: the proxy verifies the destination's certificate itself; with
// the system's roots the test CA is unknown, and the request fails without the secret sent.
func TestCertificateVerified(t *testing.T) {
	w := newWorld(t)
	w.dns.Static("secure.example.com", w.net.NS.String())
	tp, logs := startProxy(t, Options{
		Resolver:    DNSResolver{Server: w.dns.Addr()},
		Host:        intent.Host{AllowPrivate: []netip.Prefix{w.net.Prefix}},
		Credentials: []Credential{{Intent: "example.api", Source: Source{File: secretFile(t)}, Destinations: []HostPort{MustParseHostPort("secure.example.com:443")}}},
	})
	call := Call{CallID: "c", Destinations: []HostPort{MustParseHostPort("secure.example.com:443")}, Credentials: []string{"example.api"}}
	cred, _ := tp.open(t, call)
	h, err := tp.Handle(call, "example.api")
	if err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, tp.client(cred, nil), "http://secure.example.com/api", HandleHeader, h)
	if resp.StatusCode != 502 || !strings.Contains(body, "certificate did not verify") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if w.hitCount(443, "/api") != 0 || strings.Contains(logs.String(), testSecret) {
		t.Error("the secret went out or into the log")
	}
}

func TestDoneClosesTunnels(t *testing.T) {
	f := newFixture(t)
	cred, done := f.tp.open(t, f.call)
	conn, err := net.Dial("unix", f.tp.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT good.example.com:80 HTTP/1.1\r\nHost: x\r\n%s\r\n", auth(cred))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	// The tunnel works: a request through it.
	fmt.Fprint(conn, "GET /t HTTP/1.1\r\nHost: good.example.com\r\n\r\n")
	r2, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r2.Body)
	if string(b) != "hello 80" {
		t.Fatalf("through the tunnel: %q", b)
	}
	if got := done(); len(got) != 1 || !got[0].Tunnel {
		t.Errorf("done: %+v", got)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Error("the tunnel is still open after done")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("the tunnel was not closed by done")
	}
}

func TestExpiresEndsConnections(t *testing.T) {
	f := newFixture(t)
	call := f.call
	call.Expires = time.Now().Add(2 * time.Second)
	cred, _ := f.tp.open(t, call)
	c := f.tp.client(cred, nil)
	if resp, _ := get(t, c, "http://good.example.com/"); resp.StatusCode != 200 {
		t.Fatalf("before expiry: %d", resp.StatusCode)
	}
	time.Sleep(time.Until(call.Expires) + 100*time.Millisecond)
	resp, body := get(t, c, "http://good.example.com/")
	if resp.StatusCode != 407 || !strings.Contains(body, "expired") {
		t.Fatalf("after expiry: %d %q", resp.StatusCode, body)
	}
}

// TestConnectionLimit: a call that makes MaxConnectionsPerCall connections is refused the
// next one, and every one it made is observed.
func TestConnectionLimit(t *testing.T) {
	f := newFixture(t)
	cred, done := f.tp.open(t, f.call)
	c := f.tp.client(cred, nil)
	c.Transport.(*http.Transport).DisableKeepAlives = true
	for i := 0; i < MaxConnectionsPerCall; i++ {
		d := net.Dialer{}
		conn, err := d.DialContext(context.Background(), "unix", f.tp.sock)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "CONNECT good.example.com:80 HTTP/1.1\r\nHost: x\r\n%s\r\n", auth(cred))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("connection %d: %v %v", i, resp, err)
		}
		conn.Close()
	}
	resp, body := f.tp.raw(t, "CONNECT good.example.com:80 HTTP/1.1\r\nHost: x\r\n"+auth(cred)+"\r\n")
	if resp.StatusCode != 403 || !strings.Contains(body, ruleTooMany) {
		t.Fatalf("past the limit: %d %q", resp.StatusCode, body)
	}
	if n := len(done()); n != MaxConnectionsPerCall {
		t.Errorf("%d observed, want %d", n, MaxConnectionsPerCall)
	}
}
