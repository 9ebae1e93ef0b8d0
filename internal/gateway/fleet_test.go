package gateway_test

// End-to-end tests of the built-in app fleet (settings, files, editor, terminal, python, calc,
// syslog, solitaire) through the HTTP IPC API, as an agent drives it: tokens from
// POST /v1/capabilities/request, calls as llm_request envelopes to POST /v1/ipc, undo through
// the same endpoint, and the person answering consent requests through the consent service.
// Each test opens its own gateway (helpers_test.go's env, whose audit log is verified at the
// end) and checks every answer against the token document's "Application Contracts" and what
// happened in the app's own data model: the files in the workspace, the settings in the store,
// the game, the calculator's value.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/store"
)

// fleetCap is one capability of the fleet as the token document and the app's manifest name
// it, with params that pass its schema.
type fleetCap struct {
	app, method, perm, risk string
	params                  string
}

// fleet is every method of every built-in app.
var fleet = []fleetCap{
	{"settings", "get_setting", "system.settings.read", "low", `{"category":"appearance","key":"theme"}`},
	{"settings", "set_setting", "system.settings.write", "medium", `{"category":"appearance","key":"theme","value":"light"}`},
	{"files", "list_directory", "fs.read", "low", `{"path":"."}`},
	{"files", "read_file", "fs.read", "low", `{"path":"keep.txt"}`},
	{"files", "write_file", "fs.write", "high", `{"path":"keep.txt","content":"overwritten"}`},
	{"files", "delete_file", "fs.delete", "high", `{"path":"keep.txt"}`},
	{"files", "create_file", "fs.create", "medium", `{"path":"new.txt","content":"new"}`},
	{"files", "create_directory", "fs.create", "medium", `{"path":"newdir"}`},
	{"editor", "open_file", "app.editor.file_open", "medium", `{"path":"keep.txt"}`},
	{"editor", "get_buffer", "app.editor.read", "low", `{}`},
	{"editor", "set_buffer", "app.editor.write", "medium", `{"content":"replaced"}`},
	{"editor", "save_file", "app.editor.file_save", "medium", `{"path":"saved.txt"}`},
	{"terminal", "execute_command", "app.terminal.execute", "high", `{"command":"touch ran.txt"}`},
	{"terminal", "get_cwd", "app.terminal.read_output", "medium", `{}`},
	{"terminal", "read_output", "app.terminal.read_output", "medium", `{}`},
	{"terminal", "write_input", "app.terminal.write_input", "medium", `{"id":1,"input":"x"}`},
	{"terminal", "history", "app.terminal.history", "low", `{}`},
	{"python", "execute_script", "app.python.execute", "high", `{"code":"print(1)"}`},
	{"python", "execute_file", "app.python.execute", "high", `{"path":"hello.star"}`},
	{"python", "read_output", "app.python.read_output", "medium", `{}`},
	{"calc", "compute", "app.calc.compute", "low", `{"expression":"1 + 1"}`},
	{"calc", "get_value", "app.calc.read", "low", `{}`},
	{"syslog", "get_logs", "app.syslog.read", "low", `{}`},
	{"solitaire", "get_game_state", "app.solitaire.read", "low", `{}`},
	{"solitaire", "new_game", "app.solitaire.play", "low", `{"seed":7}`},
	{"solitaire", "move", "app.solitaire.play", "low", `{"from":"stock","to":"waste"}`},
}

// js is v as JSON text.
func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// fields wants a success and returns its result, a JSON object holding at least keys.
func fields(t *testing.T, what string, r ipc.Response, keys ...string) map[string]any {
	t.Helper()
	wantOK(t, what, r)
	var m map[string]any
	if err := json.Unmarshal(r.Body.Result, &m); err != nil {
		t.Fatalf("%s: the result is not an object: %v: %s", what, err, r.Body.Result)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: the result has no %q: %s", what, k, r.Body.Result)
		}
	}
	return m
}

// decodeAs wants a success and decodes its result into a T.
func decodeAs[T any](t *testing.T, what string, r ipc.Response) T {
	t.Helper()
	wantOK(t, what, r)
	var v T
	if err := json.Unmarshal(r.Body.Result, &v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, r.Body.Result)
	}
	return v
}

