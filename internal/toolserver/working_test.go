package toolserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/manifest"
)

// listed reports whether GET /v1/capabilities shows any of the tool server's tools to alice.
func (f *fixture) listed() bool {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+"/v1/capabilities", nil)
	req.Header.Set("Authorization", "Bearer "+f.key)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct{ Capabilities []ipc.Tool }
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		f.t.Fatal(err)
	}
	for _, c := range l.Capabilities {
		if c.App == "srv" || strings.HasPrefix(c.ID, "tool.mcp.srv.") {
			return true
		}
	}
	return false
}

// Issue 16: Working was hard-coded true, so a tool server that is down was listed to agents,
// and a call to it asked the person first and failed after. A server that is down or
// reconnecting is not working right now: its calls are refused at step 1, saying so, with
// no consent asked, and no list shows its tools; once it is back, they run again. The same
// under every revision, over stdio (the process ends) and over streamable HTTP (the next
// listing goes unanswered).
func TestServerThatIsDownIsNotWorking(t *testing.T) { eachVariant(t, testServerThatIsDownIsNotWorking) }

func testServerThatIsDownIsNotWorking(t *testing.T, v variant) {
	f := newFixtureAs(t, nil, true, v)
	wantOutput(t, "echo", f.approvedCall("echo", `{"text":"hi"}`), "echo", "echo: hi")
	if !f.listed() {
		t.Fatal("the tools are not listed while the server is up")
	}
	asked := func() int {
		cs, err := f.g.Store.ListConsents(f.ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	before := asked()

	f.setControl("down")
	f.eventually("the server is down", func() bool { return f.g.Broker.ProviderState(manifest.MustParseAppID("mcp.srv")) == broker.NotWorking })
	for _, tool := range []string{"echo", "greet"} {
		r := f.call(tool, `{"text":"hi","name":"ann"}`)
		wantCode(t, tool+" while the server is down", r, "APP_NOT_FOUND")
		if !strings.Contains(r.Body.ErrorMessage, "not working right now") {
			t.Errorf("%s: %q does not say the tool is not working", tool, r.Body.ErrorMessage)
		}
	}
	if n := asked(); n != before {
		t.Errorf("the person was asked %d times about tools of a server that is down", n-before)
	}
	if f.listed() {
		t.Error("GET /v1/capabilities lists the tools of a server that is down")
	}
	for _, u := range f.g.Broker.UsableBy(broker.Caller{ClientID: "cl_alice", Trust: manifest.AuthUser}) {
		if u.App.ID.String() == "mcp.srv" {
			t.Fatal("the broker lists the tools of a server that is down")
		}
	}

	f.setControl("")
	if f.restart != nil {
		f.restart()
	}
	f.eventually("the server is back", func() bool { return f.g.Broker.ProviderState(manifest.MustParseAppID("mcp.srv")) == broker.Working })
	wantOutput(t, "echo once the server is back", f.approvedCall("echo", `{"text":"again"}`), "echo", "echo: again")
	if !f.listed() {
		t.Error("the tools are not listed once the server is back")
	}
}

// ours counts the goroutines running capgate's own code, and returns their stacks.
func ours() (int, string) {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var mine []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "capgate/capgate/internal/") && !strings.Contains(g, "testing.tRunner") && !strings.Contains(g, "testing.(*M)") {
			n++
			mine = append(mine, g)
		}
	}
	return n, strings.Join(mine, "\n\n")
}

