package gateway_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/keys"
)

// The workspace lies outside the data folder by default, and one given inside it, or holding
// it, through a link or not, is refused: the apps that work there would reach the keys.
func TestWorkspaceNeverOverlapsTheDataFolder(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	open := func(ws string) (*gateway.Gateway, error) {
		return gateway.Open(context.Background(), gateway.Config{DataDir: data, Workspace: ws, Listen: "-", Socket: "-",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	g, err := open("")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(base, "data-workspace"))
	if g.Workspace() != want {
		t.Errorf("default workspace %s, want %s", g.Workspace(), want)
	}
	g.Close()
	inner := filepath.Join(data, "ws")
	link := filepath.Join(base, "link")
	if err := os.MkdirAll(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(inner, link); err != nil {
		t.Fatal(err)
	}
	for name, ws := range map[string]string{"the data folder": data, "inside it": inner, "a link into it": link, "its parent": base, "/": "/"} {
		g, err := open(ws)
		if err == nil {
			g.Close()
			t.Errorf("a workspace at %s was accepted", name)
			continue
		}
		if !errors.Is(err, gateway.ErrWorkspaceOverlaps) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The terminal is not a way out: with a token for app.terminal.execute, an agent's command
// cannot read the gateway's signing key or store, nor reach the data folder at all (so it
// cannot run capgate approvals approve --data on its own requests).
func TestTerminalCannotReachTheGateway(t *testing.T) {
	sandboxtest.Open(t)
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	tok := e.token(alice, []string{"app.terminal.execute"}, nil)
	key, err := os.ReadFile(filepath.Join(e.dataDir, gateway.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	data := e.dataDir
	for _, c := range []string{
		"cat " + data + "/capgate.key", "base64 " + data + "/capgate.key", "ls -a " + data,
		"cat " + data + "/apps.key", "head -c 100 " + data + "/capgate.db", "ls -a ..", "cat ../" + filepath.Base(data) + "/capgate.key",
	} {
		r := e.callApp(alice, "terminal", "execute_command", `{"command":`+jsonString(c)+`}`, tok)
		wantOK(t, c, r)
		var res struct{ Stdout string }
		if err := json.Unmarshal(r.Body.Result, &res); err != nil {
			t.Fatal(err)
		}
		out := res.Stdout
		if strings.Contains(out, "capgate.key") || strings.Contains(out, "capgate.db") || strings.Contains(out, "SQLite") {
			t.Errorf("%s: %s", c, out)
		}
		for _, enc := range []string{string(key), b64(key)} {
			if len(enc) > 8 && strings.Contains(out, enc[:8]) {
				t.Errorf("%s: the key leaked: %s", c, out)
			}
		}
	}
}

// A token re-signed with a leaked gateway key under an issued token's id (same id, wider
// grants) is refused at use, and cannot be a parent: the store holds the hash of the token
// issued under the id.
func TestResignedTokenRefused(t *testing.T) {
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	issued := e.token(alice, []string{"app.notes.read"}, nil)
	tok, err := token.Parse(issued)
	if err != nil {
		t.Fatal(err)
	}
	leaked, err := keys.LoadPrivateKey(filepath.Join(e.dataDir, gateway.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	wider := tok
	wider.Capabilities = []string{"app.notes.*"}
	wire, err := token.Sign(wider, leaked)
	if err != nil {
		t.Fatal(err)
	}
	e.secret(wire)
	wantOK(t, "the issued token", e.call(alice, "read", `{"id":"1"}`, issued))
	wantCode(t, "the re-signed token", e.call(alice, "write", `{"id":"1","text":"x"}`, wire), "INVALID_TOKEN")
	wantCode(t, "the re-signed token on a read", e.call(alice, "read", `{"id":"1"}`, wire), "INVALID_TOKEN")
	if status, ans := e.derive(alice, map[string]any{"token": wire, "capabilities": []string{"app.notes.write"}}); status != http.StatusForbidden || ans.ErrorCode != "INVALID_TOKEN" {
		t.Errorf("derive from the re-signed token: HTTP %d %+v", status, ans)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// A background command does not outlive a revocation of the token it was started under:
// revoked through the API, or in the store by another process (capgate token revoke --data,
// another replica), which the gateway's sync notices; nor its client's being disabled.
func TestRevocationEndsBackgroundCommands(t *testing.T) {
	sandboxtest.Open(t)
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	for _, how := range []string{"api", "store", "disable"} {
		tok := e.token(alice, []string{"app.terminal.execute"}, nil)
		marker := "60.7" + strconv.Itoa(os.Getpid()%10000) + map[string]string{"api": "1", "store": "2", "disable": "3"}[how]
		wantOK(t, how, e.callApp(alice, "terminal", "execute_command", `{"command":"setsid -f sleep `+marker+`","background":false}`, tok))
		wantOK(t, how, e.callApp(alice, "terminal", "execute_command", `{"command":"sleep `+marker+`","background":true}`, tok))
		waitFor(t, func() bool { return countSleepers(marker) == 1 }, how+": the background command runs, the setsid one did not outlive its call")
		switch how {
		case "api":
			if status, ans := e.revoke(alice, tok); status != http.StatusOK {
				t.Fatalf("revoke: HTTP %d %+v", status, ans)
			}
		case "store":
			tk, _ := token.Parse(tok)
			if err := e.g.Store.Revoke(e.ctx, tk.ID, time.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := e.g.Broker.Sync(e.ctx); err != nil { // the sweep's next tick
				t.Fatal(err)
			}
		case "disable":
			if err := e.g.Store.SetClientDisabled(e.ctx, alice.ID, true); err != nil {
				t.Fatal(err)
			}
			if _, err := e.g.Broker.Sync(e.ctx); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, func() bool { return countSleepers(marker) == 0 }, how+": the background command outlived the revocation")
	}
}

// countSleepers counts the host's live processes running sleep with marker.
func countSleepers(marker string) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		b, err := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		argv := strings.Split(string(b), "\x00")
		if err != nil || len(argv) != 3 || filepath.Base(argv[0]) != "sleep" || argv[1] != marker {
			continue
		}
		if st, err := os.ReadFile("/proc/" + ent.Name() + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal(what)
}

// A command that runs into the timeout the call gave it answers TIMEOUT naming how long it
// ran, not the gateway's bound on the capability (310,000 ms for the terminal).
func TestTimeoutNamesTheCallsLimit(t *testing.T) {
	sandboxtest.Open(t)
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	tok := e.token(alice, []string{"app.terminal.execute"}, nil)
	r := e.callApp(alice, "terminal", "execute_command", `{"command":"sleep 5","timeout":1500}`, tok)
	wantCode(t, "a 1.5 s command", r, "TIMEOUT")
	if msg := r.Body.ErrorMessage; strings.Contains(msg, "310000") || !strings.Contains(msg, "after 1") {
		t.Errorf("the timeout's message: %q", msg)
	}
}