// wantUndo wants an undo token whose window ends about window from now.
func wantUndo(t *testing.T, what string, r ipc.Response, window time.Duration) string {
	t.Helper()
	if r.Body.UndoToken == "" {
		t.Fatalf("%s: no undo token: %+v", what, r.Body)
	}
	now := time.Now()
	until := time.UnixMilli(r.Body.UndoUntil)
	if until.Before(now.Add(window-10*time.Second)) || until.After(now.Add(window+time.Second)) {
		t.Errorf("%s: undo_until is %v from now, want about %v", what, until.Sub(now).Round(time.Second), window)
	}
	return r.Body.UndoToken
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// fileText is the file's content, or "<absent>".
func fileText(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "<absent>"
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// token asks for grants (with constraints when not nil) and approves the consent request when
// the grants need one; the token comes back either way.
func (e *env) token(a agent, grants []string, constraints map[string]any) string {
	e.t.Helper()
	body := map[string]any{"capabilities": grants, "duration": 600, "reason": "fleet test"}
	if constraints != nil {
		body["constraints"] = constraints
	}
	needs := slices.ContainsFunc(grants, func(g string) bool {
		return slices.ContainsFunc(fleet, func(c fleetCap) bool { return c.perm == g && c.risk != "low" })
	})
	if needs {
		return e.approvedToken(a, body).Token
	}
	ans := e.mustToken(a, body)
	if ans.ConsentID != "" {
		e.t.Fatalf("a low-risk token %v asked for consent", grants)
	}
	return ans.Token
}

// GET /v1/capabilities lists every capability of the fleet to a user client, at Tier 1, with
// the token document's permission and risk, and none of them to a public client (every one is
// for users).
func TestFleetCapabilitiesListed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	list := func(a agent) map[string]ipc.Tool {
		status, raw := e.do(a, "GET", "/v1/capabilities", nil)
		if status != http.StatusOK {
			t.Fatalf("HTTP %d: %s", status, raw)
		}
		var l struct{ Capabilities []ipc.Tool }
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		out := map[string]ipc.Tool{}
		for _, c := range l.Capabilities {
			if c.App != "notes" {
				out[c.App+"."+c.Method] = c
			}
		}
		return out
	}
	got := list(e.addClient("usr", "user"))
	for _, c := range fleet {
		name := c.app + "." + c.method
		tool, ok := got[name]
		if !ok {
			t.Errorf("%s is not listed", name)
			continue
		}
		if want := fmt.Sprintf("%s.org.capgate.%s.%s", c.app, c.app, c.method); tool.ID != want {
			t.Errorf("%s: id %q, want %q", name, tool.ID, want)
		}
		if tool.Permission != c.perm || tool.Risk != c.risk || tool.Tier != 1 {
			t.Errorf("%s: permission %q risk %q tier %d, want %q %q 1", name, tool.Permission, tool.Risk, tool.Tier, c.perm, c.risk)
		}
		if len(tool.Parameters) == 0 || len(tool.Returns) == 0 || tool.Description == "" {
			t.Errorf("%s: incomplete listing %+v", name, tool)
		}
		// A low-risk read (side effects none or read) needs no token from a user client.
		if reads := c.risk == "low" && (tool.SideEffects == "none" || tool.SideEffects == "read"); tool.NeedsConsent == reads {
			t.Errorf("%s: needs_consent %v, a low-risk read %v", name, tool.NeedsConsent, reads)
		}
	}
	if len(got) != len(fleet) {
		t.Errorf("%d fleet capabilities listed, want %d", len(got), len(fleet))
	}
	if pub := list(e.addClient("pub", "public")); len(pub) != 0 {
		t.Errorf("a public client sees the fleet: %v", slices.Sorted(maps.Keys(pub)))
	}
}

// Every method of every app, called with a token for another permission, is
// CAPABILITY_DENIED naming the permission it needs, and changes nothing in any app.
func TestFleetScopeDenied(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	ws := e.g.Workspace()
	writeFile(t, filepath.Join(ws, "keep.txt"), "keep")
	writeFile(t, filepath.Join(ws, "hello.star"), `print("hello")`+"\n")

	readers := e.token(alice, []string{"app.solitaire.read", "system.settings.read", "app.calc.read", "app.terminal.history", "app.editor.read"}, nil)
	stateBefore := fields(t, "the game before", e.query(alice, "solitaire", "get_game_state", `{}`, readers), "seed", "moves")

	syslogOnly := e.token(alice, []string{"app.syslog.read"}, nil)
	calcOnly := e.token(alice, []string{"app.calc.compute"}, nil)
	for _, c := range fleet {
		t.Run(c.app+"."+c.method, func(t *testing.T) {
			tok := syslogOnly
			if c.perm == "app.syslog.read" {
				tok = calcOnly
			}
			r := e.callApp(alice, c.app, c.method, c.params, tok)
			wantCode(t, c.app+"."+c.method, r, "CAPABILITY_DENIED")
			if !strings.Contains(r.Body.ErrorMessage, c.perm) {
				t.Errorf("the refusal %q does not name %s", r.Body.ErrorMessage, c.perm)
			}
		})
	}

	// Nothing changed anywhere.
	if got := fileText(filepath.Join(ws, "keep.txt")); got != "keep" {
		t.Errorf("keep.txt holds %q", got)
	}
	for _, name := range []string{"new.txt", "newdir", "saved.txt", "ran.txt"} {
		if exists(filepath.Join(ws, name)) {
			t.Errorf("%s was made by a refused call", name)
		}
	}
	if v := fields(t, "theme", e.query(alice, "settings", "get_setting", `{"category":"appearance","key":"theme"}`, readers), "value"); v["value"] != "dark" {
		t.Errorf("the theme is %v", v["value"])
	}
	if v := fields(t, "calc value", e.query(alice, "calc", "get_value", `{}`, readers), "display"); v["display"] != "0" {
		t.Errorf("the calculator shows %v", v["display"])
	}
	if v := fields(t, "history", e.query(alice, "terminal", "history", `{}`, readers), "total"); v["total"] != 0.0 {
		t.Errorf("the terminal ran %v commands", v["total"])
	}
	if v := fields(t, "buffer", e.query(alice, "editor", "get_buffer", `{}`, readers), "content", "filename"); v["content"] != "" || v["filename"] != "" {
		t.Errorf("the editor's buffer changed: %v", v)
	}
	stateAfter := fields(t, "the game after", e.query(alice, "solitaire", "get_game_state", `{}`, readers), "seed", "moves")
	if stateAfter["seed"] != stateBefore["seed"] || stateAfter["moves"] != stateBefore["moves"] || stateAfter["stock_count"] != stateBefore["stock_count"] {
		t.Errorf("the game changed: %v, then %v", stateBefore, stateAfter)
	}
	py := e.token(alice, []string{"app.python.read_output"}, nil)
	if v := fields(t, "python output", e.query(alice, "python", "read_output", `{}`, py), "status"); v["status"] != "none" {
		t.Errorf("a script ran: %v", v)
	}
}

// The token document's sensitive operations: a token for fs.delete, app.terminal.execute,
// app.python.execute or system.settings.write is issued only with the person's consent. The
// request waits for them (202 CONSENT_REQUIRED when they do not answer in time); denied, it is
// CONSENT_DENIED and no token; approved, the token works.
func TestFleetAlwaysConsent(t *testing.T) {
	e, alice := sandboxEnv(t, options{}, "alice")
	ws := e.g.Workspace()
	writeFile(t, filepath.Join(ws, "doomed.txt"), "doomed")

	if ans := e.mustToken(alice, map[string]any{"capabilities": []string{"fs.read"}, "duration": 60}); ans.ConsentID != "" {
		t.Fatalf("a token for fs.read (low risk) asked for consent: %+v", ans)
	}
	cases := []struct {
		perm  string
		use   func(tok string) ipc.Response
		check func(t *testing.T, r ipc.Response)
	}{
		{"fs.delete", func(tok string) ipc.Response {
			return e.callApp(alice, "files", "delete_file", `{"path":"doomed.txt"}`, tok)
		}, func(t *testing.T, r ipc.Response) {
			if exists(filepath.Join(ws, "doomed.txt")) {
				t.Error("the approved delete left the file")
			}
		}},
		{"app.terminal.execute", func(tok string) ipc.Response {
			return e.callApp(alice, "terminal", "execute_command", `{"command":"echo consented"}`, tok)
		}, func(t *testing.T, r ipc.Response) {
			if v := fields(t, "echo", r, "stdout"); v["stdout"] != "consented\n" {
				t.Errorf("stdout %q", v["stdout"])
			}
		}},
		{"app.python.execute", func(tok string) ipc.Response {
			return e.callApp(alice, "python", "execute_script", `{"code":"print(6 * 7)"}`, tok)
		}, func(t *testing.T, r ipc.Response) {
			if v := fields(t, "script", r, "output"); v["output"] != "42\n" {
				t.Errorf("output %q", v["output"])
			}
		}},
		{"system.settings.write", func(tok string) ipc.Response {
			return e.callApp(alice, "settings", "set_setting", `{"category":"sound","key":"master_volume","value":30}`, tok)
		}, func(t *testing.T, r ipc.Response) {
			if v := fields(t, "set", r, "new_value"); v["new_value"] != 30.0 {
				t.Errorf("new_value %v", v["new_value"])
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.perm, func(t *testing.T) {
			body := map[string]any{"capabilities": []string{tc.perm}, "duration": 600, "reason": "needs " + tc.perm}
			got := e.answerNext(consent.KindToken, func(ctx context.Context, id string) error { return e.g.Consent.Deny(ctx, id, "person") })
			status, ans := e.requestToken(alice, body)
			id := <-got
			if status != http.StatusForbidden || ans.ErrorCode != "CONSENT_DENIED" || ans.Token != "" {
				t.Fatalf("denied: HTTP %d %+v", status, ans)
			}
			c := e.consentState(id)
			if c.State != store.ConsentDenied || c.Kind != consent.KindToken || !strings.Contains(string(c.Payload), tc.perm) {
				t.Errorf("the denied request: %+v %s", c, c.Payload)
			}

			approved := e.approvedToken(alice, body)
			if c := e.consentState(approved.ConsentID); c.State != store.ConsentApproved {
				t.Errorf("the approved request: %+v", c)
			}
			r := tc.use(approved.Token)
			wantOK(t, tc.perm+" with the approved token", r)
			tc.check(t, r)
		})
	}

	// Unanswered, the request waits as long as it lives, then says it expired, naming it.
	short := newEnv(t, options{consentWait: 150 * time.Millisecond, consentTTL: 300 * time.Millisecond})
	bob := short.addClient("bob", "user")
	for _, tc := range cases {
		status, ans := short.requestToken(bob, map[string]any{"capabilities": []string{tc.perm}, "duration": 600})
		if status != http.StatusForbidden || ans.ErrorCode != "CONSENT_DENIED" || ans.Consent == nil || ans.Token != "" || !strings.Contains(ans.ErrorMessage, "expired") {
			t.Fatalf("%s unanswered: HTTP %d %+v", tc.perm, status, ans)
		}
		if c := short.consentState(ans.Consent.ID); c.State != store.ConsentExpired || c.Kind != consent.KindToken {
			t.Errorf("%s: the expired request %+v", tc.perm, c)
		}
	}
}

// The Files app: the document's Example 4 and every method's answer, undo of write_file,
// delete_file and create_file within their window, and undo refused after it.
func TestFleetFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	bob := e.addClient("bob", "user")
	ws := e.g.Workspace()
	const notes = "File content here..."
	writeFile(t, filepath.Join(ws, "notes.txt"), notes)
	writeFile(t, filepath.Join(ws, "old_file.txt"), "old")
	if err := os.Mkdir(filepath.Join(ws, "projects"), 0o755); err != nil {
		t.Fatal(err)
	}
	read := e.token(alice, []string{"fs.read"}, nil)
	rw := e.token(alice, []string{"fs.read", "fs.write", "fs.create", "fs.delete"}, nil)

	// Example 4: list a folder, then read a file in it.
	list := fields(t, "list_directory", e.query(alice, "files", "list_directory", js(map[string]any{"path": ws}), read), "path", "entries", "count")
	if list["path"] != ws {
		t.Errorf("path %v, want %s", list["path"], ws)
	}
	entries, _ := list["entries"].([]any)
	if list["count"] != float64(len(entries)) || len(entries) != 3 {
		t.Errorf("count %v, %d entries, want 3", list["count"], len(entries))
	}
	perm := regexp.MustCompile(`^[-rwx]{9}$`)
	byName := map[string]map[string]any{}
	for _, x := range entries {
		m, _ := x.(map[string]any)
		byName[fmt.Sprint(m["name"])] = m
		if p, _ := m["permissions"].(string); !perm.MatchString(p) {
			t.Errorf("%v: permissions %q", m["name"], p)
		}
		if mod, _ := m["modified"].(float64); mod < float64(time.Now().Add(-time.Hour).Unix()) {
			t.Errorf("%v: modified %v", m["name"], m["modified"])
		}
	}
	if f := byName["notes.txt"]; f == nil || f["type"] != "file" || f["size"] != float64(len(notes)) {
		t.Errorf("notes.txt: %v", f)
	}
	if d := byName["projects"]; d == nil || d["type"] != "directory" {
		t.Errorf("projects: %v", d)
	}
	rd := fields(t, "read_file", e.query(alice, "files", "read_file", js(map[string]any{"path": filepath.Join(ws, "notes.txt")}), read), "path", "content", "size", "encoding")
	if rd["content"] != notes || rd["size"] != float64(len(notes)) || rd["encoding"] != "utf-8" || rd["path"] != filepath.Join(ws, "notes.txt") {
		t.Errorf("read_file: %v", rd)
	}
	page := fields(t, "read_file page", e.query(alice, "files", "read_file", `{"path":"notes.txt","offset":5,"length":7}`, read), "content", "returned", "eof")
	if page["content"] != "content" || page["returned"] != 7.0 || page["eof"] != false {
		t.Errorf("a page of read_file: %v", page)
	}

	// The document's error example: a token for fs.read does not write.
	r := e.callApp(alice, "files", "write_file", `{"path":"notes.txt","content":"x"}`, read)
	wantCode(t, "write_file under fs.read", r, "CAPABILITY_DENIED")
	if !strings.Contains(r.Body.ErrorMessage, "fs.write") || fileText(filepath.Join(ws, "notes.txt")) != notes {
		t.Errorf("write_file under fs.read: %q", r.Body.ErrorMessage)
	}

	// The document's write_file, then append.
	r = e.callApp(alice, "files", "write_file", js(map[string]any{"path": filepath.Join(ws, "new_file.txt"), "content": "Hello, World!", "mode": "overwrite"}), rw)
	if w := fields(t, "write_file", r, "status", "bytes_written"); w["status"] != "success" || w["bytes_written"] != 13.0 || w["created"] != true {
		t.Errorf("write_file: %v", w)
	}
	wantUndo(t, "write_file", r, 5*time.Minute)
	r = e.callApp(alice, "files", "write_file", `{"path":"new_file.txt","content":"!!","mode":"append"}`, rw)
	if w := fields(t, "append", r, "status", "bytes_written"); w["bytes_written"] != 2.0 || w["created"] != false {
		t.Errorf("append: %v", w)
	}
	if got := fileText(filepath.Join(ws, "new_file.txt")); got != "Hello, World!!!" {
		t.Errorf("new_file.txt holds %q", got)
	}

	// create_file and create_directory.
	r = e.callApp(alice, "files", "create_file", `{"path":"created.txt","content":"c"}`, rw)
	if c := fields(t, "create_file", r, "status", "created", "bytes_written"); c["created"] != true || c["bytes_written"] != 1.0 {
		t.Errorf("create_file: %v", c)
	}
	createUndo := wantUndo(t, "create_file", r, 5*time.Minute)
	r = e.callApp(alice, "files", "create_directory", `{"path":"made"}`, rw)
	if c := fields(t, "create_directory", r, "status", "created"); c["created"] != true {
		t.Errorf("create_directory: %v", c)
	}
	if fi, err := os.Stat(filepath.Join(ws, "made")); err != nil || !fi.IsDir() {
		t.Errorf("made is not a folder: %v", err)
	}
	wantOK(t, "undo create_file", e.undo(alice, createUndo))
	if exists(filepath.Join(ws, "created.txt")) {
		t.Error("undo of create_file left the file")
	}

	// The document's delete_file.
	r = e.callApp(alice, "files", "delete_file", js(map[string]any{"path": filepath.Join(ws, "old_file.txt")}), rw)
	if d := fields(t, "delete_file", r, "status", "deleted", "type"); d["status"] != "success" || d["deleted"] != true || d["type"] != "file" {
		t.Errorf("delete_file: %v", d)
	}
	if exists(filepath.Join(ws, "old_file.txt")) {
		t.Error("delete_file left the file")
	}

	t.Run("undo write_file restores the bytes", func(t *testing.T) {
		r := e.callApp(alice, "files", "write_file", `{"path":"notes.txt","content":"changed"}`, rw)
		u := wantUndo(t, "overwrite", r, 5*time.Minute)
		if got := fileText(filepath.Join(ws, "notes.txt")); got != "changed" {
			t.Fatalf("notes.txt holds %q", got)
		}
		wantCode(t, "bob undoing alice's write", e.undo(bob, u), "INVALID_TOKEN")
		if got := fileText(filepath.Join(ws, "notes.txt")); got != "changed" {
			t.Fatalf("another client's undo changed the file to %q", got)
		}
		if got := fields(t, "undo", e.undo(alice, u), "undone"); got["undone"] != true {
			t.Errorf("undo: %v", got)
		}
		if got := fileText(filepath.Join(ws, "notes.txt")); got != notes {
			t.Errorf("after undo notes.txt holds %q", got)
		}
		wantCode(t, "the same undo again", e.undo(alice, u), "INVALID_TOKEN")
	})
	t.Run("undo delete_file restores the file", func(t *testing.T) {
		r := e.callApp(alice, "files", "delete_file", `{"path":"notes.txt"}`, rw)
		u := wantUndo(t, "delete", r, 5*time.Minute)
		if exists(filepath.Join(ws, "notes.txt")) {
			t.Fatal("the delete left the file")
		}
		wantOK(t, "undo delete", e.undo(alice, u))
		if got := fileText(filepath.Join(ws, "notes.txt")); got != notes {
			t.Errorf("after undo notes.txt holds %q", got)
		}
	})
	t.Run("undo after the window", func(t *testing.T) {
		r := e.callApp(alice, "files", "write_file", `{"path":"notes.txt","content":"late"}`, rw)
		u := wantUndo(t, "overwrite", r, 5*time.Minute)
		e.expireUndo(u)
		wantCode(t, "undo after the window", e.undo(alice, u), "TOKEN_EXPIRED")
		if got := fileText(filepath.Join(ws, "notes.txt")); got != "late" {
			t.Errorf("an expired undo changed the file to %q", got)
		}
		wantCode(t, "undo after the window, again", e.undo(alice, u), "INVALID_TOKEN")
		wantCode(t, "a forged undo token", e.undo(alice, "undo_0123456789abcdef01234567"), "INVALID_TOKEN")
	})
}

// fsFixture lays out a workspace with ways out of it: ws/docs/notes.txt and ws/other.txt
// inside; outside/secret.txt and outside/secret.star in a folder beside it; ws/escape a link
// to that folder, ws/docs/link.txt a link to the secret, ws/link.star a link to the secret
// script; and DATA/evil.star in the gateway's data folder, the workspace's parent, which also
// holds the gateway's key.
type fsFixture struct {
	ws, outside, data string
}

const secretText = "TOP-SECRET"

func newFSFixture(t *testing.T, e *env) fsFixture {
	t.Helper()
	f := fsFixture{ws: e.g.Workspace(), outside: t.TempDir(), data: e.dataDir}
	writeFile(t, filepath.Join(f.ws, "docs", "notes.txt"), "inside")
	writeFile(t, filepath.Join(f.ws, "other.txt"), "other")
	writeFile(t, filepath.Join(f.ws, "hello.star"), `print("hello from a file")`+"\n")
	writeFile(t, filepath.Join(f.outside, "secret.txt"), secretText)
	writeFile(t, filepath.Join(f.outside, "secret.star"), `print("`+secretText+`")`+"\n")
	writeFile(t, filepath.Join(f.data, "evil.star"), `print("`+secretText+`")`+"\n")
	symlink(t, f.outside, filepath.Join(f.ws, "escape"))
	symlink(t, filepath.Join(f.outside, "secret.txt"), filepath.Join(f.ws, "docs", "link.txt"))
	symlink(t, filepath.Join(f.outside, "secret.star"), filepath.Join(f.ws, "link.star"))
	return f
}

// untouched fails unless the folder outside holds only what the fixture put there, unchanged,
// the data folder holds nothing planted, and the links in the workspace are still there.
func (f fsFixture) untouched(t *testing.T) {
	t.Helper()
	names, err := os.ReadDir(f.outside)
	if err != nil || len(names) != 2 {
		t.Errorf("the folder outside holds %v (%v)", names, err)
	}
	if got := fileText(filepath.Join(f.outside, "secret.txt")); got != secretText {
		t.Errorf("the secret holds %q", got)
	}
	for _, name := range []string{"planted.txt", "planted"} {
		if exists(filepath.Join(f.data, name)) {
			t.Errorf("%s was planted in the data folder", name)
		}
	}
	for _, name := range []string{"evil.star", gateway.KeyFile} {
		if !exists(filepath.Join(f.data, name)) {
			t.Errorf("%s is gone from the data folder", name)
		}
	}
	for _, l := range []string{"escape", "docs/link.txt", "link.star"} {
		if fi, err := os.Lstat(filepath.Join(f.ws, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link %s is gone (%v)", l, err)
		}
	}
}

// noSecret fails when an answer holds the secret.
func noSecret(t *testing.T, what string, r ipc.Response) {
	t.Helper()
	if strings.Contains(string(r.Body.Result), secretText) || strings.Contains(r.Body.ErrorMessage, secretText) {
		t.Errorf("%s: the answer holds the secret", what)
	}
}

// pathCall is a call whose path leads out of the workspace, and the code the app's own
// confinement refuses it with ("" for PERMISSION_DENIED).
type pathCall struct{ app, method, params, appCode string }

// wantAppRefusal wants the app's own refusal of c.
func wantAppRefusal(t *testing.T, c pathCall, r ipc.Response) {
	t.Helper()
	code := c.appCode
	if code == "" {
		code = "PERMISSION_DENIED"
	}
	wantCode(t, "app confinement: "+c.method+" "+c.params, r, code)
	noSecret(t, c.params, r)
}

func (f fsFixture) filesEscapes() []pathCall {
	p := func(method string, kv ...any) pathCall {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return pathCall{app: "files", method: method, params: js(m)}
	}
	return []pathCall{
		p("read_file", "path", "../"+gateway.KeyFile),
		p("read_file", "path", f.ws+"/../capgate.key"),
		p("read_file", "path", "docs/../../capgate.key"),
		p("read_file", "path", "escape/secret.txt"),
		p("read_file", "path", f.ws+"/escape/secret.txt"),
		p("read_file", "path", "docs/link.txt"),
		p("read_file", "path", f.outside+"/secret.txt"),
		p("list_directory", "path", "escape"),
		p("list_directory", "path", ".."),
		p("list_directory", "path", f.outside),
		p("write_file", "path", "escape/secret.txt", "content", "pwned"),
		p("write_file", "path", "escape/new.txt", "content", "pwned"),
		// The files app answers a write to a link with EXECUTION_FAILED ("name its target
		// instead"), as it answers one to a folder.
		{"files", "write_file", `{"content":"pwned","path":"docs/link.txt"}`, "EXECUTION_FAILED"},
		p("write_file", "path", f.outside+"/new.txt", "content", "pwned"),
		p("write_file", "path", "../planted.txt", "content", "pwned"),
		p("create_file", "path", "escape/created.txt"),
		p("create_file", "path", "../planted.txt"),
		p("create_directory", "path", "escape/newdir"),
		p("create_directory", "path", "../planted"),
		p("delete_file", "path", "escape/secret.txt"),
		p("delete_file", "path", f.outside+"/secret.txt"),
		p("delete_file", "path", "../evil.star"),
	}
}

// Paths that leave the workspace, by "..", by a link in it pointing outside, or by naming
// another folder, are refused by a token's allowed_paths with CAPABILITY_DENIED before the
// app runs; under a token without path constraints the app's own confinement refuses them;
// either way nothing outside is read or changed. A token confined to a subfolder refuses the
// rest of the workspace.
func TestFleetFilesPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	f := newFSFixture(t, e)
	all := []string{"fs.read", "fs.write", "fs.create", "fs.delete"}
	confined := e.token(alice, all, map[string]any{"allowed_paths": []string{f.ws + "/**"}})
	free := e.token(alice, all, nil)

	for _, c := range f.filesEscapes() {
		t.Run("allowed_paths/"+c.method+" "+c.params, func(t *testing.T) {
			r := e.callApp(alice, c.app, c.method, c.params, confined)
			wantCode(t, c.params, r, "CAPABILITY_DENIED")
			if !strings.Contains(r.Body.ErrorMessage, "allowed_paths") {
				t.Errorf("the refusal %q does not name the rule", r.Body.ErrorMessage)
			}
			if strings.Contains(r.Body.ErrorMessage, f.outside) || strings.Contains(r.Body.ErrorMessage, "capgate.key") {
				t.Errorf("the refusal echoes the path: %q", r.Body.ErrorMessage)
			}
		})
	}
	for _, c := range f.filesEscapes() {
		t.Run("app confinement/"+c.method+" "+c.params, func(t *testing.T) {
			wantAppRefusal(t, c, e.callApp(alice, c.app, c.method, c.params, free))
		})
	}
	f.untouched(t)

	// What the constraint allows runs: the guard does not refuse everything.
	if v := fields(t, "inside", e.callApp(alice, "files", "read_file", `{"path":"docs/notes.txt"}`, confined), "content"); v["content"] != "inside" {
		t.Errorf("read inside: %v", v)
	}
	// A token confined to docs/ refuses the rest of the workspace.
	docs := e.token(alice, []string{"fs.read"}, map[string]any{"allowed_paths": []string{f.ws + "/docs/**"}})
	wantOK(t, "docs/notes.txt under docs/**", e.callApp(alice, "files", "read_file", `{"path":"docs/notes.txt"}`, docs))
	for _, p := range []string{"other.txt", f.ws + "/other.txt", "docs/../other.txt", f.ws, "docs/link.txt"} {
		wantCode(t, p+" under docs/**", e.callApp(alice, "files", "read_file", js(map[string]string{"path": p}), docs), "CAPABILITY_DENIED")
	}
}

// The Editor app: open_file, get_buffer (the document's shape), set_buffer and its undo
// (within and after the window), save_file and its undo; paths out of the workspace refused.
func TestFleetEditor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	f := newFSFixture(t, e)
	ws := f.ws
	const code = "int main() {\n    return 0;\n}"
	writeFile(t, filepath.Join(ws, "code.c"), code)
	read := e.token(alice, []string{"app.editor.read"}, nil)
	edit := e.token(alice, []string{"app.editor.file_open", "app.editor.write", "app.editor.file_save"}, nil)

	open := e.callApp(alice, "editor", "open_file", js(map[string]string{"path": filepath.Join(ws, "code.c")}), edit)
	if v := fields(t, "open_file", open, "status", "filename", "line_count"); v["filename"] != "code.c" || v["line_count"] != 3.0 || v["modified"] != false {
		t.Errorf("open_file: %v", v)
	}
	wantUndo(t, "open_file", open, time.Minute)
	buf := fields(t, "get_buffer", e.query(alice, "editor", "get_buffer", `{}`, read), "content", "filename", "modified", "line_count", "cursor_line", "cursor_col")
	if buf["content"] != code || buf["filename"] != "code.c" || buf["modified"] != false || buf["line_count"] != 3.0 || buf["cursor_line"] != 1.0 || buf["cursor_col"] != 0.0 {
		t.Errorf("get_buffer: %v", buf)
	}

	const modified = "// Modified content\nint main() { return 0; }"
	set := e.callApp(alice, "editor", "set_buffer", js(map[string]any{"content": modified, "cursor": map[string]int{"line": 2, "column": 4}}), edit)
	if v := fields(t, "set_buffer", set, "status", "previous_size", "size"); v["previous_size"] != float64(len(code)) || v["size"] != float64(len(modified)) || v["modified"] != true {
		t.Errorf("set_buffer: %v", v)
	}
	setUndo := wantUndo(t, "set_buffer", set, time.Minute)
	buf = fields(t, "get_buffer after set", e.query(alice, "editor", "get_buffer", `{}`, read), "content")
	if buf["content"] != modified || buf["modified"] != true || buf["cursor_line"] != 2.0 || buf["cursor_col"] != 4.0 {
		t.Errorf("get_buffer after set_buffer: %v", buf)
	}
	wantOK(t, "undo set_buffer", e.undo(alice, setUndo))
	buf = fields(t, "get_buffer after undo", e.query(alice, "editor", "get_buffer", `{}`, read), "content")
	if buf["content"] != code || buf["modified"] != false {
		t.Errorf("get_buffer after undo: %v", buf)
	}
	wantCode(t, "undo set_buffer again", e.undo(alice, setUndo), "INVALID_TOKEN")

	// After the window, the buffer stays as set.
	late := wantUndo(t, "set_buffer", e.callApp(alice, "editor", "set_buffer", `{"content":"late"}`, edit), time.Minute)
	e.expireUndo(late)
	wantCode(t, "undo set_buffer after the window", e.undo(alice, late), "TOKEN_EXPIRED")
	if buf := fields(t, "get_buffer", e.query(alice, "editor", "get_buffer", `{}`, read), "content"); buf["content"] != "late" {
		t.Errorf("an expired undo changed the buffer: %v", buf)
	}

	// save_file writes the buffer; its undo puts back the file's bytes.
	save := e.callApp(alice, "editor", "save_file", `{}`, edit)
	if v := fields(t, "save_file", save, "status", "path", "size"); v["path"] != filepath.Join(ws, "code.c") || v["size"] != 4.0 || v["created"] != false {
		t.Errorf("save_file: %v", v)
	}
	if got := fileText(filepath.Join(ws, "code.c")); got != "late" {
		t.Errorf("code.c holds %q", got)
	}
	wantOK(t, "undo save_file", e.undo(alice, wantUndo(t, "save_file", save, time.Minute)))
	if got := fileText(filepath.Join(ws, "code.c")); got != code {
		t.Errorf("after undo code.c holds %q", got)
	}
	saveAs := e.callApp(alice, "editor", "save_file", `{"path":"copy.c"}`, edit)
	if v := fields(t, "save as", saveAs, "created", "filename"); v["created"] != true || v["filename"] != "copy.c" {
		t.Errorf("save as: %v", v)
	}
	if got := fileText(filepath.Join(ws, "copy.c")); got != "late" {
		t.Errorf("copy.c holds %q", got)
	}

	// Paths out of the workspace.
	escapes := []pathCall{
		{"editor", "open_file", `{"path":"../capgate.key"}`, ""},
		{"editor", "open_file", js(map[string]string{"path": ws + "/../capgate.key"}), ""},
		{"editor", "open_file", `{"path":"escape/secret.txt"}`, ""},
		{"editor", "open_file", `{"path":"docs/link.txt"}`, ""},
		{"editor", "open_file", js(map[string]string{"path": f.outside + "/secret.txt"}), ""},
		{"editor", "save_file", `{"path":"escape/secret.txt"}`, ""},
		{"editor", "save_file", `{"path":"escape/new.txt"}`, ""},
		{"editor", "save_file", `{"path":"docs/link.txt"}`, "INVALID_REQUEST"}, // refuses to write through a link
		{"editor", "save_file", js(map[string]string{"path": f.outside + "/new.txt"}), ""},
		{"editor", "save_file", `{"path":"../planted.txt"}`, ""},
	}
	confined := e.token(alice, []string{"app.editor.file_open", "app.editor.file_save"}, map[string]any{"allowed_paths": []string{ws + "/**"}})
	for _, c := range escapes {
		r := e.callApp(alice, c.app, c.method, c.params, confined)
		wantCode(t, "allowed_paths: "+c.method+" "+c.params, r, "CAPABILITY_DENIED")
	}
	for _, c := range escapes {
		wantAppRefusal(t, c, e.callApp(alice, c.app, c.method, c.params, edit))
	}
	f.untouched(t)
	if buf := fields(t, "get_buffer at the end", e.query(alice, "editor", "get_buffer", `{}`, read), "content"); buf["content"] != "late" || buf["filename"] != "copy.c" {
		t.Errorf("a refused open changed the buffer: %v", buf)
	}
	wantOK(t, "open inside under allowed_paths", e.callApp(alice, "editor", "open_file", `{"path":"docs/notes.txt"}`, confined))
}

// The Terminal app: the document's Example 2 (ps), get_cwd, read_output, a background command
// fed through write_input, history, a non-zero exit as a result, a command past its timeout
// (TIMEOUT, and its process group killed), and a cwd out of the workspace refused.
func TestFleetTerminal(t *testing.T) {
	e, alice := sandboxEnv(t, options{}, "alice")
	bob := e.addClient("bob", "user")
	f := newFSFixture(t, e)
	ws := f.ws
	tok := e.token(alice, []string{"app.terminal.execute", "app.terminal.read_output", "app.terminal.write_input"}, nil)
	hist := e.token(alice, []string{"app.terminal.history"}, nil)

	// Example 2.
	ps := fields(t, "ps", e.callApp(alice, "terminal", "execute_command", `{"command":"ps","timeout":60000}`, tok), "status", "exit_code", "stdout", "stderr", "duration_ms")
	if ps["status"] != "success" || ps["exit_code"] != 0.0 || !strings.Contains(fmt.Sprint(ps["stdout"]), "PID") || ps["stderr"] != "" {
		t.Errorf("ps: %v", ps)
	}
	if d, _ := ps["duration_ms"].(float64); d < 0 {
		t.Errorf("duration_ms %v", ps["duration_ms"])
	}
	psID := ps["id"]

	if cwd := fields(t, "get_cwd", e.query(alice, "terminal", "get_cwd", `{}`, tok), "cwd"); cwd["cwd"] != ws {
		t.Errorf("get_cwd: %v, want %s", cwd, ws)
	}
	out := fields(t, "read_output", e.query(alice, "terminal", "read_output", js(map[string]any{"id": psID}), tok), "command", "status", "stdout")
	if out["command"] != "ps" || out["status"] != "success" || out["stdout"] != ps["stdout"] {
		t.Errorf("read_output: %v", out)
	}
	ls := fields(t, "ls in docs", e.callApp(alice, "terminal", "execute_command", `{"command":"ls","cwd":"docs"}`, tok), "stdout")
	if ls["stdout"] != "link.txt\nnotes.txt\n" {
		t.Errorf("ls in docs: %q", ls["stdout"])
	}
	// A non-zero exit is a result, with status error.
	fail := fields(t, "ls of nothing", e.callApp(alice, "terminal", "execute_command", `{"command":"ls no-such-file"}`, tok), "status", "exit_code", "stderr")
	if fail["status"] != "error" || fail["exit_code"] == 0.0 || fail["stderr"] == "" {
		t.Errorf("a failing command: %v", fail)
	}

	// A background command, fed through write_input, read through read_output.
	bg := fields(t, "background cat", e.callApp(alice, "terminal", "execute_command", `{"command":"cat","background":true,"timeout":10000}`, tok), "status", "id")
	if bg["status"] != "running" {
		t.Fatalf("background: %v", bg)
	}
	bobs := e.token(bob, []string{"app.terminal.write_input", "app.terminal.read_output"}, nil)
	wantCode(t, "bob writing to alice's command", e.callApp(bob, "terminal", "write_input", js(map[string]any{"id": bg["id"], "input": "x"}), bobs), "INVALID_REQUEST")
	wantCode(t, "bob reading alice's command", e.query(bob, "terminal", "read_output", js(map[string]any{"id": psID}), bobs), "INVALID_REQUEST")
	in := fields(t, "write_input", e.callApp(alice, "terminal", "write_input", js(map[string]any{"id": bg["id"], "input": "hello\n", "close": true}), tok), "bytes_written", "closed")
	if in["bytes_written"] != 6.0 || in["closed"] != true {
		t.Errorf("write_input: %v", in)
	}
	var done map[string]any
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		done = fields(t, "read_output of the background command", e.query(alice, "terminal", "read_output", js(map[string]any{"id": bg["id"]}), tok), "status", "stdout")
		if done["status"] != "running" {
			break
		}
	}
	if done["status"] != "success" || done["stdout"] != "hello\n" {
		t.Errorf("the background command: %v", done)
	}

	// Past its timeout: TIMEOUT, and the command's process group is killed.
	start := time.Now()
	r := e.callApp(alice, "terminal", "execute_command", `{"command":"sleep 5","timeout":200}`, tok)
	wantCode(t, "sleep 5 with timeout 200", r, "TIMEOUT")
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the timed-out command held the call for %v", took)
	}
	wantCode(t, "a command that would write late", e.callApp(alice, "terminal", "execute_command",
		`{"command":"sh -c \"sleep 1 && touch late.txt\"","timeout":200}`, tok), "TIMEOUT")
	if last := fields(t, "read_output after the timeout", e.query(alice, "terminal", "read_output", `{}`, tok), "status"); last["status"] != "timeout" {
		t.Errorf("read_output after the timeout: %v", last)
	}

	// history: newest first, each with its status.
	h := fields(t, "history", e.query(alice, "terminal", "history", `{"count":10}`, hist), "entries", "total")
	entries, _ := h["entries"].([]any)
	if h["total"] != 6.0 || len(entries) != 6 {
		t.Fatalf("history: %v", h)
	}
	first, _ := entries[0].(map[string]any)
	lastEntry, _ := entries[5].(map[string]any)
	if first["status"] != "timeout" || lastEntry["command"] != "ps" || lastEntry["status"] != "success" || lastEntry["exit_code"] != 0.0 {
		t.Errorf("history entries: %v ... %v", first, lastEntry)
	}

	// A cwd out of the workspace: refused by allowed_paths, and by the app.
	confined := e.token(alice, []string{"app.terminal.execute"}, map[string]any{"allowed_paths": []string{ws + "/**"}})
	for _, cwd := range []string{"escape", "..", f.outside, ws + "/docs/../.."} {
		p := js(map[string]string{"command": "touch planted.txt", "cwd": cwd})
		wantCode(t, "allowed_paths: cwd "+cwd, e.callApp(alice, "terminal", "execute_command", p, confined), "CAPABILITY_DENIED")
		// The terminal refuses a cwd out of its folder as an invalid param.
		wantAppRefusal(t, pathCall{"terminal", "execute_command", p, "INVALID_REQUEST"}, e.callApp(alice, "terminal", "execute_command", p, tok))
	}
	wantOK(t, "a cwd inside under allowed_paths", e.callApp(alice, "terminal", "execute_command", `{"command":"ls","cwd":"docs"}`, confined))

	time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
	if exists(filepath.Join(ws, "late.txt")) {
		t.Error("the timed-out command went on running: late.txt exists")
	}
	f.untouched(t)
	for _, p := range []string{filepath.Join(ws, "planted.txt"), filepath.Join(f.data, "planted.txt")} {
		if exists(p) {
			t.Errorf("a refused command ran: %s exists", p)
		}
	}
}

