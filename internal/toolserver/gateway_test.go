package toolserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/manifest"
)

// testServer is the test MCP server's binary, built once by TestMain.
var testServer string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolserver-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testServer = filepath.Join(dir, "testserver")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.Command(goBin, "build", "-o", testServer, "github.com/capgate/capgate/internal/toolserver/internal/testserver")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the test MCP server:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture is a data folder with the test server added as the tool server "srv", and a
// gateway serving it.
type fixture struct {
	t       testing.TB
	ctx     context.Context
	data    string
	control string // the test server's control file
	records string // where the test server records what it was given
	g       *gateway.Gateway
	srv     *httptest.Server
	key     string // the client's key
	seq     int
	v       variant
	restart func() // HTTP: start the test server again after it went down; nil over stdio (capgate restarts it)
}

// addServer adds the tool server as `capgate toolserver add` does: on the store, with no
// gateway running.
func addServer(t testing.TB, data string, c toolserver.Config) toolserver.Report {
	t.Helper()
	return gatewaytest.AddToolServer(t, filepath.Join(data, gateway.DBFile), data, c)
}

// newFixtureWith is a fixture with the operator overlay given written first.
func newFixtureWith(t testing.TB, overlay map[string]any) *fixture {
	return newFixtureOf(t, overlay, true)
}

// newFixtureOf is newFixtureWith; with record false the test server records nothing (it
// rewrites its whole record on every call, which a benchmark must not measure).
func newFixtureOf(t testing.TB, overlay map[string]any, record bool) *fixture {
	return newFixtureAs(t, overlay, record, variant{})
}

// variant is how the test server is reached and which MCP revisions it speaks.
type variant struct {
	name      string
	revisions string        // the test server's -revisions; "" all of the go-sdk's
	http      bool          // streamable HTTP (the test starts the server) instead of stdio (capgate does)
	want      string        // the revision capgate must negotiate
	args      []string      // more arguments of the test server
	ceiling   time.Duration // the gateway's TimeoutCeiling; 0: none
}

// legacyRevisions are the handshake revisions: a server of these only does not discover.
const legacyRevisions = "2025-11-25,2025-06-18,2025-03-26,2024-11-05"

// variants are the servers every pin and stop rule is held against: one that speaks only
// 2026-07-28 (stateless, discovered) and one of the handshake revisions only, each over
// stdio and over streamable HTTP.
var variants = []variant{
	{name: "2026-07-28/stdio", revisions: "2026-07-28", want: "2026-07-28"},
	{name: "2025-11-25/stdio", revisions: legacyRevisions, want: "2025-11-25"},
	{name: "2026-07-28/http", revisions: "2026-07-28", http: true, want: "2026-07-28"},
	{name: "2025-11-25/http", revisions: legacyRevisions, http: true, want: "2025-11-25"},
}

// eachVariant runs test once for every variant.
func eachVariant(t *testing.T, test func(t *testing.T, v variant)) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { test(t, v) })
	}
}

// startHTTPServer starts the test server over streamable HTTP with args, as a plain child of
// the test (capgate only reaches it), and returns its endpoint, and a function that starts
// it again on the same address once it has exited (control word down).
func startHTTPServer(t testing.TB, args []string) (endpoint string, restart func()) {
	t.Helper()
	start := func(listen string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "endpoint")
		cmd := exec.Command(testServer, append(args, "-http", out, "-listen", listen)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TS_ALLOWED=yes"}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(out); err == nil && len(b) > 0 {
				return string(b)
			}
		}
		t.Fatal("the HTTP test server did not start")
		return ""
	}
	endpoint = start("127.0.0.1:0")
	addr := strings.TrimSuffix(strings.TrimPrefix(endpoint, "http://"), "/mcp")
	return endpoint, func() { start(addr) }
}

