package egress

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/capgate/capgate/internal/egress/egresstest"
	"github.com/capgate/capgate/internal/intent"
)

// These tests need no network namespace: every request here is refused, or answered 407,
// before the proxy connects anywhere. The DNS server is the test's own, on the loopback.

const testSecret = "s3cr3t-token-0123456789abcdef"

func secretFile(t testing.TB) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(f, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRefusedBeforeConnecting(t *testing.T) {
	d := egresstest.NewDNS(t)
	d.Static("meta.example.com", "169.254.169.254")
	d.Static("loop.example.com", "127.0.0.1")
	d.Static("mixed.example.com", "10.200.0.2", "127.0.0.1")
	d.Static("mapped.example.com", "::ffff:127.0.0.1")
	d.Static("six.example.com", "::1")
	d.Static("shared.example.com", "100.64.0.1")
	d.Static("bench.example.com", "198.18.0.1")
	d.Static("private.example.com", "10.9.9.9")
	d.Static("ula.example.com", "fd12::1")
	tp, logs := startProxy(t, Options{
		Resolver: DNSResolver{Server: d.Addr()},
		Host:     intent.Host{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}},
		Credentials: []Credential{{Intent: "example.api", Source: Source{File: secretFile(t)},
			Destinations: []HostPort{MustParseHostPort("secure.example.com:443")}}},
	})
	dests := []HostPort{}
	for _, n := range []string{"meta", "loop", "mixed", "mapped", "six", "shared", "bench", "private", "ula", "good"} {
		dests = append(dests, MustParseHostPort(n+".example.com:80"))
	}
	dests = append(dests, MustParseHostPort("secure.example.com:443"))
	call := Call{AppID: "com.example.app", CapabilityID: "net.com.example.app.fetch", CallID: "c1", Destinations: dests,
		Credentials: []string{"example.api"}}
	cred, _ := tp.open(t, call)

	for _, tc := range []struct {
		name    string
		req     string // the request line
		code    int
		rule    string // a fragment of the rule, in the body and in OnRefusal
		dest    string // what OnRefusal is told
		noQuery string // a name that must never have been resolved
	}{
		{"undeclared host", "GET http://undeclared.example.com/ HTTP/1.1", 403, ruleUndeclared, "undeclared.example.com:80", "undeclared.example.com"},
		{"undeclared host by CONNECT", "CONNECT undeclared.example.com:443 HTTP/1.1", 403, ruleUndeclared, "undeclared.example.com:443", "undeclared.example.com"},
		{"declared host on another port", "GET http://good.example.com:81/ HTTP/1.1", 403, ruleUndeclared, "good.example.com:81", "good.example.com"},
		{"declared host on another port by CONNECT", "CONNECT good.example.com:443 HTTP/1.1", 403, ruleUndeclared, "good.example.com:443", "good.example.com"},
		{"loopback as a decimal number", "CONNECT 2130706433:80 HTTP/1.1", 403, "Loopback", "2130706433:80", ""},
		{"loopback in hex and two parts", "CONNECT 0x7f.1:80 HTTP/1.1", 403, "Loopback", "0x7f.1:80", ""},
		{"loopback as a short form", "GET http://127.1/ HTTP/1.1", 403, "Loopback", "127.1:80", ""},
		{"loopback IPv4-mapped", "CONNECT [::ffff:127.0.0.1]:80 HTTP/1.1", 403, "embed an IPv4", "[::ffff:127.0.0.1]:80", ""},
		{"loopback IPv4-mapped, forwarded", "GET http://[::FFFF:7f00:1]/ HTTP/1.1", 403, "embed an IPv4", "[::ffff:127.0.0.1]:80", ""},
		{"loopback IPv6", "CONNECT [::1]:80 HTTP/1.1", 403, "Loopback", "[::1]:80", ""},
		{"localhost", "GET http://LOCALHOST./ HTTP/1.1", 403, "special-use", "localhost:80", "localhost"},
		{"metadata address", "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1", 403, "cloud instance endpoint", "169.254.169.254:80", ""},
		{"metadata address in decimal", "CONNECT 2852039166:80 HTTP/1.1", 403, "cloud instance endpoint", "2852039166:80", ""},
		{"metadata name", "GET http://metadata.google.internal/ HTTP/1.1", 403, "cloud instance endpoint", "metadata.google.internal:80", "metadata.google.internal"},
		{"name resolving to metadata", "GET http://meta.example.com/ HTTP/1.1", 403, "an address the name resolves to must not be a cloud instance endpoint", "meta.example.com:80", ""},
		{"name resolving to loopback", "CONNECT loop.example.com:80 HTTP/1.1", 403, "an address the name resolves to must not be a special-purpose address (IANA IPv4 Special-Purpose Address Registry: Loopback)", "loop.example.com:80", ""},
		{"one good and one special address", "GET http://mixed.example.com/ HTTP/1.1", 403, "Loopback", "mixed.example.com:80", ""},
		{"AAAA record mapping loopback", "GET http://mapped.example.com/ HTTP/1.1", 403, "Loopback", "mapped.example.com:80", ""},
		{"AAAA record of loopback", "GET http://six.example.com/ HTTP/1.1", 403, "Loopback", "six.example.com:80", ""},
		{"shared address space", "GET http://shared.example.com/ HTTP/1.1", 403, "Shared Address Space", "shared.example.com:80", ""},
		{"benchmarking range Go calls public", "GET http://bench.example.com/ HTTP/1.1", 403, "Benchmarking", "bench.example.com:80", ""},
		{"private outside the policy", "GET http://private.example.com/ HTTP/1.1", 403, "private", "private.example.com:80", ""},
		{"ULA outside the policy", "GET http://ula.example.com/ HTTP/1.1", 403, "private", "ula.example.com:80", ""},
		{"https in absolute form", "GET https://good.example.com/ HTTP/1.1", 400, ruleScheme, "", ""},
		{"userinfo", "GET http://user:pw@good.example.com/ HTTP/1.1", 400, ruleUserinfo, "", ""},
		{"origin form", "GET / HTTP/1.1", 400, ruleForm, "", ""},
		{"CONNECT without a port", "CONNECT good.example.com HTTP/1.1", 400, "port: is required", "", ""},
		{"CONNECT with a zero-padded port", "CONNECT good.example.com:080 HTTP/1.1", 400, "leading zeros", "", ""},
		{"CONNECT with a zone", "CONNECT [fe80::1%25eth0]:80 HTTP/1.1", 400, "zone", "", ""},
		{"a handle on CONNECT", "CONNECT secure.example.com:443 HTTP/1.1\r\n" + HandleHeader + ": cgh_x", 403, ruleHandleTunnel, "secure.example.com:443", ""},
		{"an unknown handle", "GET http://secure.example.com/ HTTP/1.1\r\n" + HandleHeader + ": cgh_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 403, ruleHandleUnknown, "secure.example.com:443", ""},
		{"two handles", "GET http://secure.example.com/ HTTP/1.1\r\n" + HandleHeader + ": a\r\n" + HandleHeader + ": b", 400, ruleHandleMany, "secure.example.com:443", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := tp.raw(t, tc.req+"\r\nHost: x\r\n"+auth(cred)+"\r\n")
			if resp.StatusCode != tc.code || !strings.Contains(body, tc.rule) {
				t.Fatalf("got %d %q, want %d naming %q", resp.StatusCode, body, tc.code, tc.rule)
			}
			if !strings.HasPrefix(resp.Header.Get("Proxy-Status"), "capgate; error=") {
				t.Errorf("Proxy-Status = %q", resp.Header.Get("Proxy-Status"))
			}
			want := "c1 " + tc.dest + " | "
			if got := tp.rec.lastRefusal(); !strings.HasPrefix(got, want) || !strings.Contains(got, tc.rule) {
				t.Errorf("OnRefusal got %q, want %q and the rule", got, want)
			}
			if tc.noQuery != "" {
				if n := d.Queries(tc.noQuery, dns.TypeA) + d.Queries(tc.noQuery, dns.TypeAAAA); n != 0 {
					t.Errorf("%s was resolved %d times; a refused destination is never resolved", tc.noQuery, n)
				}
			}
		})
	}
	if c := tp.rec.connections(); len(c) != 0 {
		t.Errorf("connections were made: %v", c)
	}
	if o := tp.Observed("c1"); len(o) != 0 {
		t.Errorf("Observed = %v", o)
	}
	// Untrusted input is never repeated at length: a long host is refused by its length.
	long := strings.Repeat("a", 300) + ".example.com"
	resp, body := tp.raw(t, "GET http://"+long+"/ HTTP/1.1\r\nHost: x\r\n"+auth(cred)+"\r\n")
	if resp.StatusCode != 400 || strings.Contains(body, "aaaa") || strings.Contains(tp.rec.lastRefusal(), "aaaa") {
		t.Errorf("a long host: %d %q, refusal %q", resp.StatusCode, body, tp.rec.lastRefusal())
	}
	if strings.Contains(logs.String(), testSecret) {
		t.Error("the secret is in the log")
	}
}