// A token's command constraints refuse every spelling of a denied command and every command
// not allowed, before anything runs: the file the command would remove stays, and the
// terminal's history stays empty.
func TestFleetTerminalCommandConstraints(t *testing.T) {
	e, alice := sandboxEnv(t, options{}, "alice")
	ws := e.g.Workspace()
	x := filepath.Join(ws, "x")
	writeFile(t, x, "precious")
	hist := e.token(alice, []string{"app.terminal.history"}, nil)
	noRm := e.token(alice, []string{"app.terminal.execute"}, map[string]any{"denied_commands": []string{"rm -rf"}})
	lsEcho := e.token(alice, []string{"app.terminal.execute"}, map[string]any{"allowed_commands": []string{"ls", "echo"}})

	cases := []struct {
		name, tok, command string
	}{
		{"denied", noRm, "rm -rf x"},
		{"denied", noRm, "rm -fr x"},
		{"denied", noRm, "/bin/rm -r -f x"},
		{"denied", noRm, "/usr/bin/rm -rf x"},
		{"denied", noRm, "rm -r -f x"},
		{"denied", noRm, "rm -r --force x"},
		{"denied", noRm, "'rm' '-rf' x"},
		{"denied", noRm, "env rm -rf x"},
		{"denied", noRm, `sh -c "rm -rf x"`},
		{"denied", noRm, `bash -c 'rm -rf x'`},
		{"denied", noRm, "ls; rm -rf x"},
		{"denied", noRm, "ls && rm -rf x"},
		{"denied", noRm, "$(rm -rf x)"},
		{"not allowed", lsEcho, "cat /etc/passwd"},
		{"not allowed", lsEcho, "env cat /etc/passwd"},
		{"not allowed", lsEcho, `sh -c "cat /etc/passwd"`},
		{"not allowed", lsEcho, "ls && cat /etc/passwd"},
		{"not allowed", lsEcho, "echo $(cat /etc/passwd)"},
		{"not allowed", lsEcho, "rm -rf x"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/"+tc.command, func(t *testing.T) {
			r := e.callApp(alice, "terminal", "execute_command", js(map[string]string{"command": tc.command}), tc.tok)
			wantCode(t, tc.command, r, "CAPABILITY_DENIED")
			if strings.Contains(r.Body.ErrorMessage, "/etc/passwd") || strings.Contains(r.Body.ErrorMessage, "-rf") || strings.Contains(r.Body.ErrorMessage, "root:") {
				t.Errorf("the refusal echoes the command: %q", r.Body.ErrorMessage)
			}
		})
	}
	if got := fileText(x); got != "precious" {
		t.Fatalf("x holds %q: a refused command ran", got)
	}
	if h := fields(t, "history", e.query(alice, "terminal", "history", `{}`, hist), "total"); h["total"] != 0.0 {
		t.Fatalf("the terminal ran %v commands", h["total"])
	}

	// What the constraints allow runs.
	if v := fields(t, "ls", e.callApp(alice, "terminal", "execute_command", `{"command":"ls"}`, lsEcho), "stdout"); v["stdout"] != "x\n" {
		t.Errorf("ls: %v", v)
	}
	if v := fields(t, "echo", e.callApp(alice, "terminal", "execute_command", `{"command":"echo hi"}`, lsEcho), "stdout"); v["stdout"] != "hi\n" {
		t.Errorf("echo: %v", v)
	}
	if v := fields(t, "ls under noRm", e.callApp(alice, "terminal", "execute_command", `{"command":"ls -l"}`, noRm), "status"); v["status"] != "success" {
		t.Errorf("ls -l: %v", v)
	}
	if got := fileText(x); got != "precious" {
		t.Fatalf("x holds %q", got)
	}
}

