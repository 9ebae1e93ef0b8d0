package sandbox_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
)

// connectProxy is a CONNECT proxy on a unix socket: it records each request's target and
// Proxy-Authorization, refuses the targets in refuse with 403, and answers the others' bytes
// with "TARGET: " and what it read.
type connectProxy struct {
	mu   sync.Mutex
	seen []string
}

func (p *connectProxy) start(t *testing.T, refuse ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				p.mu.Lock()
				p.seen = append(p.seen, req.Method+" "+req.Host+" "+req.Header.Get("Proxy-Authorization"))
				p.mu.Unlock()
				for _, r := range refuse {
					if req.Host == r {
						_, _ = io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
						return
					}
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
				b, _ := io.ReadAll(br)
				_, _ = io.WriteString(c, req.Host+": "+string(b))
			}()
		}
	}()
	return path
}

func (p *connectProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// A program that ignores the proxy variables reaches each declared name and port directly:
// the name resolves (Go's resolver and the C library's alike) to the sandbox's own loopback,
// and the connection reaches the proxy as a CONNECT to the declared name with the sandbox's
// credential. Another port of a declared name, an undeclared name, and a name the proxy
// refuses reach nothing.
func TestTunnels(t *testing.T) {
	s := sandboxtest.Open(t)
	p := &connectProxy{}
	sock := p.start(t, "refused.test:443")
	user := url.UserPassword("capgate", "cred-1")
	spec := func(args ...string) sandbox.Spec {
		sp := self(t, args...)
		sp.ProxySocket, sp.ProxyUser = sock, user
		sp.Env = append(sp.Env, "HTTP_PROXY=") // the program ignores it anyway
		sp.Tunnels = []sandbox.Tunnel{{Host: "API.Example.test", Port: 443}, {Host: "api.example.test", Port: 8080}, {Host: "refused.test", Port: 443}}
		return sp
	}
	if got := run(t, s, spec("direct", "api.example.test:443", "hello")); got != "answer: api.example.test:443: hello\n" {
		t.Errorf("a declared name and port: %q", got)
	}
	if got := run(t, s, spec("direct", "API.EXAMPLE.TEST:8080", "again")); got != "answer: api.example.test:8080: again\n" {
		t.Errorf("another declared port, in capitals: %q", got)
	}
	for _, r := range p.requests() {
		if !strings.HasPrefix(r, "CONNECT api.example.test:") || !strings.HasSuffix(r, " Basic Y2FwZ2F0ZTpjcmVkLTE=") {
			t.Errorf("the proxy saw %q", r)
		}
	}
	if got := run(t, s, spec("direct", "api.example.test:80", "x")); !strings.HasPrefix(got, "refused") {
		t.Errorf("an undeclared port of a declared name: %q", got)
	}
	if got := run(t, s, spec("direct", "other.test:443", "x")); !strings.HasPrefix(got, "refused") {
		t.Errorf("an undeclared name: %q", got)
	}
	if got := run(t, s, spec("direct", "refused.test:443", "x")); got != "answer: \n" {
		t.Errorf("a name the proxy refuses: %q", got)
	}
	// The C library's resolver reads the same /etc/hosts.
	sp := shell("getent hosts api.example.test refused.test; getent hosts other.test || echo none")
	sp.ProxySocket, sp.ProxyUser = sock, user
	sp.Tunnels = spec().Tunnels
	if got := run(t, s, sp); got != "127.77.0.1      api.example.test\n127.77.0.2      refused.test\nnone\n" {
		t.Errorf("getent: %q", got)
	}
	// A port below 1024 is listened on with a capability the init drops at once: no process
	// of the sandbox holds one (bwrap, pid 1, keeps its bounding set, and nothing in the
	// sandbox can act through bwrap), and none can make a user namespace.
	sp = shell("for p in /proc/[0-9]*; do [ $p = /proc/1 ] || cat $p/status; done | grep -E '^Cap(Prm|Eff|Bnd|Amb)' | sort -u; unshare -U true 2>/dev/null && echo made-userns; unshare -n true 2>/dev/null && echo made-netns; true")
	sp.ProxySocket, sp.ProxyUser = sock, user
	sp.Tunnels = spec().Tunnels
	if got := run(t, s, sp); got != "CapAmb:\t0000000000000000\nCapBnd:\t0000000000000000\nCapEff:\t0000000000000000\nCapPrm:\t0000000000000000\n" {
		t.Errorf("capabilities in a sandbox with a tunnel to port 443: %q", got)
	}
	// Without tunnels the sandbox knows localhost alone.
	if got := run(t, s, shell("getent hosts localhost api.example.test; echo $?")); !strings.Contains(got, "localhost") || strings.Contains(got, "api.example") {
		t.Errorf("getent without tunnels: %q", got)
	}
}

// A tunnel's name is a DNS name: every spelling of an address, a wildcard, localhost and
// names that are not DNS names are refused, naming the field; and tunnels need the proxy.
func TestTunnelsRefused(t *testing.T) {
	s := sandboxtest.Open(t)
	sock := (&connectProxy{}).start(t)
	user := url.UserPassword("capgate", "c")
	for _, host := range []string{"", "127.0.0.1", "127.1", "2130706433", "0x7f000001", "0x7f.1", "::1", "[::1]", "*.example.test", "localhost", "LOCALHOST.", "a.localhost",
		"exa mple.test", "example.test\nx", "-a.test", "a-.test", "a..test", strings.Repeat("a", 64) + ".test", "ex_ample.test", "éxample.test", "example.test:443"} {
		sp := shell("true")
		sp.ProxySocket, sp.ProxyUser = sock, user
		sp.Tunnels = []sandbox.Tunnel{{Host: host, Port: 443}}
		if _, err := s.Command(sp); err == nil || !strings.Contains(err.Error(), "Tunnels[0].Host") {
			t.Errorf("host %q: %v", host, err)
		}
	}
	for _, port := range []int{0, -1, 65536} {
		sp := shell("true")
		sp.ProxySocket, sp.ProxyUser = sock, user
		sp.Tunnels = []sandbox.Tunnel{{Host: "a.test", Port: port}}
		if _, err := s.Command(sp); err == nil || !strings.Contains(err.Error(), "Tunnels[0].Port") {
			t.Errorf("port %d: %v", port, err)
		}
	}
	sp := shell("true")
	sp.Tunnels = []sandbox.Tunnel{{Host: "a.test", Port: 443}}
	if _, err := s.Command(sp); err == nil || !strings.Contains(err.Error(), "ProxySocket") {
		t.Errorf("tunnels without a proxy: %v", err)
	}
	sp.ProxySocket, sp.ProxyUser = sock, user
	for i := range sandbox.MaxTunnels {
		sp.Tunnels = append(sp.Tunnels, sandbox.Tunnel{Host: "a.test", Port: 1000 + i})
	}
	if _, err := s.Command(sp); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("too many tunnels: %v", err)
	}
}

// Whatever passes as a tunnel's name is one line's word of /etc/hosts and no address: no
// space, newline, '#' or other byte outside a DNS name's, nothing an address parser reads.
func FuzzTunnelName(f *testing.F) {
	for _, s := range []string{"api.example.com", "a", "127.0.0.1", "0x7f.1", "::1", "a.b-c.d", "x.localhost", "a\nb", "a b", "1.2.3.4.5", "a.1e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !sandbox.TunnelName(s) {
			return
		}
		if _, err := netip.ParseAddr(strings.TrimSuffix(s, ".")); err == nil {
			t.Fatalf("%q is an address", s)
		}
		if strings.ContainsAny(s, " \t\r\n#*:[]%/\\\x00") {
			t.Fatalf("%q holds a byte a hosts line or an authority reads", s)
		}
		last := s[strings.LastIndexByte(strings.TrimSuffix(s, "."), '.')+1:]
		if strings.Trim(strings.TrimSuffix(last, "."), "0123456789") == "" {
			t.Fatalf("%q ends in a number", s)
		}
	})
}