func TestProxyCredential(t *testing.T) {
	tp, logs := startProxy(t, Options{})
	call := Call{AppID: "com.example.app", CapabilityID: "net.com.example.app.fetch", CallID: "c1",
		Destinations: []HostPort{MustParseHostPort("good.example.com:80")}}
	cred, done := tp.open(t, call)
	expiring := call
	expiring.CallID, expiring.Expires = "c2", time.Now().Add(50*time.Millisecond)
	credExp, _ := tp.open(t, expiring)
	ended := call
	ended.CallID = "c3"
	credEnded, doneEnded := tp.open(t, ended)
	doneEnded()
	time.Sleep(100 * time.Millisecond)

	const req = "GET http://undeclared.example.com/ HTTP/1.1\r\nHost: x\r\n"
	for _, tc := range []struct {
		name, hdr, want string
	}{
		{"none", "", "carries no proxy credential"},
		{"wrong user", "Proxy-Authorization: Basic " + b64("root:"+cred) + "\r\n", "unknown, malformed"},
		{"bearer", "Proxy-Authorization: Bearer " + cred + "\r\n", "unknown, malformed"},
		{"guessed", auth("cgp_" + strings.Repeat("A", 43)), "unknown, malformed"},
		{"two", auth(cred) + auth(cred), "unknown, malformed"},
		{"ended", auth(credEnded), "unknown, malformed, or its call has ended"},
		{"expired", auth(credExp), "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := tp.raw(t, req+tc.hdr+"\r\n")
			if resp.StatusCode != 407 || !strings.Contains(body, tc.want) {
				t.Fatalf("got %d %q, want 407 %q", resp.StatusCode, body, tc.want)
			}
			if resp.Header.Get("Proxy-Authenticate") == "" {
				t.Error("no Proxy-Authenticate")
			}
		})
	}
	// The credential of a live call gets past authentication (and is refused by rule).
	resp, body := tp.raw(t, req+"Proxy-Authorization: bAsIc "+b64("capgate:"+cred)+"\r\n\r\n")
	if resp.StatusCode != 403 || !strings.Contains(body, ruleUndeclared) {
		t.Fatalf("a live call: %d %q", resp.StatusCode, body)
	}
	if len(tp.rec.refused) != 1 {
		t.Errorf("OnRefusal was told of 407s: %v", tp.rec.refused)
	}
	done()
	if resp, _ := tp.raw(t, req+auth(cred)+"\r\n"); resp.StatusCode != 407 {
		t.Errorf("after done: %d", resp.StatusCode)
	}
	for _, c := range []string{cred, credExp, credEnded} {
		if strings.Contains(logs.String(), c) {
			t.Error("a proxy credential is in the log")
		}
	}
}

