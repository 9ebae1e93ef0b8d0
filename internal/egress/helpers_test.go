package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// refusals records what OnRefusal and OnConnect are told.
type recorder struct {
	mu       sync.Mutex
	refused  []string // "callID dest | rule"
	connects []string // "callID dest addr"
}

func (r *recorder) onRefusal(c Call, dest, rule string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = append(r.refused, c.CallID+" "+dest+" | "+rule)
}

func (r *recorder) onConnect(c Call, dest HostPort, addr netip.AddrPort) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.connects = append(r.connects, c.CallID+" "+dest.String()+" "+addr.String())
}

func (r *recorder) lastRefusal() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.refused) == 0 {
		return ""
	}
	return r.refused[len(r.refused)-1]
}

func (r *recorder) connections() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.connects...)
}

// testProxy is a Proxy served on a real unix socket, as capgate serves it to a sandbox.
type testProxy struct {
	*Proxy
	sock string
	rec  *recorder
}

// lockedBuffer is a bytes.Buffer safe for the proxy's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.String()
}

func startProxy(t testing.TB, o Options) (*testProxy, *lockedBuffer) {
	t.Helper()
	rec := &recorder{}
	o.OnRefusal, o.OnConnect = rec.onRefusal, rec.onConnect
	logBuf := &lockedBuffer{}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	p, err := New(&o)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "egress.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testProxy{Proxy: p, sock: sock, rec: rec}, logBuf
}

// open opens c and ends it at the end of the test.
func (tp *testProxy) open(t testing.TB, c Call) (string, func() []Connection) {
	t.Helper()
	cred, done, err := tp.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { done() })
	return cred, done
}

// client returns an HTTP client that uses the proxy with cred, as a sandboxed program with
// HTTP_PROXY=http://capgate:CRED@proxy would: the shim's TCP port is stood in for by a
// dialer to the unix socket. It never follows redirects.
func (tp *testProxy) client(cred string, roots *x509.CertPool) *http.Client {
	u := &url.URL{Scheme: "http", User: url.UserPassword(ProxyUser, cred), Host: "proxy.invalid:3128"}
	return &http.Client{
		Transport: &http.Transport{
			Proxy: http.ProxyURL(u),
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", tp.sock)
			},
			TLSClientConfig: &tls.Config{RootCAs: roots},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
}

// raw sends text to the proxy as is and reads one response.
func (tp *testProxy) raw(t testing.TB, text string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("unix", tp.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, text); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the proxy's answer: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp, string(body)
}

// auth is the Proxy-Authorization header line for cred.
func auth(cred string) string {
	return "Proxy-Authorization: " + ProxyAuthorization(cred) + "\r\n"
}

func get(t testing.TB, c *http.Client, u string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