// A denied command behind a program that runs its arguments as a command is denied too, as
// it is behind env, nice, nohup, timeout or sh -c: denied_commands ["rm -rf"] must not let
// "setsid rm -rf x" remove x.
func TestFleetTerminalDeniedCommandBehindOtherWrappers(t *testing.T) {
	e, alice := sandboxEnv(t, options{}, "alice")
	ws := e.g.Workspace()
	noRm := e.token(alice, []string{"app.terminal.execute"}, map[string]any{"denied_commands": []string{"rm -rf"}})
	for _, cmd := range []string{
		"stdbuf -oL rm -rf x",
		"ionice -c 3 rm -rf x",
		"taskset -c 0 rm -rf x",
		"flock x.lock rm -rf x",
		"su -c 'rm -rf x'",
		"setsid rm -rf x", // last: its rm leaves the command's session and may outlive the call
	} {
		t.Run(cmd, func(t *testing.T) {
			x := filepath.Join(ws, "x")
			writeFile(t, x, "precious")
			r := e.callApp(alice, "terminal", "execute_command", js(map[string]any{"command": cmd, "timeout": 3000}), noRm)
			if r.Body.ErrorCode != "CAPABILITY_DENIED" || !exists(x) {
				t.Fatalf("denied_commands [\"rm -rf\"] lets %q through (%s %s, x still there: %v)",
					cmd, r.Body.Status, r.Body.ErrorCode, exists(x))
			}
		})
	}
}

