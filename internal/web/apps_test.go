package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/archive"
	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/lock"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/internal/web"
)

// The hostile tool the test MCP server adds on "hostile" (internal/toolserver/internal/
// testserver sends the same strings).
const (
	hostileTool        = `<img src=x onerror="window.__pwned=1">`
	hostileTitle       = `"><script>window.__pwned=1</script>`
	hostileDescription = "Reads files.\u202e<b onclick=\"window.__pwned=1\">click</b> <a href=\"javascript:window.__pwned=1\">here</a>"
)

var (
	buildServer sync.Once
	serverBin   string
	serverErr   error
)

// testServer builds the toolserver package's test MCP server once for the package's tests.
func testServer(t *testing.T) string {
	t.Helper()
	buildServer.Do(func() {
		dir, err := os.MkdirTemp("", "web-test-mcp")
		if err != nil {
			serverErr = err
			return
		}
		serverBin = filepath.Join(dir, "testserver")
		out, err := exec.Command("go", "build", "-o", serverBin, "github.com/capgate/capgate/internal/toolserver/internal/testserver").CombinedOutput()
		if err != nil {
			serverErr = fmt.Errorf("build the test MCP server: %v\n%s", err, out)
		}
	})
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	return serverBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if serverBin != "" {
		os.RemoveAll(filepath.Dir(serverBin))
	}
	os.Exit(code)
}

// toolEnv is an env whose data folder holds the test MCP server, added as the tool server
// "srv" (tools echo and greet) before the gateway opened, as `capgate toolserver add` does;
// control is the file that makes the server change its tools.
func toolEnv(t *testing.T, delayedCommit time.Duration) (*env, string) {
	t.Helper()
	return toolEnvWith(t, delayedCommit, nil)
}

