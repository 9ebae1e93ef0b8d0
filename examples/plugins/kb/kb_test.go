package kb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capgate/capgate/examples/plugins/kb"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

var zero = "sha256:" + strings.Repeat("0", 64)

// sourceManifest is ../src/kb-2.0.0.json with placeholder digests (the handler never reads
// them), changed by edit when it is not nil.
func sourceManifest(t *testing.T, edit func(m map[string]any)) *manifest.Document {
	t.Helper()
	data, err := os.ReadFile("../src/kb-2.0.0.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	m["digest"] = zero
	m["sbom_ref"].(map[string]any)["digest"] = zero
	m["provenance_ref"].(map[string]any)["digest"] = zero
	if edit != nil {
		edit(m)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := manifest.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// packageRoot lays out a package folder whose index holds docs (name → content).
func packageRoot(t *testing.T, docs map[string]string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, kb.IndexDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range docs {
		if err := os.WriteFile(filepath.Join(root, kb.IndexDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// shippedDocs is the index the package ships.
func shippedDocs(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("index/*.md")
	if err != nil || len(names) == 0 {
		t.Fatalf("no shipped document: %v", err)
	}
	docs := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Base(n)] = string(b)
	}
	return docs
}

func newHandler(t *testing.T, docs map[string]string) (*kb.Handler, string) {
	t.Helper()
	root := packageRoot(t, docs)
	h, err := kb.New(sourceManifest(t, nil), root)
	if err != nil {
		t.Fatal(err)
	}
	return h, root
}

// call invokes capability id with params, with a report, and checks a result against the
// capability's returns schema.
func call(t *testing.T, h sdk.Handler, id, params string, dryRun bool) (json.RawMessage, *sdk.Report, error) {
	t.Helper()
	rep := &sdk.Report{DryRun: dryRun}
	res, err := h.Invoke(sdk.WithReport(context.Background(), rep), id, json.RawMessage(params), sdk.InvocationContext{})
	if err != nil {
		return nil, rep, err
	}
	if !res.Success {
		t.Fatalf("%s: not a success: %+v", id, res)
	}
	if err := h.Manifest().ReturnsSchema(id).ValidateJSON(res.Data, "result"); err != nil {
		t.Fatalf("%s: the result %s breaks the returns schema: %v", id, res.Data, err)
	}
	return res.Data, rep, nil
}

type hit struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Score int    `json:"score"`
}

func search(t *testing.T, h sdk.Handler, query string) []hit {
	t.Helper()
	params, _ := json.Marshal(map[string]string{"query": query})
	data, rep, err := call(t, h, kb.SearchID, string(params), false)
	if err != nil {
		t.Fatalf("search %q: %v", query, err)
	}
	if got := rep.Effects(); len(got) != 1 || got[0].Effect != "read" || got[0].Target == "" {
		t.Fatalf("search %q reported %+v, want one read with its target", query, got)
	}
	var out struct{ Hits []hit }
	if err := json.Unmarshal(data, &out); err != nil || out.Hits == nil {
		t.Fatalf("search %q: %s: hits must be an array: %v", query, data, err)
	}
	return out.Hits
}

// code returns the sdk code of err, "" for none.
func code(err error) sdk.Code {
	var se *sdk.Error
	if errors.As(err, &se) {
		return se.Code
	}
	return ""
}

// wantProblem checks that err is invalid_params naming path alone.
func wantProblem(t *testing.T, err error, path string) {
	t.Helper()
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != sdk.CodeInvalidParams || len(se.Problems) != 1 || se.Problems[0].Path != path {
		t.Fatalf("got %v, want invalid_params naming %q alone", err, path)
	}
}

var scored = map[string]string{
	"alpha.md": "# Alpha\nalpha beta beta\n",
	"beta.md":  "# Beta\nBeta, said the note.\n",
	"gamma.md": "# Gamma\nÉcole and ÉCOLE and école; 42 times 42.\n",
}

func TestSearchScoresByTermCount(t *testing.T) {
	h, _ := newHandler(t, scored)
	for _, tc := range []struct {
		query string
		want  []hit
	}{
		// beta: twice in alpha's text; once in beta's title and once in its text. A tie is
		// ordered by id.
		{"beta", []hit{{"alpha", "Alpha", 2}, {"beta", "Beta", 2}}},
		{"BETA", []hit{{"alpha", "Alpha", 2}, {"beta", "Beta", 2}}},
		{"alpha beta", []hit{{"alpha", "Alpha", 4}, {"beta", "Beta", 2}}},
		{"beta beta Beta", []hit{{"alpha", "Alpha", 2}, {"beta", "Beta", 2}}}, // a term counts once
		{"école", []hit{{"gamma", "Gamma", 3}}},                               // case folds beyond ASCII
		{"42", []hit{{"gamma", "Gamma", 2}}},
		{"alpha-beta?!", []hit{{"alpha", "Alpha", 4}, {"beta", "Beta", 2}}}, // punctuation splits
		{"bet", []hit{}}, // whole terms only
		{"delta", []hit{}},
	} {
		if got := search(t, h, tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("search %q = %+v, want %+v", tc.query, got, tc.want)
		}
	}
}

func TestSearchReturnsAtMostMaxHits(t *testing.T) {
	docs := map[string]string{}
	for i := range kb.MaxHits + 5 {
		docs[fmt.Sprintf("note-%02d.md", i)] = fmt.Sprintf("# Note %d\n%s\n", i, strings.Repeat("word ", i+1))
	}
	h, _ := newHandler(t, docs)
	got := search(t, h, "word")
	if len(got) != kb.MaxHits {
		t.Fatalf("%d hits, want %d", len(got), kb.MaxHits)
	}
	// The best: the note with the most words comes first.
	if got[0].ID != fmt.Sprintf("note-%02d", kb.MaxHits+4) || got[0].Score != kb.MaxHits+5 {
		t.Fatalf("first hit %+v", got[0])
	}
}

func TestShippedIndex(t *testing.T) {
	docs := shippedDocs(t)
	h, _ := newHandler(t, docs)
	// Every shipped document is found by each word of its title and read back as written.
	for name, text := range docs {
		id := strings.TrimSuffix(name, ".md")
		title, body, _ := strings.Cut(text, "\n")
		title = strings.TrimPrefix(title, "# ")
		for _, w := range kb.Terms(title) {
			if !slices.ContainsFunc(search(t, h, w), func(x hit) bool { return x.ID == id }) {
				t.Errorf("search %q does not find %s", w, id)
			}
		}
		data, _, err := call(t, h, kb.ReadID, `{"id":"`+id+`"}`, false)
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		var got struct{ ID, Title, Text string }
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if got.ID != id || got.Title != title || got.Text != strings.TrimSpace(body) {
			t.Errorf("read %s = %+v", id, got)
		}
	}
	if got := search(t, h, "lockfile"); len(got) == 0 || got[0].ID != "plugin-lockfile" {
		t.Errorf("search lockfile = %+v, want plugin-lockfile first", got)
	}
}

func TestRead(t *testing.T) {
	h, _ := newHandler(t, scored)
	data, rep, err := call(t, h, kb.ReadID, `{"id":"beta"}`, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"id":"beta","title":"Beta","text":"Beta, said the note."}` {
		t.Errorf("read beta = %s", data)
	}
	if got := rep.Effects(); !slices.Equal(got, []sdk.Effect{{Effect: "read", Target: "index/beta.md"}}) {
		t.Errorf("read reported %+v", got)
	}
	// An id in form that names no document fails the call, and nothing was read.
	_, rep, err = call(t, h, kb.ReadID, `{"id":"delta"}`, false)
	if code(err) != sdk.CodeExecutionFailed {
		t.Fatalf("read delta: %v, want execution_failed", err)
	}
	if len(rep.Effects()) != 0 {
		t.Errorf("a read of no document reported %+v", rep.Effects())
	}
}

func TestValidateParams(t *testing.T) {
	h, _ := newHandler(t, scored)
	ok := []struct{ id, params string }{
		{kb.SearchID, `{"query":"beta"}`},
		{kb.SearchID, `{"query":"w"}`},
		{kb.SearchID, `{"query":"` + words(kb.MaxQueryTerms) + `"}`},
		{kb.SearchID, `{"query":"a a a a a a a a a a a a a a a a a a a a"}`}, // one distinct word
		{kb.ReadID, `{"id":"beta"}`},
		{kb.ReadID, `{"id":"delta"}`}, // in form: whether it exists is Invoke's answer
		{kb.ReadID, `{"id":"a1-b2-c3"}`},
		{kb.ReadID, `{"id":"` + strings.Repeat("a", kb.MaxIDBytes) + `"}`},
		{kb.ReindexID, `{}`},
	}
	for _, c := range ok {
		if err := sdk.ValidateParams(h, c.id, json.RawMessage(c.params)); err != nil {
			t.Errorf("%s %s: %v", c.id, c.params, err)
		}
	}
	bad := []struct{ id, params, path string }{
		{kb.SearchID, `{"query":"!!! ... ???"}`, "query"},
		{kb.SearchID, `{"query":" "}`, "query"},
		{kb.SearchID, `{"query":"` + words(kb.MaxQueryTerms+1) + `"}`, "query"},
		{kb.ReadID, `{"id":"../manifest"}`, "id"},
		{kb.ReadID, `{"id":"index/beta"}`, "id"},
		{kb.ReadID, `{"id":"beta.md"}`, "id"},
		{kb.ReadID, `{"id":"Beta"}`, "id"},
		{kb.ReadID, `{"id":"-beta"}`, "id"},
		{kb.ReadID, `{"id":"beta-"}`, "id"},
		{kb.ReadID, `{"id":"be--ta"}`, "id"},
		{kb.ReadID, `{"id":"be ta"}`, "id"},
		{kb.ReadID, `{"id":"bêta"}`, "id"},
		{kb.ReadID, `{"id":"beta\u0000"}`, "id"},
	}
	for _, c := range bad {
		// The handler's own rule, called alone and through the gateway's order (schema, then it),
		// and held again by Invoke, which never trusts that the host asked first.
		wantProblem(t, h.ValidateParams(c.id, json.RawMessage(c.params)), c.path)
		wantProblem(t, sdk.ValidateParams(h, c.id, json.RawMessage(c.params)), c.path)
		_, _, err := call(t, h, c.id, c.params, false)
		wantProblem(t, err, c.path)
	}
	// What the schema refuses, Invoke refuses too when a host skips the check.
	for _, c := range []struct{ id, params, path string }{
		{kb.SearchID, `{}`, "query"},
		{kb.SearchID, `{"query":7}`, "query"},
		{kb.ReadID, `{"id":["beta"]}`, "id"},
		{kb.ReadID, `[]`, ""},
		{kb.ReadID, `null`, ""},
		{kb.ReadID, `{"id":"` + strings.Repeat("a", kb.MaxIDBytes+1) + `"}`, "id"},
	} {
		_, _, err := call(t, h, c.id, c.params, false)
		wantProblem(t, err, c.path)
		if sdk.ValidateParams(h, c.id, json.RawMessage(c.params)) == nil {
			t.Errorf("%s %s passed the gateway's check", c.id, c.params)
		}
	}
	if code(h.ValidateParams("kb.org.example.kb.delete", json.RawMessage(`{}`))) != sdk.CodeNotFound {
		t.Error("an unknown capability's params were accepted")
	}
}

func words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("w%d", i)
	}
	return strings.Join(ws, " ")
}

func TestReindex(t *testing.T) {
	h, root := newHandler(t, scored)
	if err := os.WriteFile(filepath.Join(root, kb.IndexDir, "delta.md"), []byte("# Delta\nA new note.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := search(t, h, "delta"); len(got) != 0 {
		t.Fatalf("a document added after the start is served before a reindex: %+v", got)
	}

	// A dry run counts, keeps the index in use, and reports no write.
	data, rep, err := call(t, h, kb.ReindexID, `{}`, true)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"documents":4}` {
		t.Errorf("dry reindex = %s", data)
	}
	if got := rep.Effects(); !slices.Equal(got, []sdk.Effect{{Effect: "read", Target: "index"}}) {
		t.Errorf("dry reindex reported %+v", got)
	}
	wantEvidence(t, rep, `{"documents":4,"dry_run":true}`)
	if got := search(t, h, "delta"); len(got) != 0 {
		t.Fatalf("a dry run changed the index: %+v", got)
	}

	data, rep, err = call(t, h, kb.ReindexID, `{}`, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"documents":4}` {
		t.Errorf("reindex = %s", data)
	}
	if got := rep.Effects(); len(got) != 2 || got[1].Effect != "write" {
		t.Errorf("reindex reported %+v, want a read and a write", got)
	}
	wantEvidence(t, rep, `{"documents":4,"dry_run":false}`)
	if got := search(t, h, "delta"); len(got) != 1 || got[0].ID != "delta" {
		t.Fatalf("after a reindex, search delta = %+v", got)
	}

	// A reindex that cannot read the documents fails and leaves the index in use.
	if err := os.WriteFile(filepath.Join(root, kb.IndexDir, "broken.md"), []byte("no title"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, rep, err = call(t, h, kb.ReindexID, `{}`, false)
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != sdk.CodeExecutionFailed || !se.Recoverable || strings.Contains(se.Reason, root) {
		t.Fatalf("reindex of a broken index: %v, want a recoverable execution_failed naming no path", err)
	}
	if slices.ContainsFunc(rep.Effects(), func(e sdk.Effect) bool { return e.Effect == "write" }) || len(rep.Evidence()) != 0 {
		t.Errorf("a failed reindex reported %+v and %+v", rep.Effects(), rep.Evidence())
	}
	if got := search(t, h, "delta"); len(got) != 1 {
		t.Fatalf("a failed reindex changed the index: %+v", got)
	}
}

func wantEvidence(t *testing.T, rep *sdk.Report, body string) {
	t.Helper()
	ev := rep.Evidence()
	if len(ev) != 1 || ev[0].Type != kb.EvidenceReindex || string(ev[0].Body) != body {
		t.Errorf("evidence %+v, want one %s %s", ev, kb.EvidenceReindex, body)
	}
}

func TestInvokeHoldsTheManifest(t *testing.T) {
	// A capability the manifest does not declare is not found, even one the handler knows.
	doc := sourceManifest(t, func(m map[string]any) {
		caps := m["capabilities"].([]any)
		m["capabilities"] = caps[:2] // search and read
		delete(m, "permissions_delta")
		delete(m, "previous_version")
	})
	h, err := kb.New(doc, packageRoot(t, scored))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := call(t, h, kb.ReindexID, `{}`, false); code(err) != sdk.CodeNotFound {
		t.Errorf("an undeclared reindex: %v, want not_found", err)
	}
	if _, _, err := call(t, h, "kb.org.example.kb.delete", `{}`, false); code(err) != sdk.CodeNotFound {
		t.Errorf("an unknown capability: %v, want not_found", err)
	}
	// A call whose context is done does nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep := &sdk.Report{}
	if _, err := h.Invoke(sdk.WithReport(ctx, rep), kb.SearchID, json.RawMessage(`{"query":"beta"}`), sdk.InvocationContext{}); !errors.Is(err, context.Canceled) || len(rep.Effects()) != 0 {
		t.Errorf("a cancelled call: %v, %+v", err, rep.Effects())
	}

	// A manifest that declares a capability the program does not implement is refused.
	doc = sourceManifest(t, func(m map[string]any) {
		extra := map[string]any{}
		for k, v := range m["capabilities"].([]any)[1].(map[string]any) {
			extra[k] = v
		}
		extra["id"], extra["implements"] = "kb.org.example.kb.fetch", "knowledge.fetch@1.0"
		m["capabilities"] = append(m["capabilities"].([]any), extra)
	})
	if _, err := kb.New(doc, packageRoot(t, scored)); err == nil || !strings.Contains(err.Error(), "capabilities[3].id") {
		t.Errorf("a manifest promising more: %v", err)
	}
}

func TestIndexRefused(t *testing.T) {
	long := "# " + strings.Repeat("t", kb.MaxTitleBytes+1) + "\n"
	for name, tc := range map[string]struct {
		lay  func(t *testing.T, index string)
		rule string
	}{
		"no index folder":    {func(t *testing.T, index string) { os.RemoveAll(index) }, "index"},
		"an upper-case name": {func(t *testing.T, index string) { write(t, index, "Beta.md", "# B\n") }, "<id>.md"},
		"not markdown":       {func(t *testing.T, index string) { write(t, index, "notes.txt", "# B\n") }, "<id>.md"},
		"a hidden file":      {func(t *testing.T, index string) { write(t, index, ".draft.md", "# B\n") }, "<id>.md"},
		"a folder": {func(t *testing.T, index string) {
			if err := os.Mkdir(filepath.Join(index, "sub.md"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "regular file"},
		"a link inside": {func(t *testing.T, index string) {
			link(t, filepath.Join(index, "alpha.md"), filepath.Join(index, "copy.md"))
		}, "regular file"},
		"a link outside": {func(t *testing.T, index string) {
			outside := filepath.Join(t.TempDir(), "secret.md")
			write(t, filepath.Dir(outside), "secret.md", "# Secret\n")
			link(t, outside, filepath.Join(index, "secret.md"))
		}, "regular file"},
		"no title":       {func(t *testing.T, index string) { write(t, index, "b.md", "just text\n") }, "title"},
		"an empty title": {func(t *testing.T, index string) { write(t, index, "b.md", "#  \ntext\n") }, "title"},
		"a long title":   {func(t *testing.T, index string) { write(t, index, "b.md", long) }, "title is longer"},
		"not UTF-8":      {func(t *testing.T, index string) { write(t, index, "b.md", "# B\n\xff\xfe\n") }, "UTF-8"},
		"an empty file":  {func(t *testing.T, index string) { write(t, index, "b.md", "") }, "title"},
		"a large document": {func(t *testing.T, index string) {
			write(t, index, "b.md", "# B\n"+strings.Repeat("x", kb.MaxDocumentBytes))
		}, "larger than"},
		"too many documents": {func(t *testing.T, index string) {
			for i := range kb.MaxDocuments + 1 {
				write(t, index, fmt.Sprintf("n%d.md", i), "# N\n")
			}
		}, "more than"},
		"a large index": {func(t *testing.T, index string) {
			for i := range kb.MaxIndexBytes/kb.MaxDocumentBytes + 1 {
				write(t, index, fmt.Sprintf("n%d.md", i), "# N\n"+strings.Repeat("x", kb.MaxDocumentBytes-4))
			}
		}, "more than"},
	} {
		t.Run(name, func(t *testing.T) {
			root := packageRoot(t, scored)
			tc.lay(t, filepath.Join(root, kb.IndexDir))
			_, err := kb.New(sourceManifest(t, nil), root)
			if err == nil || !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("got %v, want an error saying %q", err, tc.rule)
			}
		})
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func TestFindRoot(t *testing.T) {
	pkg := packageRoot(t, scored)
	write(t, pkg, kb.ManifestFile, "{}")
	other := t.TempDir() // a folder that is no package
	noIndex := t.TempDir()
	write(t, noIndex, kb.ManifestFile, "{}")
	linked := packageRoot(t, scored)
	link(t, filepath.Join(pkg, kb.ManifestFile), filepath.Join(linked, kb.ManifestFile))

	for _, tc := range []struct {
		name, workdir, program, want string
	}{
		{"the working folder first", pkg, filepath.Join(other, "provider"), pkg},
		{"the working folder, started by name", pkg, "provider", pkg},
		{"else the program's folder", other, filepath.Join(pkg, "provider"), pkg},
		{"a program path relative to the working folder", filepath.Dir(pkg), "./" + filepath.Base(pkg) + "/provider", pkg},
		{"a folder without an index is no package", noIndex, filepath.Join(pkg, "provider"), pkg},
		{"a linked manifest is no package", linked, filepath.Join(pkg, "provider"), pkg},
		{"neither", other, filepath.Join(noIndex, "provider"), ""},
		{"neither, under capgate's sealed copy", other, "/proc/self/fd/3", ""},
	} {
		got, err := kb.FindRoot(tc.workdir, tc.program)
		if tc.want == "" {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %q, %v; want fs.ErrNotExist", tc.name, got, err)
			}
			continue
		}
		if err != nil || filepath.Clean(got) != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestOpen(t *testing.T) {
	root := packageRoot(t, scored)
	raw := sourceManifest(t, nil).JSON()
	write(t, root, kb.ManifestFile, string(raw))
	h, err := kb.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Manifest().Raw(), sourceManifest(t, nil).Raw()) {
		t.Error("the handler reports another manifest than its package's")
	}
	if got := search(t, h, "beta"); len(got) != 2 {
		t.Errorf("search beta = %+v", got)
	}
	// An invalid manifest is refused: the program does not serve what it cannot report.
	write(t, root, kb.ManifestFile, `{"app_id":"org.example.kb"}`)
	if _, err := kb.Open(root); err == nil {
		t.Error("an invalid manifest was opened")
	}
	os.Remove(filepath.Join(root, kb.ManifestFile))
	if _, err := kb.Open(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no manifest: %v", err)
	}
}