// An irreversible command waits out the delayed-commit window: cancelled by the person in it,
// it never runs; uncancelled, it runs at the window's end.
func TestFleetTerminalDelayedCommit(t *testing.T) {
	e, alice := sandboxEnv(t, options{delayedCommit: 700 * time.Millisecond}, "alice")
	ws := e.g.Workspace()
	tok := e.token(alice, []string{"app.terminal.execute"}, nil)

	got := e.answerNext(consent.KindCommit, func(ctx context.Context, id string) error { return e.g.Consent.Cancel(ctx, id, "person") })
	r := e.callApp(alice, "terminal", "execute_command", `{"command":"touch committed.txt"}`, tok)
	id := <-got
	wantCode(t, "cancelled command", r, "CONSENT_DENIED")
	if r.Body.Consent == nil || r.Body.Consent.ID != id {
		t.Errorf("the answer names %+v, the person cancelled %s", r.Body.Consent, id)
	}
	if exists(filepath.Join(ws, "committed.txt")) {
		t.Fatal("a cancelled command ran")
	}
	start := time.Now()
	wantOK(t, "uncancelled command", e.callApp(alice, "terminal", "execute_command", `{"command":"touch committed.txt"}`, tok))
	if took := time.Since(start); took < 700*time.Millisecond {
		t.Errorf("the command ran after %v, inside its window", took)
	}
	if !exists(filepath.Join(ws, "committed.txt")) {
		t.Fatal("the uncancelled command did not run")
	}
}

