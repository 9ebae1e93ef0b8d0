package editor_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/editor"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// setup returns an editor over a fresh root folder, the root, and a folder beside it that
// calls must never reach.
func setup(t *testing.T) (*editor.App, string, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(outside, "secret.txt"), "top secret\n")
	doc, err := manifest.Load([]byte(editor.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	app, err := editor.New(doc, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	return app, root, outside
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var ic = sdk.InvocationContext{Source: sdk.SourceAgent, AppID: editor.AppID}

// call validates params as the gateway does, invokes, and checks the answer against the
// capability's returns schema.
func call(t *testing.T, app *editor.App, id string, params any) (sdk.Result, error) {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if err := sdk.DefaultValidateParams(app.Manifest(), id, raw); err != nil {
		return sdk.Result{}, err
	}
	res, err := app.Invoke(context.Background(), id, raw, ic)
	if err != nil {
		return res, err
	}
	if err := app.Manifest().ReturnsSchema(id).ValidateJSON(res.Data, ""); err != nil {
		t.Fatalf("%s answered outside its returns schema: %v\n%s", id, err, res.Data)
	}
	return res, nil
}

func mustCall(t *testing.T, app *editor.App, id string, params any) sdk.Result {
	t.Helper()
	res, err := call(t, app, id, params)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return res
}

type bufferView struct {
	Filename   string         `json:"filename"`
	Path       string         `json:"path"`
	Content    string         `json:"content"`
	Size       int            `json:"size"`
	Modified   bool           `json:"modified"`
	LineCount  int            `json:"line_count"`
	CursorLine int            `json:"cursor_line"`
	CursorCol  int            `json:"cursor_col"`
	Cursor     editor.Cursor  `json:"cursor"`
	Extra      map[string]any `json:"-"`
}

func get(t *testing.T, app *editor.App) bufferView {
	t.Helper()
	res := mustCall(t, app, editor.GetID, map[string]any{})
	var v bufferView
	if err := json.Unmarshal(res.Data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func code(err error) sdk.Code {
	var e *sdk.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// wantErr checks err is an *sdk.Error of the code, naming the field path when path is set,
// and never echoing secret.
func wantErr(t *testing.T, err error, c sdk.Code, path string) {
	t.Helper()
	if code(err) != c {
		t.Fatalf("error %v, want code %s", err, c)
	}
	if path != "" {
		var e *sdk.Error
		errors.As(err, &e)
		if len(e.Problems) == 0 || e.Problems[0].Path != path {
			t.Fatalf("error %v, want a problem at %q", err, path)
		}
	}
}

func TestManifest(t *testing.T) {
	doc, err := manifest.Load([]byte(editor.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Manifest()
	if m.AppID != editor.AppID {
		t.Fatalf("app id %s", m.AppID)
	}
	want := map[string]struct {
		perm   string
		risk   manifest.Risk
		effect manifest.SideEffect
		undo   bool
	}{
		editor.OpenID: {"app.editor.file_open", manifest.RiskMedium, manifest.SideEffectWrite, true},
		editor.GetID:  {"app.editor.read", manifest.RiskLow, manifest.SideEffectRead, false},
		editor.SetID:  {"app.editor.write", manifest.RiskMedium, manifest.SideEffectWrite, true},
		editor.SaveID: {"app.editor.file_save", manifest.RiskMedium, manifest.SideEffectWrite, true},
	}
	if len(m.Capabilities) != len(want) {
		t.Fatalf("%d capabilities", len(m.Capabilities))
	}
	for id, w := range want {
		c := m.Capability(id)
		if c == nil {
			t.Fatalf("no %s", id)
		}
		if c.Permission != w.perm || c.Risk != w.risk || c.SideEffects != w.effect || (c.UndoWindowMS != nil) != w.undo {
			t.Errorf("%s: permission %s risk %s side effects %s undo %v", id, c.Permission, c.Risk, c.SideEffects, c.UndoWindowMS != nil)
		}
		if w.undo && (*c.UndoWindowMS != editor.UndoWindow.Milliseconds() || c.Reversibility != manifest.Reversible) {
			t.Errorf("%s: undo window %d reversibility %s", id, *c.UndoWindowMS, c.Reversibility)
		}
	}
}

func TestNewNeedsAFolder(t *testing.T) {
	doc, _ := manifest.Load([]byte(editor.Manifest))
	if _, err := editor.New(doc, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("New over a missing folder succeeded")
	}
}

func TestOpenAndGet(t *testing.T) {
	app, root, _ := setup(t)
	if v := get(t, app); v.Filename != "" || v.Content != "" || v.Modified || v.LineCount != 1 || v.CursorLine != 1 || v.CursorCol != 0 {
		t.Fatalf("fresh buffer %+v", v)
	}
	if err := os.Mkdir(filepath.Join(root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	text := "int main() {\n    return 0;\n}"
	write(t, filepath.Join(root, "src", "code.c"), text)
	for _, p := range []string{
		"src/code.c", "./src/code.c", "src//code.c", "src/../src/code.c",
		filepath.Join(root, "src", "code.c"), root + "/src/./code.c", root + "/x/../src/code.c",
	} {
		res := mustCall(t, app, editor.OpenID, map[string]any{"path": p})
		if res.UndoToken == "" {
			t.Fatalf("open %s: no undo token", p)
		}
		var sum map[string]any
		_ = json.Unmarshal(res.Data, &sum)
		if _, has := sum["content"]; has {
			t.Fatalf("open answered with the content: %s", res.Data)
		}
		v := get(t, app)
		if v.Content != text || v.Filename != "code.c" || v.Path != filepath.Join(root, "src", "code.c") ||
			v.Modified || v.LineCount != 3 || v.Size != len(text) || v.Cursor != (editor.Cursor{Line: 1}) {
			t.Fatalf("open %s: buffer %+v", p, v)
		}
	}
}

func TestOpenThroughSymlinkedRoot(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(real, "a.txt"), "a")
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	doc, _ := manifest.Load([]byte(editor.Manifest))
	app, err := editor.New(doc, link)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	for _, p := range []string{filepath.Join(link, "a.txt"), filepath.Join(real, "a.txt")} {
		mustCall(t, app, editor.OpenID, map[string]any{"path": p})
	}
}

func TestPathEscapes(t *testing.T) {
	app, root, outside := setup(t)
	write(t, filepath.Join(root, "inside.txt"), "inside")
	secret := filepath.Join(outside, "secret.txt")
	for name, target := range map[string]string{
		"abslink":  secret,
		"rellink":  "../outside/secret.txt",
		"dirlink":  outside,
		"reldir":   "../outside",
		"looplink": "looplink",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside", filepath.Join(root, "sub", "up")); err != nil {
		t.Fatal(err)
	}
	denied := []string{
		"../outside/secret.txt",
		"sub/../../outside/secret.txt",
		"..",
		secret,
		"/etc/passwd",
		root + "/../outside/secret.txt",
		root + "x/a.txt", // a sibling whose name starts with the root's
		filepath.Dir(root),
		"abslink", "rellink", "dirlink/secret.txt", "reldir/secret.txt", "sub/up/secret.txt",
		filepath.Join(root, "dirlink", "secret.txt"),
		"looplink",
	}
	mustCall(t, app, editor.OpenID, map[string]any{"path": "inside.txt"})
	for _, p := range denied {
		_, err := call(t, app, editor.OpenID, map[string]any{"path": p})
		if code(err) != sdk.CodePermissionDenied {
			t.Errorf("open %q: %v, want permission denied", p, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("open %q: the error echoes the path: %v", p, err)
		}
	}
	if v := get(t, app); v.Content != "inside" {
		t.Fatalf("a refused open changed the buffer: %+v", v)
	}
	// Saving: the same paths, plus new names below the links, never create or change a file
	// outside.
	mustCall(t, app, editor.SetID, map[string]any{"content": "overwritten"})
	for _, p := range append(denied, "dirlink/new.txt", "reldir/new.txt", "sub/up/new.txt", "../outside/new.txt") {
		_, err := call(t, app, editor.SaveID, map[string]any{"path": p})
		if c := code(err); c != sdk.CodePermissionDenied && c != sdk.CodeInvalidParams {
			t.Errorf("save %q: %v, want refused", p, err)
		}
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 || read(t, secret) != "top secret\n" {
		t.Fatalf("a save reached outside: %v", entries)
	}
	if got, _ := os.Readlink(filepath.Join(root, "abslink")); got != secret {
		t.Fatal("a save replaced a symbolic link")
	}
}

func TestPathRules(t *testing.T) {
	app, root, _ := setup(t)
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "file.txt"), "x")
	for _, tc := range []struct {
		path string
		code sdk.Code
	}{
		{"", sdk.CodeInvalidParams},
		{".", sdk.CodeInvalidParams},
		{"dir/..", sdk.CodeInvalidParams},
		{root, sdk.CodeInvalidParams},
		{"dir", sdk.CodeInvalidParams},
		{"missing.txt", sdk.CodeInvalidParams},
		{"file.txt/x", sdk.CodeInvalidParams},
		{"a\x00b", sdk.CodeInvalidParams},
		{strings.Repeat("a", 4097), sdk.CodeInvalidParams},
		{strings.Repeat("a", 300), sdk.CodeInvalidParams}, // a name longer than the system allows
	} {
		_, err := call(t, app, editor.OpenID, map[string]any{"path": tc.path})
		wantErr(t, err, tc.code, "path")
	}
	// The same rules without the schema in front.
	for _, p := range []string{"", "a\x00b", strings.Repeat("a", 4097)} {
		raw, _ := json.Marshal(map[string]any{"path": p})
		_, err := app.Invoke(context.Background(), editor.OpenID, raw, ic)
		wantErr(t, err, sdk.CodeInvalidParams, "path")
	}
}

func TestOpenRefusesWhatIsNotText(t *testing.T) {
	app, root, _ := setup(t)
	write(t, filepath.Join(root, "latin1.txt"), "caf\xe9")
	write(t, filepath.Join(root, "nul.bin"), "a\x00b")
	write(t, filepath.Join(root, "big.txt"), strings.Repeat("a", editor.MaxFileBytes+1))
	write(t, filepath.Join(root, "max.txt"), strings.Repeat("é", editor.MaxFileBytes/2))
	write(t, filepath.Join(root, "utf8.txt"), "café ✓\n")
	for _, p := range []string{"latin1.txt", "nul.bin", "big.txt"} {
		_, err := call(t, app, editor.OpenID, map[string]any{"path": p})
		wantErr(t, err, sdk.CodeInvalidParams, "path")
	}
	mustCall(t, app, editor.OpenID, map[string]any{"path": "max.txt"})
	mustCall(t, app, editor.OpenID, map[string]any{"path": "utf8.txt"})
	if v := get(t, app); v.Content != "café ✓\n" || v.LineCount != 2 {
		t.Fatalf("%+v", v)
	}
}

func TestSetBuffer(t *testing.T) {
	app, root, _ := setup(t)
	write(t, filepath.Join(root, "a.txt"), "one\ntwo\n")
	mustCall(t, app, editor.OpenID, map[string]any{"path": "a.txt"})
	res := mustCall(t, app, editor.SetID, map[string]any{"content": "héllo\nworld", "cursor": map[string]any{"line": 2, "column": 5}})
	var ans map[string]any
	_ = json.Unmarshal(res.Data, &ans)
	if ans["previous_size"] != float64(8) || ans["size"] != float64(len("héllo\nworld")) || ans["line_count"] != float64(2) || ans["modified"] != true {
		t.Fatalf("answer %s", res.Data)
	}
	if res.UndoToken == "" {
		t.Fatal("no undo token")
	}
	v := get(t, app)
	if v.Content != "héllo\nworld" || !v.Modified || v.Cursor != (editor.Cursor{Line: 2, Column: 5}) || v.Filename != "a.txt" {
		t.Fatalf("%+v", v)
	}
	if read(t, filepath.Join(root, "a.txt")) != "one\ntwo\n" {
		t.Fatal("set_buffer wrote the file")
	}
	// Without a cursor the old one is kept, moved inside the new content.
	mustCall(t, app, editor.SetID, map[string]any{"content": "ab"})
	if v := get(t, app); v.Cursor != (editor.Cursor{Line: 1, Column: 2}) {
		t.Fatalf("cursor %+v", v.Cursor)
	}
	// Columns count characters: "é" is one.
	mustCall(t, app, editor.SetID, map[string]any{"content": "é", "cursor": map[string]any{"line": 1, "column": 1}})
	mustCall(t, app, editor.SetID, map[string]any{"content": "", "cursor": map[string]any{"line": 1, "column": 0}})
	mustCall(t, app, editor.SetID, map[string]any{"content": "a\n", "cursor": map[string]any{"line": 2, "column": 0}})
}

func TestSetBufferRules(t *testing.T) {
	app, _, _ := setup(t)
	for _, tc := range []struct {
		params any
		path   string
	}{
		{map[string]any{}, "content"},
		{map[string]any{"content": 5}, "content"},
		{map[string]any{"content": nil}, "content"},
		{map[string]any{"content": "a", "cursor": map[string]any{"line": 2, "column": 0}}, "cursor.line"},
		{map[string]any{"content": "a\nbc", "cursor": map[string]any{"line": 1, "column": 2}}, "cursor.column"},
		{map[string]any{"content": "é", "cursor": map[string]any{"line": 1, "column": 2}}, "cursor.column"},
		{map[string]any{"content": "a", "cursor": map[string]any{"line": 0, "column": 0}}, "cursor.line"},
		{map[string]any{"content": "a", "cursor": map[string]any{"line": 1, "column": -1}}, "cursor.column"},
		{map[string]any{"content": "a", "cursor": map[string]any{"line": 1}}, "cursor"},
		{map[string]any{"content": "a", "cursor": map[string]any{"line": 1, "column": 0, "x": 1}}, "cursor"},
		{map[string]any{"content": "a\x00b"}, "content"},
		{map[string]any{"content": strings.Repeat("a", editor.MaxFileBytes+1)}, "content"},
	} {
		_, err := call(t, app, editor.SetID, tc.params)
		if code(err) != sdk.CodeInvalidParams {
			t.Errorf("%v: %v, want invalid params", tc.params, err)
			continue
		}
		// And the app's own checks, without the schema in front.
		raw, _ := json.Marshal(tc.params)
		_, err = app.Invoke(context.Background(), editor.SetID, raw, ic)
		if code(err) != sdk.CodeInvalidParams {
			t.Errorf("%v without the schema: %v", tc.params, err)
		}
	}
	// Multi-byte content at the byte limit exceeds it even when the schema's count of
	// characters does not.
	raw, _ := json.Marshal(map[string]any{"content": strings.Repeat("é", editor.MaxFileBytes/2+1)})
	if err := sdk.DefaultValidateParams(app.Manifest(), editor.SetID, raw); err != nil {
		t.Fatal(err)
	}
	_, err := app.Invoke(context.Background(), editor.SetID, raw, ic)
	wantErr(t, err, sdk.CodeInvalidParams, "content")
	if v := get(t, app); v.Content != "" || v.Modified {
		t.Fatalf("a refused set_buffer changed the buffer: %+v", v)
	}
}

// Other spellings of a param never stand in for it: encoding/json would match "PATH" and
// "Content" to the fields, and the gateway's path constraints look only at "path".
func TestOtherSpellings(t *testing.T) {
	app, root, _ := setup(t)
	write(t, filepath.Join(root, "ok.txt"), "ok")
	for _, tc := range []struct {
		id  string
		raw string
	}{
		{editor.OpenID, `{"PATH":"ok.txt"}`},
		{editor.OpenID, `{"path":"ok.txt","Path":"../outside/secret.txt"}`},
		{editor.SetID, `{"Content":"x"}`},
		{editor.SetID, `{"content":"x","cursor":{"Line":1,"column":0}}`},
		{editor.SetID, `{"content":"x","cursor":{"line":1.5,"column":0}}`},
		{editor.SetID, `{"content":"x","cursor":{"line":"1","column":0}}`},
		{editor.SetID, `{"content":"x","cursor":{"line":1,"column":null}}`},
		{editor.SetID, `{"content":"x","cursor":null}`},
		{editor.SaveID, `{"path":null}`},
		{editor.GetID, `{"x":1}`},
		{editor.GetID, `[]`},
		{editor.OpenID, `"ok.txt"`},
	} {
		_, err := app.Invoke(context.Background(), tc.id, json.RawMessage(tc.raw), ic)
		if code(err) != sdk.CodeInvalidParams {
			t.Errorf("%s %s: %v, want invalid params", tc.id, tc.raw, err)
		}
		if err := sdk.DefaultValidateParams(app.Manifest(), tc.id, json.RawMessage(tc.raw)); code(err) != sdk.CodeInvalidParams {
			t.Errorf("%s %s passes the schema: %v", tc.id, tc.raw, err)
		}
	}
	if _, err := app.Invoke(context.Background(), "editor.org.capgate.editor.delete_file", nil, ic); code(err) != sdk.CodeNotFound {
		t.Fatalf("unknown capability: %v", err)
	}
}

func TestUndoSetBuffer(t *testing.T) {
	app, root, _ := setup(t)
	write(t, filepath.Join(root, "a.txt"), "first\nline")
	mustCall(t, app, editor.OpenID, map[string]any{"path": "a.txt"})
	r1 := mustCall(t, app, editor.SetID, map[string]any{"content": "second", "cursor": map[string]any{"line": 1, "column": 3}})
	r2 := mustCall(t, app, editor.SetID, map[string]any{"content": "third"})
	// Undoing the earlier change while the later one stands is refused.
	if err := app.Undo(context.Background(), editor.SetID, r1.UndoToken, ic); code(err) != sdk.CodeExecutionFailed {
		t.Fatalf("out-of-order undo: %v", err)
	}
	// A token belongs to its capability.
	if err := app.Undo(context.Background(), editor.OpenID, r2.UndoToken, ic); code(err) != sdk.CodeExecutionFailed {
		t.Fatalf("undo under another capability: %v", err)
	}
	if err := app.Undo(context.Background(), editor.SetID, r2.UndoToken, ic); err != nil {
		t.Fatal(err)
	}
	if v := get(t, app); v.Content != "second" || !v.Modified || v.Cursor != (editor.Cursor{Line: 1, Column: 3}) {
		t.Fatalf("after one undo %+v", v)
	}
	if err := app.Undo(context.Background(), editor.SetID, r2.UndoToken, ic); code(err) != sdk.CodeExecutionFailed {
		t.Fatalf("second undo of the same change: %v", err)
	}
	if err := app.Undo(context.Background(), editor.SetID, r1.UndoToken, ic); err != nil {
		t.Fatal(err)
	}
	if v := get(t, app); v.Content != "first\nline" || v.Modified || v.Cursor != (editor.Cursor{Line: 1}) || v.Filename != "a.txt" {
		t.Fatalf("after both undos %+v", v)
	}
	for _, tok := range []string{"", "nonsense", strings.Repeat("0", 32)} {
		if err := app.Undo(context.Background(), editor.SetID, tok, ic); code(err) != sdk.CodeExecutionFailed {
			t.Fatalf("undo %q: %v", tok, err)
		}
	}
	if err := app.Undo(context.Background(), editor.GetID, r1.UndoToken, ic); code(err) != sdk.CodeNotFound {
		t.Fatalf("undo of get_buffer: %v", err)
	}
}

// open_file replaces a buffer that may hold unsaved changes; its undo brings them back.
func TestUndoOpen(t *testing.T) {
	app, root, _ := setup(t)
	write(t, filepath.Join(root, "a.txt"), "a")
	write(t, filepath.Join(root, "b.txt"), "b")
	mustCall(t, app, editor.OpenID, map[string]any{"path": "a.txt"})
	mustCall(t, app, editor.SetID, map[string]any{"content": "unsaved"})
	r := mustCall(t, app, editor.OpenID, map[string]any{"path": "b.txt"})
	if v := get(t, app); v.Content != "b" || v.Modified {
		t.Fatalf("%+v", v)
	}
	if err := app.Undo(context.Background(), editor.OpenID, r.UndoToken, ic); err != nil {
		t.Fatal(err)
	}
	if v := get(t, app); v.Content != "unsaved" || !v.Modified || v.Filename != "a.txt" {
		t.Fatalf("%+v", v)
	}
}

func TestSave(t *testing.T) {
	app, root, _ := setup(t)
	path := filepath.Join(root, "a.txt")
	write(t, path, "old")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	mustCall(t, app, editor.OpenID, map[string]any{"path": "a.txt"})
	mustCall(t, app, editor.SetID, map[string]any{"content": "new"})
	res := mustCall(t, app, editor.SaveID, map[string]any{})
	var ans map[string]any
	_ = json.Unmarshal(res.Data, &ans)
	if ans["created"] != false || ans["path"] != path || ans["size"] != float64(3) {
		t.Fatalf("answer %s", res.Data)
	}
	if read(t, path) != "new" {
		t.Fatal("not saved")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want the file's own", fi.Mode())
	}
	if v := get(t, app); v.Modified {
		t.Fatal("still modified after save")
	}
	// Undo puts back the old bytes and the buffer's modified flag.
	if err := app.Undo(context.Background(), editor.SaveID, res.UndoToken, ic); err != nil {
		t.Fatal(err)
	}
	if read(t, path) != "old" {
		t.Fatal("undo did not restore the file")
	}
	if v := get(t, app); !v.Modified || v.Content != "new" {
		t.Fatalf("after undo %+v", v)
	}
	assertNoTemp(t, root)
}

func TestSaveAs(t *testing.T) {
	app, root, _ := setup(t)
	_, err := call(t, app, editor.SaveID, map[string]any{})
	wantErr(t, err, sdk.CodeInvalidParams, "path")
	mustCall(t, app, editor.SetID, map[string]any{"content": "fresh\n"})
	if err := os.Mkdir(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := mustCall(t, app, editor.SaveID, map[string]any{"path": filepath.Join(root, "docs", "n.txt")})
	var ans map[string]any
	_ = json.Unmarshal(res.Data, &ans)
	if ans["created"] != true || ans["filename"] != "n.txt" {
		t.Fatalf("answer %s", res.Data)
	}
	if v := get(t, app); v.Filename != "n.txt" || v.Modified {
		t.Fatalf("%+v", v)
	}
	if err := app.Undo(context.Background(), editor.SaveID, res.UndoToken, ic); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "docs", "n.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("undo of a save that created the file left it")
	}
	if v := get(t, app); v.Filename != "" || !v.Modified {
		t.Fatalf("after undo %+v", v)
	}
	for _, tc := range []struct{ path, why string }{
		{"missing/n.txt", "a folder that does not exist"},
		{"docs", "a folder"},
	} {
		_, err := call(t, app, editor.SaveID, map[string]any{"path": tc.path})
		wantErr(t, err, sdk.CodeInvalidParams, "path")
	}
	// A symbolic link inside the folder is not replaced by a file.
	write(t, filepath.Join(root, "target.txt"), "target")
	if err := os.Symlink("target.txt", filepath.Join(root, "inlink")); err != nil {
		t.Fatal(err)
	}
	mustCall(t, app, editor.OpenID, map[string]any{"path": "inlink"}) // reading through it is fine
	_, err = call(t, app, editor.SaveID, map[string]any{})
	wantErr(t, err, sdk.CodeInvalidParams, "path")
	if read(t, filepath.Join(root, "target.txt")) != "target" {
		t.Fatal("saved through a link")
	}
	assertNoTemp(t, root)
}

func TestUndoSaveRefusedAfterExternalChange(t *testing.T) {
	app, root, _ := setup(t)
	path := filepath.Join(root, "a.txt")
	write(t, path, "old")
	mustCall(t, app, editor.OpenID, map[string]any{"path": "a.txt"})
	mustCall(t, app, editor.SetID, map[string]any{"content": "mine"})
	res := mustCall(t, app, editor.SaveID, map[string]any{})
	write(t, path, "someone else's")
	if err := app.Undo(context.Background(), editor.SaveID, res.UndoToken, ic); code(err) != sdk.CodeExecutionFailed {
		t.Fatalf("undo over a changed file: %v", err)
	}
	if read(t, path) != "someone else's" {
		t.Fatal("undo overwrote a change it did not make")
	}
	// A file replaced by a link is a change too.
	res = mustCall(t, app, editor.SaveID, map[string]any{})
	os.Remove(path)
	if err := os.Symlink(filepath.Join(root, "..", "outside", "secret.txt"), path); err != nil {
		t.Fatal(err)
	}
	if err := app.Undo(context.Background(), editor.SaveID, res.UndoToken, ic); code(err) != sdk.CodeExecutionFailed {
		t.Fatalf("undo over a link: %v", err)
	}
}

func assertNoTemp(t *testing.T, root string) {
	t.Helper()
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".capgate-editor-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// Many agents set the buffer at once: every answer is whole (content, size and line count
// agree), the last state is one of the writes, and every undo either applies or is refused.
func TestConcurrentSetBuffer(t *testing.T) {
	app, _, _ := setup(t)
	const n = 32
	var wg sync.WaitGroup
	tokens := make([]string, n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			content := strings.Repeat(string(rune('a'+i%26))+"\n", i+1)
			raw, _ := json.Marshal(map[string]any{"content": content})
			res, err := app.Invoke(context.Background(), editor.SetID, raw, ic)
			if err != nil {
				t.Error(err)
				return
			}
			tokens[i] = res.UndoToken
		}()
		go func() {
			defer wg.Done()
			res, err := app.Invoke(context.Background(), editor.GetID, nil, ic)
			if err != nil {
				t.Error(err)
				return
			}
			var v bufferView
			_ = json.Unmarshal(res.Data, &v)
			if v.Size != len(v.Content) || v.LineCount != strings.Count(v.Content, "\n")+1 {
				t.Errorf("torn buffer %+v", v)
			}
		}()
	}
	wg.Wait()
	undone := 0
	var mu sync.Mutex
	for range 3 { // undo in every order until nothing more applies
		for _, tok := range tokens {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if app.Undo(context.Background(), editor.SetID, tok, ic) == nil {
					mu.Lock()
					undone++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	if v := get(t, app); undone == n && (v.Content != "" || v.Modified) {
		t.Fatalf("all undone, buffer %+v", v)
	}
}

func TestContextDone(t *testing.T) {
	app, _, _ := setup(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := app.Invoke(ctx, editor.GetID, nil, ic); code(err) != sdk.CodeTimeout {
		t.Fatalf("past deadline: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := app.Invoke(ctx, editor.SetID, json.RawMessage(`{"content":"x"}`), ic); code(err) != sdk.CodeExecutionFailed {
		t.Fatalf("cancelled: %v", err)
	}
	if v := get(t, app); v.Content != "" {
		t.Fatal("a cancelled call changed the buffer")
	}
}
