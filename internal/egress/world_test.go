package egress

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/egress/egresstest"
)

// world is the real parts of the tests that connect: a network namespace with an HTTP server
// on ports 80 and 81 and an HTTPS server on 443 (a certificate of the test's own CA for
// secure.example.com and the namespace's address), on IPv4 and IPv6, and the test's DNS
// server naming them.
type world struct {
	net   *egresstest.Net
	dns   *egresstest.DNS
	roots *x509.CertPool

	mu   sync.Mutex
	hits map[string]int         // "port path" -> requests
	seen map[string]http.Header // "port path" -> the last request's headers
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{net: egresstest.New(t), dns: egresstest.NewDNS(t), hits: map[string]int{}, seen: map[string]http.Header{}}
	cert, roots := egresstest.Cert(t, []string{"secure.example.com", "good.example.com"}, []netip.Addr{w.net.NS})
	w.roots = roots
	for _, a := range []netip.Addr{w.net.NS, w.net.NS6} {
		for _, port := range []uint16{80, 81} {
			l := w.net.Listen(t, netip.AddrPortFrom(a, port))
			srv := &http.Server{Handler: w.handler(port), ReadHeaderTimeout: 10 * time.Second}
			go srv.Serve(l)
			t.Cleanup(func() { srv.Close() })
		}
	}
	l := w.net.Listen(t, netip.AddrPortFrom(w.net.NS, 443))
	srv := &http.Server{Handler: w.handler(443), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	return w
}

// handler answers: /redirect-private and /redirect-metadata with a 302, /echo with the
// request's Authorization header in the body and in X-Echo, /api with 200 only when the
// Authorization header carries the test's secret, anything else with "hello PORT".
func (w *world) handler(port uint16) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		key := fmt.Sprint(port, " ", r.URL.Path)
		w.mu.Lock()
		w.hits[key]++
		w.seen[key] = r.Header.Clone()
		w.mu.Unlock()
		switch r.URL.Path {
		case "/redirect-private":
			http.Redirect(rw, r, fmt.Sprintf("http://%s:81/private", w.net.NS), http.StatusFound)
		case "/redirect-metadata":
			http.Redirect(rw, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/echo":
			rw.Header().Set("X-Echo", r.Header.Get("Authorization"))
			fmt.Fprintf(rw, "you sent: %s.", r.Header.Get("Authorization"))
		case "/api":
			if r.Header.Get("Authorization") != "Bearer "+testSecret {
				http.Error(rw, "no credential", http.StatusUnauthorized)
				return
			}
			fmt.Fprint(rw, "authorized")
		default:
			fmt.Fprintf(rw, "hello %d", port)
		}
	})
}

func (w *world) hitCount(port uint16, path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hits[fmt.Sprint(port, " ", path)]
}

func (w *world) lastHeaders(port uint16, path string) http.Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[fmt.Sprint(port, " ", path)]
}