// The Python app: execute_script with the document's example (in Starlark), a failing script
// as a result, read_output, execute_file needing fs.read beside app.python.execute, script
// paths out of the workspace refused, and a script past its timeout.
func TestFleetPython(t *testing.T) {
	e, alice := sandboxEnv(t, options{}, "alice")
	f := newFSFixture(t, e)
	exec := e.token(alice, []string{"app.python.execute", "app.python.read_output"}, nil)

	ok := fields(t, "execute_script", e.callApp(alice, "python", "execute_script",
		js(map[string]any{"code": "print(\"Hello from Python!\")\nresult = 2 + 2\nprint(\"Result: %d\" % result)", "timeout": 5000}), exec),
		"status", "output", "error", "duration_ms")
	if ok["status"] != "success" || ok["output"] != "Hello from Python!\nResult: 4\n" || ok["error"] != nil {
		t.Errorf("execute_script: %v", ok)
	}
	bad := fields(t, "a failing script", e.callApp(alice, "python", "execute_script", `{"code":"x = 1\nx()\n"}`, exec), "status", "error")
	if msg, _ := bad["error"].(string); bad["status"] != "error" || !strings.HasPrefix(msg, "<script>:2:") {
		t.Errorf("a failing script: %v", bad)
	}
	if last := fields(t, "read_output", e.query(alice, "python", "read_output", `{}`, exec), "status", "output"); last["status"] != "error" {
		t.Errorf("read_output: %v", last)
	}

	// execute_file needs fs.read too.
	r := e.callApp(alice, "python", "execute_file", `{"path":"hello.star"}`, exec)
	wantCode(t, "execute_file without fs.read", r, "CAPABILITY_DENIED")
	if !strings.Contains(r.Body.ErrorMessage, "fs.read") {
		t.Errorf("the refusal %q does not name fs.read", r.Body.ErrorMessage)
	}
	both := e.token(alice, []string{"app.python.execute", "fs.read"}, nil)
	for _, p := range []string{"hello.star", filepath.Join(f.ws, "hello.star")} {
		v := fields(t, "execute_file "+p, e.callApp(alice, "python", "execute_file", js(map[string]string{"path": p}), both), "status", "output")
		if v["status"] != "success" || v["output"] != "hello from a file\n" {
			t.Errorf("execute_file %s: %v", p, v)
		}
	}
	readOnly := e.token(alice, []string{"fs.read"}, nil)
	wantCode(t, "execute_file with fs.read only", e.callApp(alice, "python", "execute_file", `{"path":"hello.star"}`, readOnly), "CAPABILITY_DENIED")

	// Scripts out of the workspace.
	escapes := []string{"../evil.star", f.ws + "/../evil.star", f.data + "/evil.star", "escape/secret.star", "link.star", f.outside + "/secret.star"}
	confined := e.token(alice, []string{"app.python.execute", "fs.read"}, map[string]any{"allowed_paths": []string{f.ws + "/**"}})
	for _, p := range escapes {
		r := e.callApp(alice, "python", "execute_file", js(map[string]string{"path": p}), confined)
		wantCode(t, "allowed_paths: "+p, r, "CAPABILITY_DENIED")
		c := pathCall{app: "python", method: "execute_file", params: js(map[string]string{"path": p})}
		wantAppRefusal(t, c, e.callApp(alice, c.app, c.method, c.params, both))
	}
	wantOK(t, "a script inside under allowed_paths", e.callApp(alice, "python", "execute_file", `{"path":"hello.star"}`, confined))
	if last := fields(t, "read_output", e.query(alice, "python", "read_output", `{}`, exec), "output"); strings.Contains(fmt.Sprint(last["output"]), secretText) {
		t.Error("a script from outside ran")
	}

	// Past its timeout. A loop of cheap steps races two limits: the timeout, and the step
	// limit (10,000,000 steps), which a fast machine reaches in about 300 ms; either stops it.
	r = e.callApp(alice, "python", "execute_script", `{"code":"while True:\n    pass\n","timeout":300}`, exec)
	if r.Body.ErrorCode != "TIMEOUT" {
		if v := fields(t, "while True: pass", r, "status", "error"); v["status"] != "error" || !strings.Contains(fmt.Sprint(v["error"]), "step limit reached") {
			t.Errorf("while True: pass with timeout 300: %v, want TIMEOUT or the step limit", v)
		}
	}
	// A loop of expensive steps meets the timeout first.
	slow := "l = list(range(10000))\nprint(\"started\")\nwhile True:\n    sorted(l, reverse=True)\n"
	wantCode(t, "a slow loop with timeout 300", e.callApp(alice, "python", "execute_script", js(map[string]any{"code": slow, "timeout": 300}), exec), "TIMEOUT")
	if last := fields(t, "read_output after the timeout", e.query(alice, "python", "read_output", `{}`, exec), "status", "output"); last["status"] != "timeout" || last["output"] != "started\n" {
		t.Errorf("read_output after the timeout: %v", last)
	}
}