// newFixtureAs is newFixtureOf with the test server of v.
func newFixtureAs(t testing.TB, overlay map[string]any, record bool, v variant) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{t: t, ctx: ctx, data: t.TempDir(), records: t.TempDir(), v: v}
	f.control = filepath.Join(t.TempDir(), "control")
	args := []string{"-control", f.control}
	if record {
		args = append(args, "-record", f.records)
	}
	if v.revisions != "" {
		args = append(args, "-revisions", v.revisions)
	}
	args = append(args, v.args...)
	if err := os.WriteFile(f.control, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// capgate's own secrets are in its environment; none may reach the server.
	t.Setenv("CAPGATE_CLIENT_KEY", "cgk_secretkeyofcapgate")
	t.Setenv("CAPGATE_TOKEN", "cgt1.secrettoken")
	t.Setenv("TS_ALLOWED", "yes")
	t.Setenv("TS_NOT_LISTED", "no")
	if overlay != nil {
		data, _ := json.Marshal(overlay)
		path := toolserver.OverlayFile(f.data, "srv")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := toolserver.Config{Name: "srv", Command: testServer,
		Args: args, Env: []string{"TS_ALLOWED"}, Bind: []toolserver.Bind{{Path: filepath.Dir(f.control)}, {Path: f.records, RW: true}}}
	if v.http {
		var url string
		url, f.restart = startHTTPServer(t, args)
		c = toolserver.Config{Name: "srv", URL: url}
	}
	r := addServer(t, f.data, c)
	if len(r.Accepted) != 2 || r.AppID != "mcp.srv" {
		t.Fatalf("add accepted %+v, left %v", r.Accepted, r.Left)
	}
	if v.want != "" && r.Revision.Protocol != v.want {
		t.Fatalf("add spoke %s to the server, want %s", r.Revision, v.want)
	}
	var err error
	f.g, err = gateway.Open(ctx, gateway.Config{DataDir: f.data, Listen: "-", Socket: "-",
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		ConsentWait: 5 * time.Second, DelayedCommit: -1, ToolServerRelist: 300 * time.Millisecond, TimeoutCeiling: v.ceiling})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- f.g.Serve(sctx, nil) }() // the sweep: registry reloads, tool-server syncs
	f.srv = httptest.NewServer(f.g.Handler())
	f.key = gatewaytest.AddClient(t, f.g.Store, store.Client{ID: "cl_alice", Name: "alice", Trust: "user"})
	t.Cleanup(func() {
		f.srv.Close()
		stop()
		<-served
		if err := f.g.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

func (f *fixture) setControl(state string) {
	f.t.Helper()
	if err := os.WriteFile(f.control, []byte(state), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// call calls the tool server's method through POST /v1/ipc, with no token.
func (f *fixture) call(method, params string) ipc.Response { return f.callWith(method, params, "") }

// callWith calls the tool server's method through POST /v1/ipc under the token, if any.
func (f *fixture) callWith(method, params, token string) ipc.Response {
	f.t.Helper()
	f.seq++
	reqBody := map[string]any{"action": "execute", "app": "srv", "method": method, "params": json.RawMessage(params)}
	if token != "" {
		reqBody["capability_token"] = token
	}
	body, _ := json.Marshal(map[string]any{
		"header": map[string]any{"msg_type": "llm_request", "version": "1.0", "request_id": fmt.Sprintf("req-%d", f.seq), "timestamp": time.Now().Unix()},
		"body":   reqBody,
	})
	req, _ := http.NewRequest("POST", f.srv.URL+"/v1/ipc", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r ipc.Response
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		f.t.Fatal(err)
	}
	return r
}

// approvedCall calls method, approving the consent request the call opens (a Tier 2 tool
// whose side effects are the worst case asks on every call).
func (f *fixture) approvedCall(method, params string) ipc.Response {
	f.t.Helper()
	approved := gatewaytest.AnswerNext(f.t, f.g.Store, consent.KindCall, func(ctx context.Context, id string) error {
		return f.g.Consent.Approve(ctx, id, "person", false)
	})
	r := f.call(method, params)
	<-approved
	return r
}

// eventually waits up to 10 s for cond.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	f.t.Fatalf("timed out waiting until %s", what)
}

// pinRequest returns the pending pin request about tool, if one is open.
func (f *fixture) pinRequest(tool string) (store.Consent, map[string]any, bool) {
	cs, err := f.g.Store.ListConsents(f.ctx, store.ConsentPending)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, c := range cs {
		var p map[string]any
		_ = json.Unmarshal(c.Payload, &p)
		if c.Kind == toolserver.KindPin && strings.Contains(fmt.Sprint(p["summary"]), `"`+tool+`"`) {
			return c, p, true
		}
	}
	return store.Consent{}, nil, false
}

func wantCode(t *testing.T, what string, r ipc.Response, code string) {
	t.Helper()
	if r.Body.Status != "error" || r.Body.ErrorCode != code {
		t.Fatalf("%s: got %s %s (%s), want %s", what, r.Body.Status, r.Body.ErrorCode, r.Body.ErrorMessage, code)
	}
}

func wantOutput(t *testing.T, what string, r ipc.Response, tool, text string) {
	t.Helper()
	if r.Body.Status != "success" {
		t.Fatalf("%s: %s %s", what, r.Body.ErrorCode, r.Body.ErrorMessage)
	}
	var out struct {
		Untrusted bool   `json:"untrusted_output"`
		Server    string `json:"server"`
		Tool      string `json:"tool"`
		Content   []struct {
			Type, Text string
		} `json:"content"`
	}
	if err := json.Unmarshal(r.Body.Result, &out); err != nil {
		t.Fatalf("%s: result %s: %v", what, r.Body.Result, err)
	}
	if !out.Untrusted || out.Server != "srv" || out.Tool != tool || len(out.Content) != 1 || out.Content[0].Text != text {
		t.Fatalf("%s: result %s, want %q from %s labelled untrusted", what, r.Body.Result, text, tool)
	}
}

// A server that says its listing stays fresh for an hour (a 2026-07-28 cache hint) and
// announces no change is listed again all the same: capgate keeps no listing on the
// server's word, so the changed tool is stopped at the next listing, under every revision.
func TestCacheHintDoesNotHideAChange(t *testing.T) {
	eachVariant(t, func(t *testing.T, v variant) {
		v.args = []string{"-ttl", "3600000", "-quiet"}
		f := newFixtureAs(t, nil, true, v)
		wantOutput(t, "echo", f.approvedCall("echo", `{"text":"hi"}`), "echo", "echo: hi")
		f.setControl("mutate")
		f.eventually("echo is stopped", func() bool { return !f.g.Registry.Pinned("tool.mcp.srv.echo") })
		wantCode(t, "changed echo", f.call("echo", `{"text":"hi"}`), "METHOD_NOT_FOUND")
	})
}

// A tool whose description changes mid-session is stopped at once: refused as
// METHOD_NOT_FOUND with no consent asked, no longer listed, an audit record written and a
// pin request opened showing the difference; the other tool keeps working; approving the
// pin request makes the changed tool callable again.
func TestChangedToolStopsUntilAccepted(t *testing.T) {
	eachVariant(t, testChangedToolStopsUntilAccepted)
}

func testChangedToolStopsUntilAccepted(t *testing.T, v variant) {
	f := newFixtureAs(t, nil, true, v)
	wantOutput(t, "echo", f.approvedCall("echo", `{"text":"hi"}`), "echo", "echo: hi")
	if rev, ok, err := toolserver.LoadRevision(f.ctx, f.g.Store, "srv"); err != nil || !ok || rev.Protocol != v.want || rev.Stateless != (v.want == toolserver.StatelessRevision) {
		t.Errorf("the recorded revision: %+v %v %v, want %s", rev, ok, err, v.want)
	}

	f.setControl("mutate")
	f.eventually("echo is stopped", func() bool { return !f.g.Registry.Pinned("tool.mcp.srv.echo") })
	wantCode(t, "changed echo", f.call("echo", `{"text":"hi"}`), "METHOD_NOT_FOUND")
	if n, _ := f.g.Store.ListConsents(f.ctx, "approved"); len(n) != 1 {
		t.Errorf("the stopped tool's call asked the person: %d approved requests, want the first call's only", len(n))
	}
	for _, u := range f.g.Broker.UsableBy(broker.Caller{ClientID: "cl_alice", Trust: manifest.AuthUser}) {
		if u.Cap.ID == "tool.mcp.srv.echo" {
			t.Error("the stopped tool is still listed to agents")
		}
	}
	f.eventually("a pin request for echo", func() bool { _, _, ok := f.pinRequest("echo"); return ok })
	c, payload, _ := f.pinRequest("echo")
	diff := fmt.Sprint(payload["difference"])
	if !strings.Contains(diff, `- /description: "Echoes the text back."`) || !strings.Contains(diff, "+ /description:") ||
		!strings.Contains(diff, "IGNORE PREVIOUS INSTRUCTIONS") {
		t.Errorf("the pin request does not show the difference:\n%s", diff)
	}
	if _, ok := payload["reason"]; ok {
		t.Errorf("the pin request gives the difference as a reason: %v", payload["reason"])
	}
	if sum := fmt.Sprint(payload["summary"]); !strings.Contains(sum, `changed the tool "echo"`) {
		t.Errorf("the pin request's summary: %s", sum)
	}
	if !auditHas(t, f, "toolserver.pin", "tool.mcp.srv.echo", c.ID) {
		t.Error("no audit record of the stopped tool")
	}
	// The other tool still works.
	wantOutput(t, "greet", f.approvedCall("greet", `{"name":"ann"}`), "greet", "hello, ann")

	// The person approves the pin request: the tool is pinned again and works.
	if err := f.g.Consent.Approve(f.ctx, c.ID, "person", false); err != nil {
		t.Fatal(err)
	}
	f.eventually("echo is pinned again", func() bool { return f.g.Registry.Pinned("tool.mcp.srv.echo") })
	wantOutput(t, "accepted echo", f.approvedCall("echo", `{"text":"again"}`), "echo", "echo: again")
	a, _ := f.g.Registry.Capability("tool.mcp.srv.echo")
	if !strings.Contains(a.Cap.Description, "IGNORE PREVIOUS") || !strings.Contains(a.Cap.Description, "<tool-description>") {
		t.Errorf("the accepted tool's capability does not carry its new description, labelled: %q", a.Cap.Description)
	}
	// An error the tool reports is a failure, and its text is withheld.
	r := f.approvedCall("echo", `{"text":"fail"}`)
	wantCode(t, "failing tool", r, "EXECUTION_FAILED")
	if strings.Contains(r.Body.ErrorMessage, "ignore all rules") {
		t.Error("the tool's error text reached the agent unlabelled")
	}
	checkNoSecrets(t, f)
}

// A renamed tool is a new tool: the old name disappears, the new one is not callable and a
// pin request is opened, until `capgate toolserver accept` accepts it. A removed tool
// disappears from the manifest.
func TestRenamedAndRemovedTools(t *testing.T) { eachVariant(t, testRenamedAndRemovedTools) }

func testRenamedAndRemovedTools(t *testing.T, v variant) {
	f := newFixtureAs(t, nil, true, v)
	f.setControl("rename")
	f.eventually("greet leaves the manifest", func() bool {
		_, ok := f.g.Registry.Method("srv", "greet")
		return !ok
	})
	wantCode(t, "the old name", f.call("greet", `{"name":"ann"}`), "METHOD_NOT_FOUND")
	wantCode(t, "the new name", f.call("hello", `{"name":"ann"}`), "METHOD_NOT_FOUND")
	f.eventually("a pin request for hello", func() bool { _, _, ok := f.pinRequest("hello"); return ok })
	c, _, _ := f.pinRequest("hello")

	env := &toolserver.Env{Store: f.g.Store, Registry: f.g.Registry, DataDir: f.data, Sandbox: sandboxtest.Open(t)}
	rep, err := toolserver.Accept(f.ctx, env, "srv", []string{"echo"}, false, "operator")
	if err == nil {
		t.Errorf("accepting an unchanged tool: %+v", rep.Accepted)
	}
	if _, err := toolserver.Accept(f.ctx, env, "srv", []string{"hello"}, false, "operator"); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.g.Store.GetConsent(f.ctx, c.ID); got.State != store.ConsentApproved {
		t.Errorf("the pin request after accept: %s", got.State)
	}
	f.eventually("hello is in the manifest", func() bool { _, ok := f.g.Registry.Method("srv", "hello"); return ok })
	wantOutput(t, "hello", f.approvedCall("hello", `{"name":"bo"}`), "hello", "hello, bo")

	f.setControl("remove")
	f.eventually("hello leaves the manifest", func() bool { _, ok := f.g.Registry.Method("srv", "hello"); return !ok })
	pins, err := toolserver.LoadPins(f.ctx, f.g.Store, "srv")
	if err != nil || len(pins) != 1 || pins[0].Tool != "echo" {
		t.Errorf("pins after the removal: %+v, %v", pins, err)
	}
	checkNoSecrets(t, f)
}

// AcceptSeen pins a changed tool only with the definition of its pin request: after the
// server changes it again, the old request's hash accepts nothing (ErrChangedAgain), and the
// hash of the definition listed now accepts it, recording the pin request as approved.
func TestAcceptSeen(t *testing.T) { eachVariant(t, testAcceptSeen) }

func testAcceptSeen(t *testing.T, v variant) {
	f := newFixtureAs(t, nil, true, v)
	f.setControl("mutate")
	f.eventually("a pin request for echo", func() bool {
		rs, _ := toolserver.PinRequests(f.ctx, f.g.Store, "srv")
		return len(rs) == 1
	})
	env := &toolserver.Env{Store: f.g.Store, Registry: f.g.Registry, DataDir: f.data, Sandbox: sandboxtest.Open(t)}
	reqs, err := toolserver.PinRequests(f.ctx, f.g.Store, "srv")
	if err != nil || len(reqs) != 1 || reqs[0].Tool != "echo" || !strings.HasPrefix(reqs[0].Hash, "sha256:") {
		t.Fatalf("pin requests: %+v %v", reqs, err)
	}
	seen := reqs[0]
	before, _ := toolserver.LoadPins(f.ctx, f.g.Store, "srv")

	// greet did not change: there is nothing to accept. Then the server adds a tool, and echo
	// is accepted only with the hash the person was shown.
	if _, err := toolserver.AcceptSeen(f.ctx, env, "srv", "greet", seen.Hash, "person"); !errors.Is(err, toolserver.ErrNothingToAccept) {
		t.Errorf("accepting an unchanged tool: %v", err)
	}
	f.setControl("mutate,hostile")
	f.eventually("a pin request for the hostile tool", func() bool {
		rs, _ := toolserver.PinRequests(f.ctx, f.g.Store, "srv")
		return len(rs) == 2
	})
	if _, err := toolserver.AcceptSeen(f.ctx, env, "srv", "echo", "sha256:"+strings.Repeat("0", 64), "person"); !errors.Is(err, toolserver.ErrChangedAgain) {
		t.Fatalf("accepting with a hash the server does not list: %v", err)
	}
	if after, _ := toolserver.LoadPins(f.ctx, f.g.Store, "srv"); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused AcceptSeen changed the pins")
	}
	rep, err := toolserver.AcceptSeen(f.ctx, env, "srv", "echo", seen.Hash, "person")
	if err != nil || len(rep.Accepted) != 1 || rep.Accepted[0].Hash != seen.Hash {
		t.Fatalf("accepting what was shown: %+v %v", rep.Accepted, err)
	}
	if c, _ := f.g.Store.GetConsent(f.ctx, seen.ConsentID); c.State != store.ConsentApproved || c.AnsweredBy != "person" {
		t.Errorf("the pin request after AcceptSeen: %s by %s", c.State, c.AnsweredBy)
	}
	rs, _ := toolserver.PinRequests(f.ctx, f.g.Store, "srv")
	if len(rs) != 1 || rs[0].Tool == "echo" {
		t.Errorf("pin requests after accepting echo: %+v", rs)
	}
}

func auditHas(t *testing.T, f *fixture, action, capability, consentID string) bool {
	t.Helper()
	// Wait for the writer: the record is appended before the request is logged.
	es, err := f.g.Store.AuditRange(f.ctx, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		var r map[string]any
		_ = json.Unmarshal(e.Body, &r)
		if r["action"] == action && r["capability"] == capability && r["consent_id"] == consentID && r["code"] == "METHOD_NOT_FOUND" {
			return true
		}
	}
	return false
}

// checkNoSecrets reads what the test server recorded: its environment holds PATH, HOME,
// LANG and the listed variable only, and nothing it was given holds a client key, a token
// or a CAPGATE_ variable.
func checkNoSecrets(t *testing.T, f *fixture) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(f.records, "server-*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the test server recorded nothing: %v", err)
	}
	calls := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, bad := range []string{"cgk_", "cgt1.", "CAPGATE_", "TS_NOT_LISTED"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s reached the tool server", bad)
			}
		}
		var rec struct {
			Env   []string
			Calls []json.RawMessage
		}
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatal(err)
		}
		calls += len(rec.Calls)
		for _, kv := range rec.Env {
			name, _, _ := strings.Cut(kv, "=")
			switch name {
			case "PATH", "HOME", "LANG", "TS_ALLOWED", "PWD": // PWD: bwrap's, the sandbox's working folder
			default:
				t.Errorf("the variable %s reached the tool server", name)
			}
		}
		if !strings.Contains(text, "TS_ALLOWED=yes") {
			t.Error("the listed variable did not reach the tool server")
		}
	}
	if calls == 0 {
		t.Error("the test server recorded no call")
	}
}

