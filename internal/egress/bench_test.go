package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/capgate/capgate/internal/egress/egresstest"
	"github.com/capgate/capgate/internal/intent"
)

// BenchmarkRequest measures a small GET through the proxy against the same GET made
// directly, to a server in a network namespace of the benchmark's own:
//
//   - direct and proxy: keep-alive clients, the way an HTTP client library is used; the proxy
//     pools its upstream connections per call, so this is the cost of a request: the client's
//     request parsed, authenticated, checked and forwarded.
//   - direct-new and proxy-connect-new: a new TCP connection for every request, the proxy's
//     by CONNECT: the cost of a connection, which for the proxy includes the one resolution
//     of the name (the benchmark's own DNS server, on the loopback) and the classification of
//     its addresses.
//
// It needs root (network namespaces), like the tests that connect.
func BenchmarkRequest(b *testing.B) {
	w := newWorld(b)
	w.dns.Static("good.example.com", w.net.NS.String())
	tp, _ := startProxy(b, Options{
		Resolver: DNSResolver{Server: w.dns.Addr()},
		Host:     intent.Host{AllowPrivate: []netip.Prefix{w.net.Prefix}},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)), // capgate's default level: Info
	})
	cred, _ := tp.open(b, Call{AppID: "com.example.app", CapabilityID: "net.com.example.app.fetch", CallID: "bench",
		Destinations: []HostPort{MustParseHostPort("good.example.com:80")}})
	direct := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, netip.AddrPortFrom(w.net.NS, 80).String())
		},
	}}
	proxied := tp.client(cred, nil)
	run := func(c *http.Client) func(*testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				resp, err := c.Get("http://good.example.com/")
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatal(resp.Status)
				}
			}
		}
	}
	b.Run("direct", run(direct))
	b.Run("proxy", run(proxied))

	once := func(b *testing.B, dial func() net.Conn, connect bool) {
		c := dial()
		defer c.Close()
		br := bufio.NewReader(c)
		if connect {
			fmt.Fprintf(c, "CONNECT good.example.com:80 HTTP/1.1\r\nHost: good.example.com:80\r\n%s\r\n", auth(cred))
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 {
				b.Fatal(resp, err)
			}
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: good.example.com\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.Run("direct-new", func(b *testing.B) {
		for b.Loop() {
			once(b, func() net.Conn {
				c, err := net.Dial("tcp", netip.AddrPortFrom(w.net.NS, 80).String())
				if err != nil {
					b.Fatal(err)
				}
				return c
			}, false)
		}
	})
	b.Run("proxy-connect-new", func(b *testing.B) {
		// Each CONNECT counts against the call's connection limit: a call per batch.
		n := 0
		for b.Loop() {
			if n%(MaxConnectionsPerCall-1) == 0 {
				c, _ := tp.open(b, Call{CallID: fmt.Sprint("bench-", n), Destinations: []HostPort{MustParseHostPort("good.example.com:80")}})
				cred = c
			}
			n++
			once(b, func() net.Conn {
				c, err := net.Dial("unix", tp.sock)
				if err != nil {
					b.Fatal(err)
				}
				return c
			}, true)
		}
	})
}

// BenchmarkResolve is the one resolution a new connection to a name costs: DNSResolver
// asking the benchmark's own DNS server on the loopback for A and AAAA. It needs no root.
func BenchmarkResolve(b *testing.B) {
	d := egresstest.NewDNS(b)
	d.Static("good.example.com", "10.200.0.2")
	r := DNSResolver{Server: d.Addr()}
	for b.Loop() {
		if _, err := r.LookupNetIP(context.Background(), "good.example.com"); err != nil {
			b.Fatal(err)
		}
	}
}