// The Settings app: the document's Example 3, set_setting answering with the previous value,
// its undo within the window and refused after it, and values outside a setting's domain
// refused.
func TestFleetSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	read := e.token(alice, []string{"system.settings.read"}, nil)
	write := e.token(alice, []string{"system.settings.write"}, nil)
	get := func(category, key string) any {
		t.Helper()
		v := fields(t, "get_setting "+key, e.query(alice, "settings", "get_setting", js(map[string]string{"category": category, "key": key}), read), "category", "key", "value", "type")
		if v["category"] != category || v["key"] != key {
			t.Errorf("get_setting: %v", v)
		}
		return v["value"]
	}
	// Example 3.
	theme := fields(t, "get theme", e.query(alice, "settings", "get_setting", `{"category":"appearance","key":"theme"}`, read), "value", "type")
	if theme["value"] != "dark" || theme["type"] != "string" {
		t.Errorf("theme: %v", theme)
	}
	set := e.callApp(alice, "settings", "set_setting", `{"category":"appearance","key":"theme","value":"light"}`, write)
	if v := fields(t, "set theme", set, "status", "previous_value", "new_value"); v["status"] != "success" || v["previous_value"] != "dark" || v["new_value"] != "light" {
		t.Errorf("set_setting: %v", v)
	}
	u := wantUndo(t, "set_setting", set, time.Minute)
	if got := get("appearance", "theme"); got != "light" {
		t.Errorf("theme after set: %v", got)
	}
	wantOK(t, "undo set_setting", e.undo(alice, u))
	if got := get("appearance", "theme"); got != "dark" {
		t.Errorf("theme after undo: %v", got)
	}
	wantCode(t, "undo set_setting again", e.undo(alice, u), "INVALID_TOKEN")
	if v := fields(t, "example 3 set dark", e.callApp(alice, "settings", "set_setting", `{"category":"appearance","key":"theme","value":"dark"}`, write), "previous_value", "new_value"); v["previous_value"] != "dark" || v["new_value"] != "dark" {
		t.Errorf("set dark: %v", v)
	}

	// Other types.
	if v := fields(t, "brightness", e.callApp(alice, "settings", "set_setting", `{"category":"display","key":"brightness","value":70}`, write), "previous_value"); v["previous_value"] != 80.0 || v["new_value"] != 70.0 {
		t.Errorf("brightness: %v", v)
	}
	if got := get("display", "brightness"); got != 70.0 {
		t.Errorf("brightness: %v", got)
	}

	// After the window the value stays.
	late := wantUndo(t, "set font_size", e.callApp(alice, "settings", "set_setting", `{"category":"appearance","key":"font_size","value":"large"}`, write), time.Minute)
	e.expireUndo(late)
	wantCode(t, "undo after the window", e.undo(alice, late), "TOKEN_EXPIRED")
	if got := get("appearance", "font_size"); got != "large" {
		t.Errorf("an expired undo changed font_size to %v", got)
	}
	wantCode(t, "a forged undo token", e.undo(alice, "undo_ffffffffffffffffffffffff"), "INVALID_TOKEN")

	// Values outside a setting's domain, and settings that are not.
	for _, p := range []string{
		`{"category":"appearance","key":"theme","value":"neon"}`,
		`{"category":"display","key":"brightness","value":101}`,
		`{"category":"display","key":"brightness","value":"bright"}`,
		`{"category":"appearance","key":"no_such_key","value":"x"}`,
		`{"category":"kernel","key":"theme","value":"dark"}`,
	} {
		r := e.callApp(alice, "settings", "set_setting", p, write)
		wantCode(t, p, r, "INVALID_REQUEST")
		if strings.Contains(r.Body.ErrorMessage, "neon") || strings.Contains(r.Body.ErrorMessage, "bright\"") {
			t.Errorf("the refusal echoes the value: %q", r.Body.ErrorMessage)
		}
	}
	if got := get("appearance", "theme"); got != "dark" {
		t.Errorf("a refused set changed the theme to %v", got)
	}
}