func TestOpen(t *testing.T) {
	tp, _ := startProxy(t, Options{})
	if _, _, err := tp.Open(Call{}); !errors.Is(err, ErrInvalidCall) {
		t.Errorf("no call id: %v", err)
	}
	if _, _, err := tp.Open(Call{CallID: "x", Destinations: []HostPort{{}}}); !errors.Is(err, ErrInvalidCall) {
		t.Errorf("zero destination: %v", err)
	}
	_, done, err := tp.Open(Call{CallID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tp.Open(Call{CallID: "x"}); !errors.Is(err, ErrDuplicateCall) {
		t.Errorf("duplicate: %v", err)
	}
	done()
	done()
	if _, d2, err := tp.Open(Call{CallID: "x"}); err != nil {
		t.Errorf("reopening after done: %v", err)
	} else {
		d2()
	}
	tp.Close()
	if _, _, err := tp.Open(Call{CallID: "y"}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestHandleErrors(t *testing.T) {
	t.Setenv("CAPGATE_EGRESS_TEST_UNSET", "")
	os.Unsetenv("CAPGATE_EGRESS_TEST_UNSET")
	open := filepath.Join(t.TempDir(), "open")
	os.WriteFile(open, []byte(testSecret), 0o644)
	tp, logs := startProxy(t, Options{Credentials: []Credential{
		{Intent: "a.api", Source: Source{File: secretFile(t)}, Destinations: []HostPort{MustParseHostPort("a.example.com:443")}},
		{Intent: "unset.api", Source: Source{Env: "CAPGATE_EGRESS_TEST_UNSET"}, Destinations: []HostPort{MustParseHostPort("a.example.com:443")}},
		{Intent: "open.api", Source: Source{File: open}, Destinations: []HostPort{MustParseHostPort("a.example.com:443")}},
	}})
	call := Call{AppID: "com.example.app", CapabilityID: "net.com.example.app.fetch", CallID: "c1",
		Credentials: []string{"a.api", "unset.api", "open.api", "nocatalog.api"}}
	tp.open(t, call)
	for _, tc := range []struct {
		name   string
		call   Call
		intent string
		want   error
	}{
		{"not declared", call, "b.api", ErrIntentNotDeclared},
		{"not in the catalog", call, "nocatalog.api", ErrIntentNotInCatalog},
		{"env unset", call, "unset.api", ErrSecretUnavailable},
		{"file readable by others", call, "open.api", ErrSecretUnavailable},
		{"another call id", Call{AppID: call.AppID, CapabilityID: call.CapabilityID, CallID: "c9"}, "a.api", ErrCallNotOpen},
		{"another capability", Call{AppID: call.AppID, CapabilityID: "net.com.example.app.other", CallID: "c1"}, "a.api", ErrCallNotOpen},
	} {
		if _, err := tp.Handle(tc.call, tc.intent); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	for i := 0; i < MaxHandlesPerCall; i++ {
		if _, err := tp.Handle(call, "a.api"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tp.Handle(call, "a.api"); !errors.Is(err, ErrTooManyHandles) {
		t.Errorf("past the limit: %v", err)
	}
	if strings.Contains(logs.String(), testSecret) {
		t.Error("the secret is in the log")
	}
	if !strings.Contains(logs.String(), "readable or writable by group or others") {
		t.Errorf("the log does not say why a secret is unavailable: %s", logs.String())
	}
}

func TestCatalog(t *testing.T) {
	d := []HostPort{MustParseHostPort("a.example.com:443")}
	_, err := New(&Options{Credentials: []Credential{
		{Intent: "Bad", Source: Source{Env: "X"}, Destinations: d},
		{Intent: "a.api", Source: Source{Env: "X", File: "/x"}, Destinations: d},
		{Intent: "b.api", Source: Source{File: "rel/path"}, Destinations: d},
		{Intent: "c.api", Source: Source{Env: "1X"}, Destinations: d},
		{Intent: "d.api", Source: Source{Env: "X"}},
		{Intent: "e.api", Source: Source{Env: "X"}, Destinations: []HostPort{{}}},
		{Intent: "f.api", Source: Source{Env: "X"}, Destinations: d, Header: "Authorization: Bearer"},
		{Intent: "g.api", Source: Source{Env: "X"}, Destinations: d, Header: "Host: {secret}"},
		{Intent: "g.api", Source: Source{Env: "X"}, Destinations: d},
	}})
	for _, want := range []string{
		"credentials[0].intent: must match",
		"credentials[1].source: must set exactly one",
		"credentials[2].source.file: must be an absolute clean path",
		"credentials[3].source.env: must be an environment variable name",
		"credentials[4].destinations: must name at least one",
		"credentials[5].destinations[0]: must be a valid",
		"credentials[6].header: must hold {secret} exactly once",
		"credentials[7].header: must not name a header",
		"credentials[8].intent: must not repeat",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if _, err := New(&Options{Credentials: []Credential{{Intent: "a.api", Source: Source{Env: "X"}, Destinations: d, Header: "X-Api-Key: key={secret};v=1"}}}); err != nil {
		t.Errorf("a good catalog: %v", err)
	}
}
