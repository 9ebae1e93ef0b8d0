package opsock

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/internal/toolserver"
)

// served is an operator socket on a real SQLite store, and its client.
type served struct {
	st   store.Store
	path string
	c    *Client
}

func serve(t *testing.T) served {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "capgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := audit.NewWriter(st, nil)
	t.Cleanup(func() { w.Close() })
	dir, err := os.MkdirTemp("", "opsock") // short: a unix socket's path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := Path(dir)
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- New(&operator.Service{Audit: w, Clients: st}, nil, nil).Serve(sctx, ln, time.Second) }()
	t.Cleanup(func() { stop(); <-done })
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return served{st: st, path: path, c: c}
}

var cli = operator.Actor{ID: "cli:test", Who: "the operator", Where: "from the command line"}

// A change through the socket is made by the gateway's service; its errors come back
// matching the same sentinels as the change made directly, with the service's message.
func TestChangesAndErrorsRoundTrip(t *testing.T) {
	s := serve(t)
	ctx := context.Background()
	key, c, err := s.c.AddClient(ctx, cli, operator.NewClient{Name: "agent", Trust: "user"})
	if err != nil || !strings.HasPrefix(key, "cgk_") || c.ID == "" || c.KeyHash != "" {
		t.Fatalf("add: %q %+v %v", key, c, err)
	}
	if got, err := s.st.GetClient(ctx, c.ID); err != nil || got.Name != "agent" || got.KeyHash != operator.KeyHash(key) {
		t.Fatalf("the store holds %+v %v", got, err)
	}
	if _, _, err := s.c.AddClient(ctx, cli, operator.NewClient{Name: "agent", Trust: "user"}); !errors.Is(err, store.ErrExists) {
		t.Errorf("a second agent: %v, want store.ErrExists", err)
	}
	if _, _, err := s.c.AddClient(ctx, cli, operator.NewClient{Name: "agent\u202e", Trust: "user"}); !errors.Is(err, operator.ErrInvalidClient) {
		t.Errorf("a bad name: %v, want ErrInvalidClient", err)
	}
	if _, err := s.c.ChangeClient(ctx, cli, "cl_nobody", operator.ClientDisable); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("no such client: %v, want store.ErrNotFound", err)
	}
	if _, err := s.c.ChangeClient(ctx, cli, "agent", operator.ClientDisable); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.st.GetClient(ctx, c.ID); !got.Disabled {
		t.Error("the client is not disabled")
	}
	// What this service was not given is said as such.
	if err := s.c.RemoveToolServer(ctx, cli, "files"); !errors.Is(err, operator.ErrUnavailable) {
		t.Errorf("no tool servers here: %v, want ErrUnavailable", err)
	}
	if _, err := s.c.AcceptTools(ctx, cli, "files", nil, true); !errors.Is(err, operator.ErrUnavailable) {
		t.Errorf("accept with no tool servers here: %v, want ErrUnavailable", err)
	}
	var nts error = toolserver.ErrNotToolServer
	if !errors.Is(toWire(nts).err(), toolserver.ErrNotToolServer) {
		t.Error("ErrNotToolServer does not survive the wire")
	}
}

// The socket answers only what it was built for: one JSON object of the change's own fields,
// of bounded size, with an actor whose fields are short printable ASCII, from a unix-socket
// peer.
func TestRequestsRefused(t *testing.T) {
	s := serve(t)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.path)
	}}}
	post := func(path, body string) int {
		resp, err := hc.Post("http://operator"+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	by := `"by":{"id":"cli:x","who":"the operator","where":"from the command line"}`
	for name, c := range map[string]struct {
		path, body string
		want       int
	}{
		"good":            {pathRevoke, `{` + by + `,"id":"tok_nope"}`, http.StatusUnprocessableEntity},
		"unknown field":   {pathRevoke, `{` + by + `,"id":"tok_nope","all":true}`, http.StatusBadRequest},
		"two objects":     {pathRevoke, `{` + by + `,"id":"a"}{"id":"b"}`, http.StatusBadRequest},
		"not JSON":        {pathRevoke, `id=tok`, http.StatusBadRequest},
		"no actor":        {pathRevoke, `{"id":"tok_nope"}`, http.StatusBadRequest},
		"control in who":  {pathRevoke, `{"by":{"id":"cli:x","who":"the\u001b[2Joperator","where":"here"},"id":"t"}`, http.StatusBadRequest},
		"non-ASCII where": {pathRevoke, `{"by":{"id":"cli:x","who":"op","where":"from the c\u043emmand line"},"id":"t"}`, http.StatusBadRequest},
		"long id":         {pathRevoke, `{"by":{"id":"` + strings.Repeat("a", maxActorBytes+1) + `","who":"op","where":"here"},"id":"t"}`, http.StatusBadRequest},
		"too large":       {pathRevoke, `{` + by + `,"id":"` + strings.Repeat("a", MaxRequestBytes) + `"}`, http.StatusBadRequest},
		"GET":             {"", "", http.StatusMethodNotAllowed},
		"unknown path":    {"/v1/operator/everything", `{}`, http.StatusNotFound},
	} {
		var got int
		if name == "GET" {
			resp, err := hc.Get("http://operator" + pathRevoke)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got = resp.StatusCode
		} else {
			got = post(c.path, c.body)
		}
		if got != c.want {
			t.Errorf("%s: HTTP %d, want %d", name, got, c.want)
		}
	}

	// Over TCP there is no peer uid to check: refused, whatever it asks.
	srv := httptest.NewServer(New(&operator.Service{Clients: s.st}, nil, nil).Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+pathAddClient, "application/json",
		bytes.NewReader([]byte(`{`+by+`,"name":"evil","trust":"privileged"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("over TCP: HTTP %d, want 403", resp.StatusCode)
	}
	if cs, _ := s.st.ListClients(context.Background()); len(cs) != 0 {
		t.Errorf("a client was added: %+v", cs)
	}
}

// The socket is its owner's alone (mode 0600); a live one is not taken over, one left by a
// crash is; with none answering, Dial says no gateway runs.
func TestListen(t *testing.T) {
	s := serve(t)
	fi, err := os.Stat(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("the socket is %v, want a socket of mode 0600", fi.Mode())
	}
	if _, err := Listen(s.path); !errors.Is(err, ErrInUse) {
		t.Errorf("listening on a live socket: %v, want ErrInUse", err)
	}

	dir, err := os.MkdirTemp("", "opsock")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	stale := Path(dir)
	if _, err := Dial(stale); !errors.Is(err, ErrNoGateway) {
		t.Errorf("no socket: %v, want ErrNoGateway", err)
	}
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, as after a crash
	if _, err := Dial(stale); !errors.Is(err, ErrNoGateway) {
		t.Errorf("a stale socket: %v, want ErrNoGateway", err)
	}
	ln, err = Listen(stale)
	if err != nil {
		t.Fatalf("a stale socket is not replaced: %v", err)
	}
	ln.Close()
}
