package toolserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/egress"
	"github.com/capgate/capgate/internal/egress/egresstest"
	"github.com/capgate/capgate/internal/intent"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/internal/toolserver"
)

// A stdio tool server runs in a sandbox of its own: it reads the folders bound for it and
// nothing else of the host (capgate's data folder, another folder, /etc/shadow), writes only
// a read-write binding, and without a sandbox it is not started at all.
func TestStdioServerSandboxed(t *testing.T) {
	box := sandboxtest.Open(t)
	records, bound, secretDir := t.TempDir(), t.TempDir(), t.TempDir()
	boundFile, secret := filepath.Join(bound, "data"), filepath.Join(secretDir, "capgate.key")
	for _, f := range []string{boundFile, secret} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	probes := boundFile + "," + secret + ",/etc/shadow,/root/.ssh/id_ed25519"
	c := toolserver.Config{Name: "probe", Command: testServer, Args: []string{"-record", records, "-probe", probes},
		Bind: []toolserver.Bind{{Path: bound}, {Path: records, RW: true}}}
	ctx := context.Background()
	s, err := toolserver.Connect(ctx, c, box, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	files, _ := filepath.Glob(filepath.Join(records, "server-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d records, want 1", len(files))
	}
	raw, _ := os.ReadFile(files[0])
	var rec struct{ Read map[string]bool }
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{boundFile: true, secret: false, "/etc/shadow": false, "/root/.ssh/id_ed25519": false}
	for p, ok := range want {
		if got, seen := rec.Read[p]; !seen || got != ok {
			t.Errorf("the server could read %s: %v, want %v", p, got, ok)
		}
	}
	if _, err := toolserver.Connect(ctx, c, nil, "test", nil); !errors.Is(err, toolserver.ErrNoSandbox) {
		t.Errorf("a stdio server without a sandbox: %v", err)
	}
}

// A stdio server with --allow reaches those destinations through capgate's egress proxy, and
// nothing else: not another address of the same network, not a destination by IP literal.
func TestStdioServerNetwork(t *testing.T) {
	box := sandboxtest.Open(t)
	world := egresstest.New(t)
	for _, port := range []uint16{80, 81} {
		l := world.Listen(t, netip.AddrPortFrom(world.NS, port))
		go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	}
	e, err := providers.NewEgress(egress.Options{Resolver: oneName{"api.example.com", world.NS}, Host: intent.Host{AllowPrivate: []netip.Prefix{world.Prefix}}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Proxy.Close()
	records := t.TempDir()
	urls := []string{"http://api.example.com/", "http://api.example.com:81/", "http://" + world.NS.String() + "/"}
	c := toolserver.Config{Name: "net", Command: testServer, Args: []string{"-record", records, "-fetch", strings.Join(urls, ",")},
		Bind: []toolserver.Bind{{Path: records, RW: true}}, Allow: []string{"api.example.com:80"}}
	s, err := toolserver.ConnectWith(context.Background(), c, box, e, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	files, _ := filepath.Glob(filepath.Join(records, "server-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d records", len(files))
	}
	raw, _ := os.ReadFile(files[0])
	var rec struct{ Fetch map[string]string }
	_ = json.Unmarshal(raw, &rec)
	if rec.Fetch[urls[0]] != "200 hello" {
		t.Errorf("the allowed destination: %q", rec.Fetch[urls[0]])
	}
	for _, u := range urls[1:] {
		if strings.HasPrefix(rec.Fetch[u], "200") {
			t.Errorf("%s reached: %q", u, rec.Fetch[u])
		}
	}
	if !strings.Contains(c.Reach(), "api.example.com:80") {
		t.Errorf("Reach does not say where it goes: %s", c.Reach())
	}
}

type oneName struct {
	name string
	addr netip.Addr
}

func (o oneName) LookupNetIP(_ context.Context, host string) ([]netip.Addr, error) {
	if host == o.name {
		return []netip.Addr{o.addr}, nil
	}
	return nil, errors.New("no such host")
}