// toolEnvWith is toolEnv with the operator's overlay for srv written first.
func toolEnvWith(t *testing.T, delayedCommit time.Duration, overlay map[string]toolserver.Class) (*env, string) {
	t.Helper()
	control := filepath.Join(t.TempDir(), "control")
	if err := os.WriteFile(control, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testServer(t)
	e := newEnvWith(t, delayedCommit, func(data string) {
		if overlay != nil {
			raw, _ := json.Marshal(overlay)
			path := toolserver.OverlayFile(data, "srv")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r := gatewaytest.AddToolServer(t, filepath.Join(data, gateway.DBFile), data, toolserver.Config{Name: "srv", Command: bin, Args: []string{"-control", control}, Bind: []toolserver.Bind{{Path: filepath.Dir(control)}}})
		if len(r.Accepted) != 2 {
			t.Fatalf("add the tool server: %+v", r.Accepted)
		}
	})
	return e, control
}

// setControl tells the test MCP server which tools to serve.
func setControl(t *testing.T, control, state string) {
	t.Helper()
	if err := os.WriteFile(control, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
}

// eventually waits up to 15 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

// pinRequests waits for n pin requests of the tool server srv and returns them.
func (e *env) pinRequests(n int) []toolserver.PinRequest {
	e.t.Helper()
	var rs []toolserver.PinRequest
	eventually(e.t, fmt.Sprintf("%d pin requests", n), func() bool {
		var err error
		rs, err = toolserver.PinRequests(e.ctx, e.g.Store, "srv")
		return err == nil && len(rs) == n
	})
	return rs
}

// request returns the pin request about tool.
func request(t *testing.T, rs []toolserver.PinRequest, tool string) toolserver.PinRequest {
	t.Helper()
	for _, r := range rs {
		if r.Tool == tool {
			return r
		}
	}
	t.Fatalf("no pin request for %q in %+v", tool, rs)
	return toolserver.PinRequest{}
}

// hostileSource is the folder a hostile plugin is installed from: its name is markup.
const hostileSource = `<img src=x onerror="window.__pwned=1">`

// installPlugin lays out an unsigned plugin package for appID whose one capability is
// named capName, in a folder named folder, and installs it into the gateway's lockfile:
// approved when approve is set, else left as a pending widening (a new plugin is one).
func (e *env) installPlugin(appID, capName, folder string, approve bool) plugin.Outcome {
	e.t.Helper()
	dir := filepath.Join(e.t.TempDir(), folder)
	files := map[string]string{"index/data.txt": "v1", "sbom.spdx.json": `{"spdxVersion":"SPDX-2.3"}`, "provenance.json": `{"builder":"test"}`, "manifest.json": "{}"}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	pkg, err := archive.Open(dir)
	if err != nil {
		e.t.Fatal(err)
	}
	ref := func(path string) map[string]any {
		f, _ := pkg.File(path)
		return map[string]any{"path": path, "digest": f.Digest}
	}
	action := appID[strings.LastIndex(appID, ".")+1:]
	m := map[string]any{"app_id": appID, "version": "1.0.0", "manifest_version": "1.0", "digest": pkg.Digest(),
		"sbom_ref": ref("sbom.spdx.json"), "provenance_ref": ref("provenance.json"),
		"capabilities": []any{map[string]any{"id": "kb." + appID + ".search", "name": capName, "description": "Searches the " + action + ".",
			"category": "TEXT_QUERY", "parameters": map[string]any{"type": "object"}, "returns": map[string]any{"type": "object"}, "side_effects": "read"}}}
	data, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644); err != nil {
		e.t.Fatal(err)
	}
	h := &plugin.Host{DataDir: e.data, AllowTier2Unsafe: true}
	out, err := h.Install(dir, plugin.Options{Approve: approve, Approver: "cli:test"})
	if err != nil || out.Refused || out.Pending == approve {
		e.t.Fatalf("install %s: %+v %v", appID, out, err)
	}
	return out
}

// auditActions are the audit records whose action is one of actions, oldest first.
func (e *env) auditActions(actions ...string) []audit.Record {
	e.t.Helper()
	var out []audit.Record
	for _, r := range gatewaytest.AuditRecords(e.t, e.g.Store) {
		for _, a := range actions {
			if r.Action == a {
				out = append(out, r)
			}
		}
	}
	return out
}

// postForm posts form to path from the page's own origin and returns the answer.
func (b *browser) postForm(path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	return b.post(path, form, map[string]string{"Origin": b.base, "Sec-Fetch-Site": "same-origin"})
}

// The apps page lists every registered app with its tier and why, each tool server with its
// pinned tools, and the plugins with their pending widenings. A tool the server changes is
// shown stopped with its difference; accepting it re-pins it through toolserver.AcceptSeen
// (only with the definition shown), audited; keeping a new one stopped denies its pin
// request; a pending widening is approved only as shown, audited. Hostile tool names,
// titles, descriptions and plugin names are text.
func TestAppsPage(t *testing.T) {
	t.Parallel()
	e, control := toolEnv(t, 0)
	e.installPlugin("org.example.kb", hostileCapName, hostileSource, false)
	e.installPlugin("org.example.wiki", "Search the wiki", "wiki-1.0.0", true)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	csrf := b.login(e.g.LoginLink())

	resp, page := b.get("/ui/apps")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/ui/apps: HTTP %d", resp.StatusCode)
	}
	for _, want := range []string{
		`aria-current="page">Apps</a>`, `id="ts-srv"`, `id="tool-srv-echo"`, `id="tool-srv-greet"`, "pinned, callable",
		"tool.mcp.srv.echo", "Echoes the text back.", "Tier 2: derived from an MCP server", `data-app="org.example.pad"`, "2026-07-28 (stateless, discovered)",
		"Tier 1: its manifest&#39;s signature verified", `data-app="mcp.srv"`, `id="widen-org.example.kb"`, "waiting for approval",
		"capability &#34;kb.org.example.kb.search&#34; added", "Approve this widening", `id="plugin-org.example.wiki"`, "approved by cli:test",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the apps page lacks %q", want)
		}
	}

	// The server changes echo and adds a hostile tool: echo is stopped, both wait.
	setControl(t, control, "mutate,hostile")
	rs := e.pinRequests(2)
	echo, evil := request(t, rs, "echo"), request(t, rs, hostileTool)
	eventually(t, "echo is stopped", func() bool { return !e.g.Registry.Pinned("tool.mcp.srv.echo") })
	_, page = b.get("/ui/apps")
	for _, want := range []string{`id="pin-` + echo.ConsentID + `"`, `id="pin-` + evil.ConsentID + `"`, "stopped: its definition changed",
		`- /description: &#34;Echoes the text back.&#34;`, "IGNORE PREVIOUS INSTRUCTIONS", echo.Hash, "Keep it stopped", "Accept the new definition",
		"&lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the apps page with a changed tool lacks %q", want)
		}
	}
	for _, bad := range []string{"<img", "<b onclick", "<script>window", `href="javascript`, "\u202e"} {
		if strings.Contains(page, bad) {
			t.Errorf("the apps page holds %q unescaped", bad)
		}
	}
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("the apps page has %d script elements, want only app.js", n)
	}

	// Keep the hostile tool stopped: its request is denied, it stays uncallable.
	if resp, body := b.postForm("/ui/apps/toolservers/srv/keep", url.Values{"csrf": {csrf}, "request": {evil.ConsentID}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("keep stopped: HTTP %d %s", resp.StatusCode, body)
	}
	if st := e.state(evil.ConsentID); st != store.ConsentDenied {
		t.Errorf("the kept tool's request is %s", st)
	}
	if _, ok := e.g.Registry.Method("srv", "t__img_src_x_onerror__window___pwned_1__"); ok {
		t.Error("the tool kept stopped is callable")
	}

	// Accept refused: without the CSRF token, with another hash, with an unknown request.
	before, _ := toolserver.LoadPins(e.ctx, e.g.Store, "srv")
	for _, c := range []struct {
		form url.Values
		want int
	}{
		{url.Values{"request": {echo.ConsentID}, "hash": {echo.Hash}}, http.StatusForbidden},
		{url.Values{"csrf": {csrf}, "request": {echo.ConsentID}, "hash": {"sha256:" + strings.Repeat("0", 64)}}, http.StatusConflict},
		{url.Values{"csrf": {csrf}, "request": {"req_000000000000000000000000"}, "hash": {echo.Hash}}, http.StatusConflict},
		{url.Values{"csrf": {csrf}, "hash": {echo.Hash}}, http.StatusBadRequest},
	} {
		if resp, _ := b.postForm("/ui/apps/toolservers/srv/accept", c.form); resp.StatusCode != c.want {
			t.Errorf("accept %v: HTTP %d, want %d", c.form, resp.StatusCode, c.want)
		}
	}
	if resp, _ := b.postForm("/ui/apps/toolservers/nosuch/accept", url.Values{"csrf": {csrf}, "request": {echo.ConsentID}, "hash": {echo.Hash}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("accept on another server: HTTP %d", resp.StatusCode)
	}
	if after, _ := toolserver.LoadPins(e.ctx, e.g.Store, "srv"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("a refused accept changed the pins")
	}

	// Accept echo: pinned again with the definition shown, its request approved, callable.
	if resp, body := b.postForm("/ui/apps/toolservers/srv/accept", url.Values{"csrf": {csrf}, "request": {echo.ConsentID}, "hash": {echo.Hash}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("accept: HTTP %d %s", resp.StatusCode, body)
	}
	pins, _ := toolserver.LoadPins(e.ctx, e.g.Store, "srv")
	if len(pins) != 2 || pins[0].Tool != "echo" || pins[0].Hash != echo.Hash {
		t.Fatalf("pins after accept: %+v", pins)
	}
	if c, _ := e.g.Store.GetConsent(e.ctx, echo.ConsentID); c.State != store.ConsentApproved || c.AnsweredBy != "person (approval page)" {
		t.Errorf("echo's pin request after accept: %s by %s", c.State, c.AnsweredBy)
	}
	eventually(t, "echo runs again", func() bool { return e.g.Registry.Pinned("tool.mcp.srv.echo") })
	recs := e.auditActions("toolserver.accept", "toolserver.keep_stopped", "plugin.approve")
	if len(recs) != 4 || recs[2].Action != "toolserver.accept" || recs[2].Kind != "decision" || recs[3].Kind != "outcome" || recs[3].Result != "success" ||
		recs[3].Capability != "tool.mcp.srv.echo" || recs[3].ClientID != "person (approval page)" || recs[3].ConsentID != echo.ConsentID {
		t.Errorf("audit records of keep and accept: %+v", recs)
	}
	_, page = b.get("/ui/apps")
	if strings.Contains(page, `id="pin-`+echo.ConsentID+`"`) || !strings.Contains(page, `id="pin-`+evil.ConsentID+`"`) || !strings.Contains(page, "You chose to keep it stopped") {
		t.Errorf("after accepting echo, the page still shows it waiting, or not the kept tool")
	}

	// Approve the plugin's widening: refused when it is not the one shown; then approved.
	seen := regexp.MustCompile(`name="seen" value="([^"]+)"`).FindStringSubmatch(page)
	if seen == nil {
		t.Fatal("no widening to approve on the page")
	}
	if resp, _ := b.postForm("/ui/apps/plugins/org.example.kb/approve", url.Values{"csrf": {csrf}, "seen": {"sha256:" + strings.Repeat("1", 64)}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("approving another widening: HTTP %d", resp.StatusCode)
	}
	if resp, body := b.postForm("/ui/apps/plugins/org.example.kb/approve", url.Values{"csrf": {csrf}, "seen": {seen[1]}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: HTTP %d %s", resp.StatusCode, body)
	}
	lf, err := lock.Load(e.data)
	if err != nil || lf.Plugins["org.example.kb"].ApprovedBy != "person (approval page)" || len(lf.Pending) != 0 {
		t.Fatalf("the lock after approval: %+v %v", lf, err)
	}
	// Approving again: nothing is pending. The refusals are recorded with the codes the CLI
	// gives them (operator.Code): both INVALID_REQUEST, the approval that changed since shown
	// and the one with nothing pending (plugin.ErrNoPending).
	if resp, _ := b.postForm("/ui/apps/plugins/org.example.kb/approve", url.Values{"csrf": {csrf}, "seen": {seen[1]}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("approving with nothing pending: HTTP %d", resp.StatusCode)
	}
	recs = e.auditActions("plugin.approve")
	if len(recs) != 6 || recs[3].Result != "success" || recs[1].Code != "INVALID_REQUEST" || recs[3].App != "org.example.kb" ||
		recs[5].Result != "error" || recs[5].Code != "INVALID_REQUEST" {
		t.Errorf("audit records of the approvals: %+v", recs)
	}
	_, page = b.get("/ui/apps")
	if !strings.Contains(page, `id="plugin-org.example.kb"`) || strings.Contains(page, "<img") || !strings.Contains(page, "&lt;img src=x") {
		t.Errorf("the approved hostile plugin is not listed as text")
	}
}

// Without an audit recorder the page offers no accept or approval, and refuses them: a
// change that widens what runs is never made unrecorded.
func TestAppsPageWithoutAudit(t *testing.T) {
	t.Parallel()
	e, control := toolEnv(t, 0)
	e.installPlugin("org.example.kb", "Search", "kb-1.0.0", false)
	s := web.New(web.Options{Consent: e.g.Consent, Store: e.g.Store, Registry: e.g.Registry, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ToolServers: &toolserver.Env{Store: e.g.Store, Registry: e.g.Registry, DataDir: e.data, Sandbox: sandboxtest.Open(t)}, Plugins: &plugin.Host{DataDir: e.data}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	b := newBrowser(t, srv.URL, srv.Client())
	csrf := b.login(s.LoginLink())
	setControl(t, control, "mutate")
	echo := request(t, e.pinRequests(1), "echo")
	_, page := b.get("/ui/apps")
	if !strings.Contains(page, `id="pin-`+echo.ConsentID+`"`) || strings.Contains(page, "Accept the new definition") || strings.Contains(page, "Approve this widening") ||
		!strings.Contains(page, "capgate toolserver accept srv") || !strings.Contains(page, "capgate plugin approve org.example.kb") {
		t.Errorf("the page without a recorder offers changes, or does not say how to make them")
	}
	if resp, _ := b.postForm("/ui/apps/toolservers/srv/accept", url.Values{"csrf": {csrf}, "request": {echo.ConsentID}, "hash": {echo.Hash}}); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("accept without a recorder: HTTP %d", resp.StatusCode)
	}
	if pins, _ := toolserver.LoadPins(e.ctx, e.g.Store, "srv"); pins[0].Hash == echo.Hash {
		t.Error("an unrecorded accept pinned the tool")
	}
	// Keeping a tool stopped takes nothing away from what was reviewed: it is offered, and
	// the changed tool is then shown kept stopped.
	if resp, body := b.postForm("/ui/apps/toolservers/srv/keep", url.Values{"csrf": {csrf}, "request": {echo.ConsentID}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("keep stopped without a recorder: HTTP %d %s", resp.StatusCode, body)
	}
	_, page = b.get("/ui/apps")
	if !regexp.MustCompile(`id="tool-srv-echo">[^<]*<span class="text tool-name">echo</span>\s*<strong class="flag state-stopped">stopped: its definition changed, kept stopped</strong>`).MatchString(page) {
		t.Errorf("the changed tool is not shown kept stopped")
	}
	lf, _ := lock.Load(e.data)
	if resp, _ := b.postForm("/ui/apps/plugins/org.example.kb/approve", url.Values{"csrf": {csrf}, "seen": {plugin.PendingHash(lf.Pending["org.example.kb"])}}); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("approve without a recorder: HTTP %d", resp.StatusCode)
	}
	if lf, _ := lock.Load(e.data); len(lf.Pending) != 1 {
		t.Error("an unrecorded approval changed the lock")
	}
}

// Issue 16: an app whose provider cannot take calls is marked on the apps page, as not
// working right now: a built-in app whose handler could not start, and a tool server that is
// down; the others are not.
func TestAppsPageShowsWhatIsNotWorking(t *testing.T) {
	t.Parallel()
	control := filepath.Join(t.TempDir(), "control")
	if err := os.WriteFile(control, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testServer(t)
	e := newEnvWith(t, 0, func(data string) {
		// The files app's state folder cannot be made: it does not start.
		if err := os.WriteFile(filepath.Join(data, gateway.AppsStateDir), []byte("in the way"), 0o600); err != nil {
			t.Fatal(err)
		}
		gatewaytest.AddToolServer(t, filepath.Join(data, gateway.DBFile), data, toolserver.Config{Name: "srv", Command: bin, Args: []string{"-control", control}, Bind: []toolserver.Bind{{Path: filepath.Dir(control)}}})
	})
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())
	item := func(page, id string) string {
		i := strings.Index(page, `id="`+id+`"`)
		if i < 0 {
			t.Fatalf("the apps page has no %s", id)
		}
		j := strings.Index(page[i:], "</li>")
		return page[i : i+j]
	}
	_, page := b.get("/ui/apps")
	if !strings.Contains(item(page, "app-org.capgate.files"), "not working right now") {
		t.Error("the files app, which could not start, is not marked as not working")
	}
	if strings.Contains(item(page, "app-org.capgate.calc"), "not working") || strings.Contains(item(page, "app-mcp.srv"), "not working") {
		t.Error("an app that works is marked as not working")
	}

	setControl(t, control, "down")
	eventually(t, "the tool server is down", func() bool {
		_, page = b.get("/ui/apps")
		return strings.Contains(item(page, "app-mcp.srv"), "not working right now")
	})
	ts := page[strings.Index(page, `id="ts-srv"`):]
	if !strings.Contains(ts[:strings.Index(ts, "</section>")], "the server is down or reconnecting") {
		t.Error("the tool server's section does not say it is down")
	}
}

// An installed plugin whose package cannot run is shown not working, with why; the page says
// the same as capgate plugin list, from what the gateway recorded.
func TestAppsPageShowsWhyAPluginIsNotWorking(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())
	e.installPlugin("org.example.kb", "Search", "kb-1.0.0", true)
	var page string
	eventually(t, "the plugin is shown not working", func() bool {
		_, page = b.get("/ui/apps")
		i := strings.Index(page, `id="plugin-org.example.kb"`)
		return i >= 0 && strings.Contains(page[i:], "not working")
	})
	i := strings.Index(page, `id="plugin-org.example.kb"`)
	item := page[i : i+strings.Index(page[i:], "</li>")]
	if !strings.Contains(item, "why: the package holds no program") {
		t.Errorf("the plugin's entry does not say why it is not working:\n%s", item)
	}
}

// A tool server's URL request (toolserver.KindURL) is shown to the person as the address
// it is: in full, its host highlighted, look-alike characters flagged, and never as a link
// capgate would open; approving it on the page answers the server accept, and the call the
// server asked during goes on.
func TestURLRequestShowsTheAddress(t *testing.T) {
	t.Parallel()
	e, _ := toolEnv(t, 0)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	csrf := b.login(e.g.LoginLink())
	key := e.addClient("agent")
	const addr = "https://l\u043egin.example.com/authorize?state=1" // a Cyrillic о
	done := e.callAppAsync(key, "srv", "echo", `{"text":"url:`+addr+`"}`, "")
	call := e.waitPending(consent.KindCall)
	if resp, _ := b.postForm("/ui/requests/"+call+"/approve", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approving the call: HTTP %d", resp.StatusCode)
	}
	id := e.waitPending(toolserver.KindURL)
	_, page := b.get("/ui/requests/" + id)
	for _, want := range []string{"asks you to open a page (shown, not opened)", "Addresses in the params (shown, not opened)",
		"<mark>", "look-alike characters", "does not open it", "tool.mcp.srv.echo"} {
		if !strings.Contains(page, want) {
			t.Errorf("the URL request's page lacks %q", want)
		}
	}
	if strings.Contains(page, `href="https://l`) || strings.Contains(page, "<a href=\"https://l\u043egin") {
		t.Error("the URL request's page links the server's address")
	}
	if resp, _ := b.postForm("/ui/requests/"+id+"/approve", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approving the URL request: HTTP %d", resp.StatusCode)
	}
	r := <-done
	if r.Body.Status != "success" || !strings.Contains(string(r.Body.Result), "echo: accept") {
		t.Fatalf("the call after the URL request: %s %s %s", r.Body.Status, r.Body.ErrorCode, r.Body.Result)
	}
}

// A capability whose last evaluation failed is marked on the apps page under its app, as not
// working right now with the failed case; the app's other capabilities and the other apps are
// not. The words are the host's, escaped as any other text of the page.
func TestAppsPageShowsFailedEvaluations(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, 0, nil)
	b := newBrowser(t, e.srv.URL, e.srv.Client())
	b.login(e.g.LoginLink())
	e.g.Broker.SetFailedEvaluations(map[string]string{"calc.org.capgate.calc.compute": "failed at case adds-<b>two</b>: value: not a number"})
	_, page := b.get("/ui/apps")
	i := strings.Index(page, `id="app-org.capgate.calc"`)
	if i < 0 {
		t.Fatal("the apps page has no calc app")
	}
	calc := page[i:]
	if end := strings.Index(calc, `<li class="app`); end >= 0 { // the next app's item
		calc = calc[:end]
	}
	for _, want := range []string{"<code>calc.org.capgate.calc.compute</code>", "not working right now", "its last evaluation failed: failed at case adds-&lt;b&gt;two&lt;/b&gt;: value: not a number"} {
		if !strings.Contains(calc, want) {
			t.Errorf("the calc app's item lacks %q:\n%s", want, calc)
		}
	}
	if strings.Contains(calc, "calc.org.capgate.calc.get_value</code>: <strong") {
		t.Error("calc's other capability is marked as failed")
	}
	j := strings.Index(page, `id="app-org.capgate.files"`)
	files := page[j : j+strings.Index(page[j:], "</li>")]
	if strings.Contains(files, "evaluation failed") {
		t.Error("the files app is marked as failed")
	}
}