// Issue 16: the gateway's sweep, store watch and tool-server syncs, and the tool-server
// connections' own goroutines, were not waited for by Close. Close returns only once every
// goroutine the gateway started has ended, even one connecting to a tool server whose
// handshake hangs, and long before that handshake would end.
func TestCloseWaitsForItsGoroutines(t *testing.T) {
	ctx := context.Background()
	base, _ := ours()
	data, records := t.TempDir(), t.TempDir()
	control, slowControl := filepath.Join(t.TempDir(), "control"), filepath.Join(t.TempDir(), "control")
	for _, c := range []string{control, slowControl} {
		if err := os.WriteFile(c, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addServer(t, data, toolserver.Config{Name: "srv", Command: testServer, Args: []string{"-control", control}, Bind: []toolserver.Bind{{Path: filepath.Dir(control)}}})
	g, err := gateway.Open(ctx, gateway.Config{DataDir: data, Listen: "127.0.0.1:0", Socket: "-",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DelayedCommit: -1, ToolServerRelist: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- g.Serve(sctx, nil) }()
	if g.Broker.ProviderState(manifest.MustParseAppID("mcp.srv")) != broker.Working {
		t.Fatal("the tool server is not up")
	}

	// A second tool server is added while the gateway serves (as `capgate toolserver add`
	// does, on the store), then hangs in its handshake: the gateway's tool-server sync,
	// started by the sweep, is connecting to it when the gateway stops.
	addServer(t, data, toolserver.Config{Name: "slow", Command: testServer, Args: []string{"-control", slowControl, "-record", records},
		Bind: []toolserver.Bind{{Path: filepath.Dir(slowControl)}, {Path: records, RW: true}}})
	if err := os.WriteFile(slowControl, []byte("slow"), 0o600); err != nil {
		t.Fatal(err)
	}
	started := func() int { es, _ := os.ReadDir(records); return len(es) } // one record per process
	listedOnce := started()
	deadline := time.Now().Add(10 * time.Second)
	for started() == listedOnce {
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not start the second tool server")
		}
		time.Sleep(10 * time.Millisecond)
	}

	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if n, stacks := ours(); n > base {
		t.Fatalf("%d goroutines of capgate's still run after Close (%d before Open):\n%s", n, base, stacks)
	}
	if took := time.Since(closed); took > 30*time.Second {
		t.Errorf("Close took %v: it waited out the hanging handshake", took)
	}
	// What was recorded is there, and nothing writes the store any more.
	st, err := gateway.OpenStore(ctx, data, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.ListConsents(ctx, store.ConsentPending); err != nil {
		t.Fatal(err)
	}
}

// Manager.Close returns only once its connections' goroutines (each server's loop and the
// watch on its session) have ended.
func TestManagerCloseWaits(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	control := filepath.Join(t.TempDir(), "control")
	if err := os.WriteFile(control, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	addServer(t, data, toolserver.Config{Name: "srv", Command: testServer, Args: []string{"-control", control}, Bind: []toolserver.Bind{{Path: filepath.Dir(control)}}})
	st, reg := gatewaytest.OpenRegistry(t, filepath.Join(data, gateway.DBFile))
	count := func() (int, string) {
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		n, mine := 0, []string{}
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "internal/toolserver.(*server)") || strings.Contains(g, "internal/toolserver.(*Manager)") {
				n++
				mine = append(mine, g)
			}
		}
		return n, strings.Join(mine, "\n\n")
	}
	for range 10 { // a goroutine left running ends soon after: look often
		m := toolserver.NewManager(toolserver.Options{Env: toolserver.Env{Store: st, Registry: reg, DataDir: data, Sandbox: sandboxtest.Open(t)},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Relist: time.Hour})
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if _, up, ok := m.Provider("mcp.srv"); !ok || !up {
			t.Fatal("the tool server is not up")
		}
		if n, _ := count(); n == 0 {
			t.Fatal("no goroutine of the connection runs")
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		// A goroutine that has called Done may still be returning when Close's Wait does: it
		// gets a moment to be gone; one left running would still be there.
		n, stacks := count()
		for deadline := time.Now().Add(2 * time.Second); n != 0 && time.Now().Before(deadline); n, stacks = count() {
			time.Sleep(5 * time.Millisecond)
		}
		if n != 0 {
			t.Fatalf("%d goroutines of the manager run after Close:\n%s", n, stacks)
		}
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := m.Provider("mcp.srv"); ok {
			t.Fatal("a closed manager connected again")
		}
	}
}