// A tool the operator's overlay classifies as a read runs as a Tier 1 read does, before its
// decision record is durable, so that its answer waits for one commit (both records) instead
// of two; the server's own read-only annotation (greet has one) never does that.
func TestOperatorReadWaitsForOneCommit(t *testing.T) {
	f := newFixtureWith(t, map[string]any{"echo": map[string]any{"side_effects": "read", "risk": "low", "reversibility": "reversible"}})
	caller := broker.Caller{ClientID: "cl_alice", Name: "alice", Trust: manifest.AuthUser}
	iss, err := f.g.Broker.RequestCapability(f.ctx, caller, broker.CapabilityRequest{Capabilities: []string{"mcp.srv.echo"}, Duration: 3600, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, "echo", f.callWith("echo", `{"text":"hi"}`, iss.Wire), "echo", "echo: hi")
	before := f.g.Audit.Stats().Batches
	const calls = 5
	for range calls {
		wantOutput(t, "echo", f.callWith("echo", `{"text":"hi"}`, iss.Wire), "echo", "echo: hi")
	}
	if n := f.g.Audit.Stats().Batches - before; n > calls+1 {
		t.Errorf("%d calls of a classified read took %d commits, want one each", calls, n)
	}
	// greet is annotated read-only by its server, not classified: it is the worst case, so
	// the call asks the person.
	r := f.approvedCall("greet", `{"name":"bo"}`)
	wantOutput(t, "greet", r, "greet", "hello, bo")
	cs, err := f.g.Store.ListConsents(f.ctx, store.ConsentApproved)
	if err != nil {
		t.Fatal(err)
	}
	asked := false
	for _, c := range cs {
		asked = asked || (c.Kind == "call" && strings.Contains(string(c.Payload), "mcp.srv.greet"))
	}
	if !asked {
		t.Error("greet, annotated read-only by its server alone, ran without asking the person")
	}
}

// A token with path or command constraints refuses a tool whose params the operator has not
// classified, and runs one whose params the overlay classifies: a server's tools never pass
// such a token on the server's word.
func TestOverlayParamsUnderConstraints(t *testing.T) {
	eachVariant(t, testOverlayParamsUnderConstraints)
}

func testOverlayParamsUnderConstraints(t *testing.T, v variant) {
	f := newFixtureAs(t, map[string]any{
		"echo":  map[string]any{"side_effects": "read", "risk": "low", "params": map[string]any{"/text": "text"}},
		"greet": map[string]any{"side_effects": "read", "risk": "low"},
	}, true, v)
	caller := broker.Caller{ClientID: "cl_alice", Name: "alice", Trust: manifest.AuthUser}
	iss, err := f.g.Broker.RequestCapability(f.ctx, caller, broker.CapabilityRequest{Capabilities: []string{"mcp.srv.echo", "mcp.srv.greet"},
		Duration: 3600, Reason: "test", Constraints: token.Constraints{AllowedPaths: []string{"/srv/ws/**"}}})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, "echo", f.callWith("echo", `{"text":"hi"}`, iss.Wire), "echo", "echo: hi")
	r := f.callWith("greet", `{"name":"bo"}`, iss.Wire)
	if r.Body.ErrorCode != "CAPABILITY_DENIED" || !strings.Contains(r.Body.ErrorMessage, "not every param is classified") {
		t.Fatalf("greet, unclassified, under allowed_paths: %s %s", r.Body.ErrorCode, r.Body.ErrorMessage)
	}
}
