package providers_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/egress"
	"github.com/capgate/capgate/internal/egress/egresstest"
	"github.com/capgate/capgate/internal/intent"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/providers/providertest"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/manifest"
)

// names is a resolver of the test's own: each name one address.
type names map[string]netip.Addr

func (n names) LookupNetIP(_ context.Context, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// A sandboxed provider reaches the network only through capgate's egress proxy, and only its
// capability's declared destination: an address it did not declare is refused (and told to
// the audit log's hook); a capability with no network intent that tries is failed and its
// provider stopped, as is a dry run that tries.
func TestProviderEgress(t *testing.T) {
	box := sandboxtest.Open(t)
	world := egresstest.New(t)
	l := world.Listen(t, netip.AddrPortFrom(world.NS, 80))
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from "+r.Host) }))

	// An HTTPS destination that says what Authorization it got: the secret, injected by the
	// proxy, must arrive there and nowhere else.
	const secret = "s3cret-token-of-the-host"
	t.Setenv("ECHO_TOKEN", secret)
	cert, roots := egresstest.Cert(t, []string{"echo.example.com"}, nil)
	tl := tls.NewListener(world.Listen(t, netip.AddrPortFrom(world.NS, 443)), &tls.Config{Certificates: []tls.Certificate{cert}})
	var gotAuth string
	var authMu sync.Mutex
	go http.Serve(tl, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authMu.Lock()
		gotAuth = r.Header.Get("Authorization")
		authMu.Unlock()
		io.WriteString(w, "got: "+r.Header.Get("Authorization"))
	}))

	var mu sync.Mutex
	var refusals []string
	e, err := providers.NewEgress(egress.Options{
		Resolver: names{"echo.example.com": world.NS},
		Host:     intent.Host{AllowPrivate: []netip.Prefix{world.Prefix}},
		RootCAs:  roots,
		Credentials: []egress.Credential{{Intent: "echo.api", Source: egress.Source{Env: "ECHO_TOKEN"},
			Destinations: []egress.HostPort{egress.MustParseHostPort("echo.example.com:443")}}},
		OnRefusal: func(call egress.Call, dest, rule string) {
			mu.Lock()
			refusals = append(refusals, call.CapabilityID+"|"+dest)
			mu.Unlock()
		},
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Proxy.Close()
	doc, err := manifest.Load(providertest.Manifest(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := testProvider(t)
	digest, _ := providers.ProgramDigest(bin)
	start := func() *providers.Process {
		p := providers.Start(providers.Config{Manifest: doc, Command: bin, Digest: digest, Sandbox: box, Egress: e,
			Env: providers.DefaultEnv, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		t.Cleanup(func() { p.Close() })
		if up, why := settled(t, p); !up {
			t.Fatalf("not up: %v", why)
		}
		return p
	}
	p := start()
	fetch := func(p *providers.Process, id, url string, dry bool) (map[string]any, error) {
		t.Helper()
		raw, _ := json.Marshal(map[string]string{"fetch": url})
		res, _, err := call(t, p, id, string(raw), dry)
		var out map[string]any
		_ = json.Unmarshal(res.Data, &out)
		return out, err
	}
	out, err := fetch(p, "tools.org.example.echo.echo", "http://echo.example.com/", false)
	if err != nil || out["fetched"] != "hello from echo.example.com" {
		t.Fatalf("the declared destination: %v %v", out, err)
	}
	// Not declared: its address as a literal, and another port of the declared name.
	for _, u := range []string{"http://" + world.NS.String() + "/", "http://echo.example.com:81/", "http://127.0.0.1:" + fmt.Sprint(80) + "/"} {
		out, err := fetch(p, "tools.org.example.echo.echo", u, false)
		if err != nil || !strings.HasPrefix(fmt.Sprint(out["fetched"]), "error:") {
			t.Errorf("%s: %v %v", u, out, err)
		}
	}
	mu.Lock()
	n := len(refusals)
	mu.Unlock()
	if n != 3 {
		t.Errorf("%d refusals told, want 3: %q", n, refusals)
	}
	// A credential handle: the proxy opens TLS upstream and injects the secret; the provider
	// never sees it, in its environment or in the answer, which the proxy masks.
	raw, _ := json.Marshal(map[string]string{"fetch": "http://echo.example.com/", "credential": "echo.api"})
	res, _, err := call(t, p, "tools.org.example.echo.echo", string(raw), false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Data), secret) {
		t.Errorf("the secret reached the provider: %s", res.Data)
	}
	var withCred map[string]any
	_ = json.Unmarshal(res.Data, &withCred)
	if h, _ := withCred["handle"].(string); h == "" || !strings.HasPrefix(fmt.Sprint(withCred["fetched"]), "got: Bearer ") {
		t.Errorf("the call with a credential: %v", withCred)
	}
	authMu.Lock()
	if gotAuth != "Bearer "+secret {
		t.Errorf("the destination got Authorization %q", gotAuth)
	}
	authMu.Unlock()
	mu.Lock()
	refusals = nil
	mu.Unlock()

	// A capability that declares no network intent tries: the call fails, the provider stops.
	if _, err := fetch(p, "tools.org.example.echo.save", "http://echo.example.com/", false); err == nil || !strings.Contains(err.Error(), "declares no network intent") {
		t.Errorf("save fetching: %v", err)
	}
	if up, why := p.State(); up || why == nil || !strings.Contains(why.Error(), "above its declaration") {
		t.Errorf("after an undeclared connection: up %v, why %v", up, why)
	}
	// A dry run that tries.
	q := start()
	if _, err := fetch(q, "tools.org.example.echo.echo", "http://echo.example.com/", true); err == nil || !strings.Contains(err.Error(), "dry run") {
		t.Errorf("a dry run fetching: %v", err)
	}
}