// The Calculator app: the document's compute and get_value.
func TestFleetCalc(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	tok := e.token(alice, []string{"app.calc.compute", "app.calc.read"}, nil)
	if v := fields(t, "get_value before", e.query(alice, "calc", "get_value", `{}`, tok), "value", "display"); v["value"] != 0.0 || v["display"] != "0" {
		t.Errorf("get_value before any compute: %v", v)
	}
	c := fields(t, "compute", e.callApp(alice, "calc", "compute", `{"expression":"123 + 456 * 2"}`, tok), "result", "expression")
	if c["result"] != 1035.0 || c["expression"] != "123 + 456 * 2" {
		t.Errorf("compute: %v", c)
	}
	if v := fields(t, "get_value", e.query(alice, "calc", "get_value", `{}`, tok), "value", "display"); v["value"] != 1035.0 || v["display"] != "1035" {
		t.Errorf("get_value: %v", v)
	}
	if c := fields(t, "compute decimals", e.callApp(alice, "calc", "compute", `{"expression":"(1 + 2) / 4"}`, tok), "result"); c["result"] != 0.75 {
		t.Errorf("compute (1 + 2) / 4: %v", c)
	}
	wantCode(t, "not arithmetic", e.callApp(alice, "calc", "compute", `{"expression":"os.system('ls')"}`, tok), "INVALID_REQUEST")
	if v := fields(t, "get_value after a refusal", e.query(alice, "calc", "get_value", `{}`, tok), "display"); v["display"] != "0.75" {
		t.Errorf("get_value: %v", v)
	}
}

// The System Log app reads capgate's own log: the gateway logs every call (at debug), and
// get_logs returns those lines, with the document's shape, filtered by severity, never holding
// a token or a client key.
func TestFleetSyslog(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{logLevel: slog.LevelDebug})
	alice := e.addClient("alice", "user")
	start := time.Now().Unix()
	calc := e.token(alice, []string{"app.calc.compute"}, nil)
	tok := e.token(alice, []string{"app.syslog.read"}, nil)
	wantOK(t, "compute", e.callApp(alice, "calc", "compute", `{"expression":"6 * 7"}`, calc))
	wantOK(t, "compute again", e.callApp(alice, "calc", "compute", `{"expression":"6 * 8"}`, calc))

	type entry struct {
		Timestamp int64  `json:"timestamp"`
		Severity  string `json:"severity"`
		Message   string `json:"message"`
	}
	type logs struct {
		Entries  []entry `json:"entries"`
		Total    *int    `json:"total"`
		Returned *int    `json:"returned"`
	}
	l := decodeAs[logs](t, "get_logs", e.query(alice, "syslog", "get_logs", `{"count":100,"offset":0,"severity":"all"}`, tok))
	if l.Total == nil || l.Returned == nil || *l.Returned != len(l.Entries) || *l.Total < len(l.Entries) || len(l.Entries) < 2 || len(l.Entries) > 100 {
		t.Fatalf("get_logs: total %v returned %v, %d entries", l.Total, l.Returned, len(l.Entries))
	}
	found := false
	for _, en := range l.Entries {
		if strings.HasPrefix(en.Message, "call ") && strings.Contains(en.Message, "client="+alice.ID) &&
			strings.Contains(en.Message, "app=calc") && strings.Contains(en.Message, "method=compute") && strings.Contains(en.Message, "call_id=call_") {
			found = true
			if en.Severity != "info" || en.Timestamp < start || en.Timestamp > time.Now().Unix()+1 {
				t.Errorf("the call's log line: %+v", en)
			}
		}
		if strings.Contains(en.Message, alice.Key) || strings.Contains(en.Message, calc) || strings.Contains(en.Message, tok) {
			t.Errorf("a log line holds a client key or a token: %q", en.Message)
		}
	}
	if !found {
		t.Errorf("capgate's own log line of the compute call is not in get_logs: %+v", l.Entries)
	}
	page := decodeAs[logs](t, "get_logs page", e.query(alice, "syslog", "get_logs", `{"count":1,"offset":1}`, tok))
	if len(page.Entries) != 1 || *page.Returned != 1 || page.Entries[0] != l.Entries[1] {
		t.Errorf("get_logs page: %+v, want %+v", page, l.Entries[1])
	}
	for _, sev := range []string{"info", "warn", "error", "ok"} {
		s := decodeAs[logs](t, "get_logs "+sev, e.query(alice, "syslog", "get_logs", js(map[string]any{"severity": sev, "count": 1000}), tok))
		for _, en := range s.Entries {
			if en.Severity != sev {
				t.Errorf("severity %s returned %+v", sev, en)
			}
		}
	}
	wantCode(t, "an unknown severity", e.query(alice, "syslog", "get_logs", `{"severity":"debug"}`, tok), "INVALID_REQUEST")
}

// The Solitaire app: new_game with a seed deals the same game every time, a legal move
// (stock to waste) changes it, get_game_state reads it with the document's fields, the move
// is undone, and an illegal move changes nothing.
func TestFleetSolitaire(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	tok := e.token(alice, []string{"app.solitaire.play", "app.solitaire.read"}, nil)
	type state struct {
		InProgress     *bool             `json:"in_progress"`
		Moves          *int              `json:"moves"`
		TimeElapsed    *int              `json:"time_elapsed"`
		CardsRemaining *int              `json:"cards_remaining"`
		Seed           int64             `json:"seed"`
		Tableau        []json.RawMessage `json:"tableau"`
		WasteTop       *string           `json:"waste_top"`
		WasteCount     int               `json:"waste_count"`
		StockCount     int               `json:"stock_count"`
	}
	shape := func(what string, s state) {
		t.Helper()
		if s.InProgress == nil || s.Moves == nil || s.TimeElapsed == nil || s.CardsRemaining == nil {
			t.Fatalf("%s: the document's fields are missing: %+v", what, s)
		}
	}
	deal := e.callApp(alice, "solitaire", "new_game", `{"seed":12345}`, tok)
	g := decodeAs[state](t, "new_game", deal)
	shape("new_game", g)
	if !*g.InProgress || *g.Moves != 0 || *g.CardsRemaining != 52 || g.Seed != 12345 || g.StockCount != 24 || g.WasteCount != 0 || len(g.Tableau) != 7 {
		t.Errorf("new_game: %+v", g)
	}
	wantUndo(t, "new_game", deal, 10*time.Minute)
	again := decodeAs[state](t, "new_game again", e.callApp(alice, "solitaire", "new_game", `{"seed":12345}`, tok))
	if js(again.Tableau) != js(g.Tableau) {
		t.Errorf("the same seed dealt another game: %s, then %s", js(g.Tableau), js(again.Tableau))
	}

	mv := e.callApp(alice, "solitaire", "move", `{"from":"stock","to":"waste"}`, tok)
	m := decodeAs[state](t, "move", mv)
	if *m.Moves != 1 || m.StockCount != 23 || m.WasteCount != 1 || m.WasteTop == nil {
		t.Errorf("move stock to waste: %+v", m)
	}
	s := decodeAs[state](t, "get_game_state", e.query(alice, "solitaire", "get_game_state", `{}`, tok))
	shape("get_game_state", s)
	if *s.Moves != 1 || s.Seed != 12345 || s.WasteTop == nil || *s.WasteTop != *m.WasteTop || s.StockCount != 23 || *s.CardsRemaining != 52 || !*s.InProgress {
		t.Errorf("get_game_state: %+v", s)
	}

	wantOK(t, "undo the move", e.undo(alice, wantUndo(t, "move", mv, 10*time.Minute)))
	s = decodeAs[state](t, "get_game_state after undo", e.query(alice, "solitaire", "get_game_state", `{}`, tok))
	if *s.Moves != 0 || s.StockCount != 24 || s.WasteTop != nil {
		t.Errorf("after undo: %+v", s)
	}
	// The waste is empty: nothing to move from it.
	wantCode(t, "an illegal move", e.callApp(alice, "solitaire", "move", `{"from":"waste","to":"foundation"}`, tok), "EXECUTION_FAILED")
	if s2 := decodeAs[state](t, "get_game_state after an illegal move", e.query(alice, "solitaire", "get_game_state", `{}`, tok)); *s2.Moves != 0 || s2.StockCount != 24 {
		t.Errorf("an illegal move changed the game: %+v", s2)
	}
}
