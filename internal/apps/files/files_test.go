package files_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/files"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

func TestManifest(t *testing.T) {
	doc := loadDoc(t, files.Manifest)
	m := doc.Manifest()
	if m.AppID != files.AppID {
		t.Fatalf("app_id %q", m.AppID)
	}
	ms := func(n int64) *int64 { return &n }
	want := []struct {
		id         string
		permission string
		risk       manifest.Risk
		effects    manifest.SideEffect
		undo       *int64
	}{
		{files.ListDirectoryID, "fs.read", manifest.RiskLow, manifest.SideEffectRead, nil},
		{files.ReadFileID, "fs.read", manifest.RiskLow, manifest.SideEffectRead, nil},
		{files.WriteFileID, "fs.write", manifest.RiskHigh, manifest.SideEffectWrite, ms(300000)},
		{files.DeleteFileID, "fs.delete", manifest.RiskHigh, manifest.SideEffectDestructive, ms(300000)},
		{files.CreateFileID, "fs.create", manifest.RiskMedium, manifest.SideEffectWrite, ms(300000)},
		{files.CreateDirectoryID, "fs.create", manifest.RiskMedium, manifest.SideEffectWrite, ms(300000)},
	}
	if len(m.Capabilities) != len(want) {
		t.Fatalf("%d capabilities, want %d", len(m.Capabilities), len(want))
	}
	for _, w := range want {
		c := m.Capability(w.id)
		if c == nil {
			t.Fatalf("%s missing", w.id)
		}
		id, _ := manifest.ParseCapabilityID(w.id)
		if id.Domain() != files.Alias {
			t.Errorf("%s: domain %q, want the alias", w.id, id.Domain())
		}
		if c.Permission != w.permission || c.Risk != w.risk || c.SideEffects != w.effects || c.AuthLevel != manifest.AuthUser {
			t.Errorf("%s: permission %s risk %s side effects %s auth %s", w.id, c.Permission, c.Risk, c.SideEffects, c.AuthLevel)
		}
		switch {
		case w.undo == nil && c.UndoWindowMS != nil:
			t.Errorf("%s: has an undo window", w.id)
		case w.undo != nil && (c.UndoWindowMS == nil || *c.UndoWindowMS != *w.undo || c.Reversibility != manifest.Reversible):
			t.Errorf("%s: undo window or reversibility wrong", w.id)
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Additional *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(c.Parameters, &schema); err != nil || schema.Additional == nil || *schema.Additional {
			t.Errorf("%s: parameters must set additionalProperties false", w.id)
		}
		if _, ok := schema.Properties["path"]; !ok {
			t.Errorf("%s: no path param", w.id)
		}
	}
}

// TestManifestLimits checks that the schemas' bounds are limits.go's.
func TestManifestLimits(t *testing.T) {
	var m struct {
		Capabilities []struct {
			ID         string `json:"id"`
			Parameters struct {
				Properties map[string]struct {
					MaxLength *int64 `json:"maxLength"`
					Maximum   *int64 `json:"maximum"`
				} `json:"properties"`
			} `json:"parameters"`
			Returns struct {
				Properties map[string]struct {
					MaxItems *int64 `json:"maxItems"`
					Maximum  *int64 `json:"maximum"`
				} `json:"properties"`
			} `json:"returns"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal([]byte(files.Manifest), &m); err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Capabilities {
		p := c.Parameters.Properties
		if v := p["path"].MaxLength; v == nil || *v != files.MaxPathBytes {
			t.Errorf("%s: path maxLength", c.ID)
		}
		if s, ok := p["content"]; ok && (s.MaxLength == nil || *s.MaxLength != files.MaxContentChars) {
			t.Errorf("%s: content maxLength", c.ID)
		}
		if s, ok := c.Returns.Properties["bytes_written"]; ok && (s.Maximum == nil || *s.Maximum != files.MaxContentBytes) {
			t.Errorf("%s: bytes_written maximum", c.ID)
		}
		switch c.ID {
		case files.ReadFileID:
			if v := p["length"].Maximum; v == nil || *v != files.MaxReadBytes {
				t.Errorf("length maximum")
			}
			if v := p["offset"].Maximum; v == nil || *v != files.MaxOffset {
				t.Errorf("offset maximum")
			}
		case files.ListDirectoryID:
			if v := c.Returns.Properties["entries"].MaxItems; v == nil || *v != files.MaxListEntries {
				t.Errorf("entries maxItems")
			}
		}
	}
	if files.MaxContentChars != len(base64.StdEncoding.EncodeToString(make([]byte, files.MaxContentBytes))) {
		t.Errorf("MaxContentChars is not the base64 length of MaxContentBytes")
	}
}

func TestNew(t *testing.T) {
	doc := loadDoc(t, files.Manifest)
	base := t.TempDir()
	root := filepath.Join(base, "root")
	os.Mkdir(root, 0o755)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o644)
	other := loadDoc(t, strings.ReplaceAll(strings.ReplaceAll(files.Manifest, "org.capgate.files", "org.example.files"), `"version": "1.0.0"`, `"version": "1.0.1"`))
	tests := []struct {
		name        string
		doc         *manifest.Document
		root, state string
	}{
		{"nil manifest", nil, root, filepath.Join(base, "s1")},
		{"another app's manifest", other, root, filepath.Join(base, "s2")},
		{"missing root", doc, filepath.Join(base, "nope"), filepath.Join(base, "s3")},
		{"root is a file", doc, file, filepath.Join(base, "s4")},
		{"empty root", doc, "", filepath.Join(base, "s5")},
		{"empty state", doc, root, ""},
		{"state inside the root", doc, root, filepath.Join(root, "state")},
		{"state is the root", doc, root, root},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := files.New(tt.doc, tt.root, tt.state)
			if err == nil {
				a.Close()
				t.Fatal("New succeeded")
			}
		})
	}
	t.Run("state inside the root through a link", func(t *testing.T) {
		link := filepath.Join(base, "rootlink")
		if err := os.Symlink(root, link); err != nil {
			t.Fatal(err)
		}
		if a, err := files.New(doc, root, filepath.Join(link, "state")); err == nil {
			a.Close()
			t.Fatal("New succeeded")
		}
	})
	t.Run("state folder created private", func(t *testing.T) {
		state := filepath.Join(base, "new", "state")
		a, err := files.New(doc, root, state)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		fi, err := os.Stat(filepath.Join(state, "undo"))
		if err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("undo area %v, %v", fi, err)
		}
	})
}

func TestUnknownCapability(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"files.org.capgate.files.nope", "settings.org.capgate.settings.get_setting", ""} {
		_, err := e.invoke(context.Background(), id, `{"path":"."}`)
		e.checkErr(err, sdk.CodeNotFound, id)
		e.checkErr(e.undo(id, strings.Repeat("a", 32)), sdk.CodeNotFound, id)
	}
	for _, id := range []string{files.ListDirectoryID, files.ReadFileID} {
		e.checkErr(e.undo(id, strings.Repeat("a", 32)), sdk.CodeExecutionFailed, "undo of "+id)
	}
}

func TestListDirectory(t *testing.T) {
	e := newEnv(t)
	e.writeFile("b.txt", "hello", 0o640)
	e.writeFile("a.txt", "", 0o644)
	os.Mkdir(e.path("sub"), 0o755)
	e.writeFile("sub/inner", "x", 0o644)
	os.Symlink("b.txt", e.path("link"))
	os.Symlink(e.secret, e.path("outlink")) // listed as a link; its target is never examined
	mtime := time.Unix(1706620800, 0)
	os.Chtimes(e.path("b.txt"), mtime, mtime)

	for _, p := range []string{".", "./", e.root, e.root + "/", e.root + "//.", "/" + strings.TrimPrefix(e.root, "/")} {
		m, tok := e.ok(files.ListDirectoryID, `{"path":`+q(p)+`}`)
		if tok != "" {
			t.Fatal("list_directory gave an undo token")
		}
		if m["path"] != e.root {
			t.Errorf("path %v, want %s", m["path"], e.root)
		}
		var names []string
		for _, x := range m["entries"].([]any) {
			names = append(names, x.(map[string]any)["name"].(string))
		}
		if want := []string{"a.txt", "b.txt", "link", "outlink", "sub"}; !slices.Equal(names, want) {
			t.Fatalf("names %v, want %v", names, want)
		}
		if m["count"] != 5.0 || m["truncated"] != false {
			t.Fatalf("count %v truncated %v", m["count"], m["truncated"])
		}
		ent := map[string]map[string]any{}
		for _, x := range m["entries"].([]any) {
			ent[x.(map[string]any)["name"].(string)] = x.(map[string]any)
		}
		if b := ent["b.txt"]; b["type"] != "file" || b["size"] != 5.0 || b["permissions"] != "rw-r-----" || b["modified"] != 1706620800.0 {
			t.Errorf("b.txt: %v", b)
		}
		if ent["sub"]["type"] != "directory" || ent["link"]["type"] != "symlink" || ent["outlink"]["type"] != "symlink" {
			t.Errorf("types: %v", ent)
		}
	}
	m, _ := e.ok(files.ListDirectoryID, `{"path":"sub"}`)
	if m["path"] != e.path("sub") || m["count"] != 1.0 {
		t.Errorf("sub: %v", m)
	}
	// A link to a folder inside the root is followed.
	os.Symlink("sub", e.path("sublink"))
	if m, _ := e.ok(files.ListDirectoryID, `{"path":"sublink"}`); m["count"] != 1.0 {
		t.Errorf("sublink: %v", m)
	}
	e.fails(files.ListDirectoryID, `{"path":"b.txt"}`, sdk.CodeExecutionFailed)
	e.fails(files.ListDirectoryID, `{"path":"nope"}`, sdk.CodeExecutionFailed)
	e.fails(files.ListDirectoryID, `{"path":"b.txt/x"}`, sdk.CodeExecutionFailed)
}

func TestListDirectoryBounds(t *testing.T) {
	e := newEnv(t)
	os.Mkdir(e.path("many"), 0o755)
	for i := range files.MaxListEntries + 5 {
		f, err := os.Create(e.path(fmt.Sprintf("many/f%05d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	m, _ := e.ok(files.ListDirectoryID, `{"path":"many"}`)
	if m["truncated"] != true || m["count"] != float64(files.MaxListEntries) || len(m["entries"].([]any)) != files.MaxListEntries {
		t.Fatalf("truncated %v count %v", m["truncated"], m["count"])
	}
	names := []string{}
	for _, x := range m["entries"].([]any) {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	if !slices.IsSorted(names) {
		t.Error("entries not sorted")
	}
}

func TestListDirectorySkipsUnnamable(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(e.path("bad\xff\xfe"), nil, 0o644); err != nil {
		t.Skip("the filesystem refuses names that are not UTF-8")
	}
	e.writeFile("good", "", 0o644)
	m, _ := e.ok(files.ListDirectoryID, `{"path":"."}`)
	if m["count"] != 1.0 || m["skipped"] != 1.0 {
		t.Fatalf("count %v skipped %v", m["count"], m["skipped"])
	}
}

func TestReadFile(t *testing.T) {
	e := newEnv(t)
	e.writeFile("text.txt", "héllo, wörld", 0o644)
	bin := []byte{0, 1, 2, 0xff, 0xfe, 'a'}
	os.WriteFile(e.path("bin"), bin, 0o644)
	os.Mkdir(e.path("dir"), 0o755)
	os.Symlink("text.txt", e.path("link"))

	m, tok := e.ok(files.ReadFileID, `{"path":"text.txt"}`)
	if tok != "" || m["content"] != "héllo, wörld" || m["encoding"] != "utf-8" || m["eof"] != true || m["size"] != 14.0 || m["returned"] != 14.0 || m["path"] != e.path("text.txt") {
		t.Errorf("text: %v", m)
	}
	m, _ = e.ok(files.ReadFileID, `{"path":"bin"}`)
	if m["encoding"] != "base64" || m["content"] != base64.StdEncoding.EncodeToString(bin) {
		t.Errorf("binary: %v", m)
	}
	m, _ = e.ok(files.ReadFileID, `{"path":`+q(e.path("link"))+`}`)
	if m["content"] != "héllo, wörld" {
		t.Errorf("through a link inside the root: %v", m)
	}
	m, _ = e.ok(files.ReadFileID, `{"path":"text.txt","offset":100}`)
	if m["content"] != "" || m["returned"] != 0.0 || m["eof"] != true || m["offset"] != 100.0 {
		t.Errorf("past the end: %v", m)
	}
	// Integers spelled as JSON allows (2.0, 2e0) are integers to the schema and to the app.
	m, _ = e.ok(files.ReadFileID, `{"path":"text.txt","offset":8.0,"length":5e0}`)
	if m["content"] != "wörl" || m["returned"] != 5.0 {
		t.Errorf("offset 8 length 5: %v", m)
	}
	e.fails(files.ReadFileID, `{"path":"dir"}`, sdk.CodeExecutionFailed)
	e.fails(files.ReadFileID, `{"path":"nope"}`, sdk.CodeExecutionFailed)
	e.fails(files.ReadFileID, `{"path":"text.txt","length":0}`, sdk.CodeInvalidParams)
	e.fails(files.ReadFileID, `{"path":"text.txt","length":1048577}`, sdk.CodeInvalidParams)
	e.fails(files.ReadFileID, `{"path":"text.txt","offset":-1}`, sdk.CodeInvalidParams)
	e.fails(files.ReadFileID, `{"path":"text.txt","offset":1.5}`, sdk.CodeInvalidParams)
	e.fails(files.ReadFileID, `{"path":"text.txt","offset":"0"}`, sdk.CodeInvalidParams)
	e.fails(files.ReadFileID, `{"path":"text.txt","offset":1e300}`, sdk.CodeInvalidParams)
	// Directly, without the gateway's schema check, the app checks the same rules.
	for _, p := range []string{`{"path":"text.txt","length":0}`, `{"path":"text.txt","offset":-1}`, `{"path":"text.txt","offset":1.5}`, `{"path":"text.txt","length":1e300}`, `{"path":"text.txt","offset":"0"}`, `{"path":"text.txt","length": "5"}`, `{"path":"text.txt","mode":"append"}`, `{"path":5}`, `[]`, `null`, `{}`} {
		_, err := e.invoke(context.Background(), files.ReadFileID, p)
		e.checkErr(err, sdk.CodeInvalidParams, p)
	}
}

// TestReadFilePages reads a file of many-byte characters in small pages and checks that the
// pages join to the file, each page text (a character cut by a page's end moves to the next).
func TestReadFilePages(t *testing.T) {
	e := newEnv(t)
	text := strings.Repeat("aé€😀", 50)
	e.writeFile("multi", text, 0o644)
	for _, length := range []int{1, 2, 3, 4, 5, 7, 64} {
		var got strings.Builder
		offset := 0
		for range 10000 {
			m, _ := e.ok(files.ReadFileID, fmt.Sprintf(`{"path":"multi","offset":%d,"length":%d}`, offset, length))
			c := m["content"].(string)
			if length >= 4 && m["encoding"] != "utf-8" {
				t.Fatalf("length %d offset %d: a page of text came back as %v", length, offset, m["encoding"])
			}
			if m["encoding"] == "base64" {
				b, _ := base64.StdEncoding.DecodeString(c)
				c = string(b)
			}
			got.WriteString(c)
			offset += int(m["returned"].(float64))
			if m["eof"] == true {
				break
			}
		}
		if got.String() != text {
			t.Fatalf("length %d: pages do not join to the file", length)
		}
	}
}

func TestPathEscapes(t *testing.T) {
	e := newEnv(t)
	// A sibling folder whose name starts with the root's.
	root2 := e.root + "2"
	os.Mkdir(root2, 0o755)
	os.WriteFile(filepath.Join(root2, "f"), []byte("other"), 0o644)
	t.Cleanup(func() {
		if b, _ := os.ReadFile(filepath.Join(root2, "f")); string(b) != "other" {
			t.Error("root2/f changed")
		}
	})
	e.writeFile("inside", "in", 0o644)
	os.Mkdir(e.path("sub"), 0o755)
	os.Symlink(e.secret, e.path("abslink"))            // an absolute link out
	os.Symlink("../outside/secret", e.path("rellink")) // a relative link out
	os.Symlink(e.outside, e.path("absdir"))            // a link to the outside folder
	os.Symlink("../../outside", e.path("sub/reldir"))  // a relative link to it, one down
	os.Symlink(e.path("inside"), e.path("absin"))      // absolute links are refused even inside
	os.Symlink("sub/reldir", e.path("chain"))          // a link to a link out

	outside := []string{
		"..", "../", "../outside/secret", "sub/../../outside/secret", "./../outside/secret",
		e.secret, e.outside, "/", "/etc/passwd", filepath.Dir(e.root),
		e.root + "/../outside/secret", e.root + "/../" + filepath.Base(root2) + "/f",
		root2, root2 + "/f", e.root + "2/f",
		"abslink", "rellink", "absdir/secret", "absdir", "sub/reldir/secret", "sub/reldir",
		"chain/secret", e.path("rellink"), e.path("absdir") + "/secret",
	}
	methods := []struct {
		id    string
		extra string
	}{
		{files.ListDirectoryID, ""},
		{files.ReadFileID, ""},
		{files.WriteFileID, `,"content":"pwned"`},
		{files.WriteFileID, `,"content":"pwned","mode":"append"`},
		{files.CreateFileID, `,"content":"pwned"`},
		{files.CreateDirectoryID, ""},
	}
	for _, p := range outside {
		for _, m := range methods {
			_, err := e.call(m.id, `{"path":`+q(p)+m.extra+`}`)
			if err == nil {
				t.Fatalf("%s %q: succeeded", m.id, p)
			}
			se := e.checkErr(err, sdkCode(err), m.id+" "+p)
			// A path that leaves the root before any link is followed, or through a link,
			// is PermissionDenied; a write that meets a link or a file refuses it otherwise.
			if se.Code != sdk.CodePermissionDenied && se.Code != sdk.CodeExecutionFailed {
				t.Fatalf("%s %q: code %s", m.id, p, se.Code)
			}
			if (m.id == files.ReadFileID || m.id == files.ListDirectoryID) && se.Code != sdk.CodePermissionDenied {
				t.Fatalf("%s %q: %v, want PermissionDenied", m.id, p, err)
			}
		}
	}
	// Reading through each link out is PermissionDenied, never the secret.
	for _, p := range []string{"abslink", "rellink", "absdir/secret", "sub/reldir/secret", "chain/secret", "absin"} {
		se := e.fails(files.ReadFileID, `{"path":`+q(p)+`}`, sdk.CodePermissionDenied)
		if se.Reason != "the path is outside the files app's folder" {
			t.Errorf("%s: reason %q", p, se.Reason)
		}
	}
	// A ".." that stays inside is refused too: the gateway resolves it after links.
	for _, p := range []string{"sub/../inside", e.root + "/sub/../inside", "sub/reldir/../x"} {
		e.fails(files.ReadFileID, `{"path":`+q(p)+`}`, sdk.CodeInvalidParams)
	}
	// Deleting a link out removes the link, never its target.
	for _, p := range []string{"abslink", "rellink", "absdir", "sub/reldir"} {
		m, tok := e.ok(files.DeleteFileID, `{"path":`+q(p)+`}`)
		if m["type"] != "symlink" {
			t.Errorf("%s: deleted a %v", p, m["type"])
		}
		e.missing(p)
		if err := e.undo(files.DeleteFileID, tok); err != nil {
			t.Fatalf("undo delete %s: %v", p, err)
		}
		if _, err := os.Readlink(e.path(p)); err != nil {
			t.Fatalf("%s not restored as a link: %v", p, err)
		}
	}
	// Nothing was made inside through a link either.
	if _, err := os.Lstat(filepath.Join(e.outside, "pwned")); err == nil {
		t.Error("a file was made outside")
	}
}

func sdkCode(err error) sdk.Code {
	if se, ok := err.(*sdk.Error); ok {
		return se.Code
	}
	return ""
}

// TestSymlinkedParent swaps a folder of the path for a link out between calls.
func TestSymlinkedParent(t *testing.T) {
	e := newEnv(t)
	os.Mkdir(e.path("d"), 0o755)
	e.writeFile("d/secret", "inner", 0o644)
	e.ok(files.ReadFileID, `{"path":"d/secret"}`)
	os.RemoveAll(e.path("d"))
	os.Symlink(e.outside, e.path("d"))
	for _, m := range []struct{ id, extra string }{
		{files.ReadFileID, ""}, {files.WriteFileID, `,"content":"x"`}, {files.DeleteFileID, ""},
		{files.CreateFileID, ""}, {files.CreateDirectoryID, ""}, {files.ListDirectoryID, ""},
	} {
		for _, p := range []string{"d/secret", "d/new", e.path("d/secret")} {
			e.fails(m.id, `{"path":`+q(p)+m.extra+`}`, sdk.CodePermissionDenied)
		}
	}
}

// TestRootThroughLink serves a root named through a link: paths under either spelling are
// inside, answers use the spelling given to New.
func TestRootThroughLink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o755)
	os.WriteFile(filepath.Join(real, "f"), []byte("x"), 0o644)
	link := filepath.Join(base, "link")
	os.Symlink(real, link)
	doc := loadDoc(t, files.Manifest)
	a, err := files.New(doc, link, filepath.Join(base, "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, p := range []string{link + "/f", real + "/f", "f"} {
		res, err := a.Invoke(context.Background(), files.ReadFileID, json.RawMessage(`{"path":`+q(p)+`}`), ic())
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var m map[string]any
		json.Unmarshal(res.Data, &m)
		if m["path"] != link+"/f" {
			t.Errorf("%s: path %v", p, m["path"])
		}
	}
}

func TestBadParams(t *testing.T) {
	e := newEnv(t)
	e.writeFile("f", "x", 0o644)
	long := strings.Repeat("a/", files.MaxPathBytes/2) + "b"
	validated := []struct {
		id, params string
	}{
		{files.ReadFileID, `{"path":""}`},
		{files.ReadFileID, `{"path":"f\u0000"}`},
		{files.ReadFileID, `{"path":"\u0000"}`},
		{files.ReadFileID, `{"path":"\ud800"}`},
		{files.ReadFileID, "{\"path\":\"f\xff\"}"},
		{files.ReadFileID, `{"path":` + q(long) + `}`},
		{files.ReadFileID, `{"path":"f","path":"g"}`},
		{files.ReadFileID, `{"path":"f","extra":1}`},
		{files.ReadFileID, `{"PATH":"f"}`},
		{files.ReadFileID, `{"path":["f"]}`},
		{files.ReadFileID, `{}`},
		{files.WriteFileID, `{"path":"f"}`},
		{files.WriteFileID, `{"path":"f","content":"x","mode":"Overwrite"}`},
		{files.WriteFileID, `{"path":"f","content":"x","mode":"truncate"}`},
		{files.WriteFileID, `{"path":"f","content":"x","encoding":"utf8"}`},
		{files.WriteFileID, `{"path":"f","content":"x","encoding":"UTF-8"}`},
		{files.WriteFileID, `{"path":"f","content":"x","offset":0}`},
		{files.WriteFileID, `{"path":"f","content":null}`},
		{files.WriteFileID, `{"path":"f","content":` + q(strings.Repeat("a", files.MaxContentChars+1)) + `}`},
		{files.WriteFileID, `{"path":"f","content":` + q(strings.Repeat("a", 5<<20)) + `}`},
		{files.CreateFileID, `{"path":"g","mode":"append"}`},
		{files.CreateDirectoryID, `{"path":"g","content":""}`},
		{files.DeleteFileID, `{"path":"f","recursive":true}`},
		{files.ListDirectoryID, `{"path":"."} {}`},
	}
	for _, tt := range validated {
		e.fails(tt.id, tt.params, sdk.CodeInvalidParams)
	}
	// The app's own checks, for a caller that skips the gateway's.
	direct := []struct {
		id, params string
	}{
		{files.ReadFileID, `{"path":""}`},
		{files.ReadFileID, `{"path":"f\u0000"}`},
		{files.ReadFileID, "{\"path\":\"f\xff\"}"},
		{files.ReadFileID, `{"path":` + q(long) + `}`},
		{files.ReadFileID, `{"path":"a/../f"}`},
		{files.ReadFileID, `{"path":"f","extra":1}`},
		{files.ReadFileID, `{"path":null}`},
		{files.WriteFileID, `{"path":"f"}`},
		{files.WriteFileID, `{"path":"f","content":"x","mode":"Overwrite"}`},
		{files.WriteFileID, `{"path":"f","content":"x","encoding":"hex"}`},
		{files.WriteFileID, `{"path":"f","content":"eA=","encoding":"base64"}`},
		{files.WriteFileID, `{"path":"f","content":"eA==\n","encoding":"base64"}`},
		{files.WriteFileID, `{"path":"f","content":"eB==","encoding":"base64"}`},
		{files.WriteFileID, `{"path":"f","content":"e_A=","encoding":"base64"}`},
		{files.WriteFileID, `{"path":"f","content":` + q(strings.Repeat("a", files.MaxContentBytes+1)) + `}`},
		{files.WriteFileID, `{"path":"f","content":` + q(base64.StdEncoding.EncodeToString(make([]byte, files.MaxContentBytes+1))) + `,"encoding":"base64"}`},
		{files.CreateFileID, `{"path":"g","content":"eA=","encoding":"base64"}`},
	}
	for _, tt := range direct {
		_, err := e.invoke(context.Background(), tt.id, tt.params)
		e.checkErr(err, sdk.CodeInvalidParams, tt.id+" "+abbrev(tt.params))
	}
	if e.readFile("f") != "x" {
		t.Fatal("a refused call changed the file")
	}
	// The largest content is taken.
	big := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, files.MaxContentBytes))
	m, _ := e.ok(files.WriteFileID, `{"path":"big","content":`+q(big)+`,"encoding":"base64"}`)
	if m["bytes_written"] != float64(files.MaxContentBytes) {
		t.Fatalf("bytes_written %v", m["bytes_written"])
	}
}

func TestWriteFile(t *testing.T) {
	e := newEnv(t)
	e.writeFile("f", "old", 0o600)

	m, tok := e.ok(files.WriteFileID, `{"path":"f","content":"new text"}`)
	if m["status"] != "success" || m["bytes_written"] != 8.0 || m["created"] != false || m["path"] != e.path("f") || tok == "" {
		t.Fatalf("overwrite: %v %q", m, tok)
	}
	if e.readFile("f") != "new text" {
		t.Fatal("overwrite did not write")
	}
	if fi, _ := os.Stat(e.path("f")); fi.Mode().Perm() != 0o600 {
		t.Errorf("overwrite changed the mode to %v", fi.Mode().Perm())
	}
	if err := e.undo(files.WriteFileID, tok); err != nil {
		t.Fatal(err)
	}
	if e.readFile("f") != "old" {
		t.Fatal("undo did not restore the previous bytes")
	}
	if err := e.undo(files.WriteFileID, tok); err == nil {
		t.Fatal("an undo token worked twice")
	}

	// Append, and undo.
	_, tok = e.ok(files.WriteFileID, `{"path":"f","content":" more","mode":"append"}`)
	if e.readFile("f") != "old more" {
		t.Fatalf("append: %q", e.readFile("f"))
	}
	if err := e.undo(files.WriteFileID, tok); err != nil || e.readFile("f") != "old" {
		t.Fatalf("undo append: %v %q", err, e.readFile("f"))
	}

	// A new file, by overwrite and by append, and undo removes it.
	for _, mode := range []string{"overwrite", "append"} {
		m, tok = e.ok(files.WriteFileID, `{"path":"new","content":"hi","mode":"`+mode+`"}`)
		if m["created"] != true || e.readFile("new") != "hi" {
			t.Fatalf("%s new: %v", mode, m)
		}
		if err := e.undo(files.WriteFileID, tok); err != nil {
			t.Fatal(err)
		}
		e.missing("new")
	}

	// Base64 content, binary bytes.
	bin := []byte{0, 0xff, 1, 0xfe}
	e.ok(files.WriteFileID, `{"path":"bin","content":"`+base64.StdEncoding.EncodeToString(bin)+`","encoding":"base64"}`)
	if e.readFile("bin") != string(bin) {
		t.Fatal("base64 content")
	}
	// Empty content empties the file.
	e.ok(files.WriteFileID, `{"path":"bin","content":""}`)
	if e.readFile("bin") != "" {
		t.Fatal("empty content")
	}

	// Undo restores even when the file changed since (the state before the write is asked for).
	_, tok = e.ok(files.WriteFileID, `{"path":"f","content":"v2"}`)
	os.WriteFile(e.path("f"), []byte("changed by someone else"), 0o600)
	if err := e.undo(files.WriteFileID, tok); err != nil || e.readFile("f") != "old" {
		t.Fatalf("undo after a change: %v %q", err, e.readFile("f"))
	}
	// ... but not when the file is gone, and the record is kept for a retry.
	_, tok = e.ok(files.WriteFileID, `{"path":"f","content":"v3"}`)
	os.Rename(e.path("f"), e.path("f.moved"))
	e.checkErr(e.undo(files.WriteFileID, tok), sdk.CodeExecutionFailed, "undo of a moved file")
	e.missing("f")
	os.Rename(e.path("f.moved"), e.path("f"))
	if err := e.undo(files.WriteFileID, tok); err != nil || e.readFile("f") != "old" {
		t.Fatalf("retried undo: %v", err)
	}
	// ... nor when a folder took its place.
	_, tok = e.ok(files.WriteFileID, `{"path":"g","content":"v"}`)
	os.Remove(e.path("g"))
	os.Mkdir(e.path("g"), 0o755)
	e.checkErr(e.undo(files.WriteFileID, tok), sdk.CodeExecutionFailed, "undo over a folder")

	os.Mkdir(e.path("dir"), 0o755)
	os.Symlink("f", e.path("link"))
	e.fails(files.WriteFileID, `{"path":"dir","content":"x"}`, sdk.CodeExecutionFailed)
	e.fails(files.WriteFileID, `{"path":".","content":"x"}`, sdk.CodeExecutionFailed)
	e.fails(files.WriteFileID, `{"path":"link","content":"x"}`, sdk.CodeExecutionFailed)
	e.fails(files.WriteFileID, `{"path":"nodir/f","content":"x"}`, sdk.CodeExecutionFailed)
	e.fails(files.WriteFileID, `{"path":"f/x","content":"x"}`, sdk.CodeExecutionFailed)
	if e.readFile("f") != "old" {
		t.Fatal("a refused write changed the file")
	}
	e.missing("nodir")
	// No temporary files are left behind.
	ents, _ := os.ReadDir(e.root)
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), ".capgate-") {
			t.Errorf("temporary file %s left", ent.Name())
		}
	}
}

// TestWriteReadOnly: a file the filesystem keeps read-only is not replaced, though the
// folder would allow the rename.
func TestWriteReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("the superuser writes read-only files")
	}
	e := newEnv(t)
	e.writeFile("ro", "keep", 0o444)
	e.fails(files.WriteFileID, `{"path":"ro","content":"x"}`, sdk.CodePermissionDenied)
	e.fails(files.WriteFileID, `{"path":"ro","content":"x","mode":"append"}`, sdk.CodePermissionDenied)
	if e.readFile("ro") != "keep" {
		t.Fatal("a read-only file was changed")
	}
}

func TestDeleteFile(t *testing.T) {
	e := newEnv(t)
	e.writeFile("f", "precious", 0o640)
	os.Mkdir(e.path("empty"), 0o750)
	os.Mkdir(e.path("full"), 0o755)
	e.writeFile("full/x", "x", 0o644)
	os.Symlink("f", e.path("link"))

	m, tok := e.ok(files.DeleteFileID, `{"path":"f"}`)
	if m["deleted"] != true || m["type"] != "file" || m["path"] != e.path("f") || tok == "" {
		t.Fatalf("delete: %v", m)
	}
	e.missing("f")
	if n, b := files.UndoState(e.app); n != 1 || b != int64(len("precious")) {
		t.Errorf("undo area: %d records, %d bytes", n, b)
	}
	if err := e.undo(files.DeleteFileID, tok); err != nil {
		t.Fatal(err)
	}
	if e.readFile("f") != "precious" {
		t.Fatal("undo did not restore the file")
	}
	if fi, _ := os.Stat(e.path("f")); fi.Mode().Perm() != 0o640 {
		t.Errorf("restored mode %v", fi.Mode().Perm())
	}
	if n, b := files.UndoState(e.app); n != 0 || b != 0 {
		t.Errorf("undo area after undo: %d records, %d bytes", n, b)
	}

	_, tok = e.ok(files.DeleteFileID, `{"path":"empty"}`)
	e.missing("empty")
	if err := e.undo(files.DeleteFileID, tok); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(e.path("empty")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
		t.Fatalf("empty folder not restored: %v %v", fi, err)
	}

	_, tok = e.ok(files.DeleteFileID, `{"path":"link"}`)
	e.missing("link")
	if e.readFile("f") != "precious" {
		t.Fatal("deleting a link changed its target")
	}
	if err := e.undo(files.DeleteFileID, tok); err != nil {
		t.Fatal(err)
	}
	if l, _ := os.Readlink(e.path("link")); l != "f" {
		t.Fatalf("link restored as %q", l)
	}

	// Undo refuses to overwrite what now exists, and keeps the record for a retry.
	_, tok = e.ok(files.DeleteFileID, `{"path":"f"}`)
	os.WriteFile(e.path("f"), []byte("newer"), 0o644)
	e.checkErr(e.undo(files.DeleteFileID, tok), sdk.CodeExecutionFailed, "undo over a new file")
	if e.readFile("f") != "newer" {
		t.Fatal("undo overwrote a newer file")
	}
	os.Remove(e.path("f"))
	if err := e.undo(files.DeleteFileID, tok); err != nil || e.readFile("f") != "precious" {
		t.Fatalf("retried undo: %v", err)
	}

	// Undo when the folder that held it is gone.
	os.Mkdir(e.path("d"), 0o755)
	e.writeFile("d/f", "x", 0o644)
	_, tok = e.ok(files.DeleteFileID, `{"path":"d/f"}`)
	os.Remove(e.path("d"))
	e.checkErr(e.undo(files.DeleteFileID, tok), sdk.CodeExecutionFailed, "undo without its folder")

	e.fails(files.DeleteFileID, `{"path":"full"}`, sdk.CodeExecutionFailed)
	e.fails(files.DeleteFileID, `{"path":"."}`, sdk.CodeExecutionFailed)
	e.fails(files.DeleteFileID, `{"path":`+q(e.root)+`}`, sdk.CodeExecutionFailed)
	e.fails(files.DeleteFileID, `{"path":"nope"}`, sdk.CodeExecutionFailed)
	if e.readFile("full/x") != "x" {
		t.Fatal("a refused delete removed a file")
	}
}

func TestCreate(t *testing.T) {
	e := newEnv(t)
	m, tok := e.ok(files.CreateFileID, `{"path":"new.txt","content":"hello"}`)
	if m["created"] != true || m["bytes_written"] != 5.0 || tok == "" || e.readFile("new.txt") != "hello" {
		t.Fatalf("create_file: %v", m)
	}
	e.fails(files.CreateFileID, `{"path":"new.txt"}`, sdk.CodeExecutionFailed)
	if err := e.undo(files.CreateFileID, tok); err != nil {
		t.Fatal(err)
	}
	e.missing("new.txt")

	// Without content: an empty file. Changed since: undo leaves it.
	_, tok = e.ok(files.CreateFileID, `{"path":"empty"}`)
	if e.readFile("empty") != "" {
		t.Fatal("not empty")
	}
	os.WriteFile(e.path("empty"), []byte("work"), 0o644)
	e.checkErr(e.undo(files.CreateFileID, tok), sdk.CodeExecutionFailed, "undo of a changed file")
	if e.readFile("empty") != "work" {
		t.Fatal("undo removed a changed file")
	}
	// Same size, other bytes.
	_, tok = e.ok(files.CreateFileID, `{"path":"same","content":"abcd"}`)
	os.WriteFile(e.path("same"), []byte("wxyz"), 0o644)
	e.checkErr(e.undo(files.CreateFileID, tok), sdk.CodeExecutionFailed, "undo of a changed file")

	// A dangling link at the path is something: create refuses it.
	os.Symlink(e.secret, e.path("dangling"))
	os.Symlink("nowhere", e.path("dangling2"))
	e.fails(files.CreateFileID, `{"path":"dangling"}`, sdk.CodeExecutionFailed)
	e.fails(files.CreateFileID, `{"path":"dangling2"}`, sdk.CodeExecutionFailed)
	e.missing("nowhere")

	m, tok = e.ok(files.CreateDirectoryID, `{"path":"dir"}`)
	if m["created"] != true || tok == "" {
		t.Fatalf("create_directory: %v", m)
	}
	if fi, err := os.Stat(e.path("dir")); err != nil || !fi.IsDir() {
		t.Fatal("no folder")
	}
	e.fails(files.CreateDirectoryID, `{"path":"dir"}`, sdk.CodeExecutionFailed)
	e.fails(files.CreateDirectoryID, `{"path":"a/b"}`, sdk.CodeExecutionFailed)
	e.fails(files.CreateDirectoryID, `{"path":"."}`, sdk.CodeExecutionFailed)
	e.ok(files.CreateFileID, `{"path":"dir/inner"}`)
	e.checkErr(e.undo(files.CreateDirectoryID, tok), sdk.CodeExecutionFailed, "undo of a folder with entries")
	os.Remove(e.path("dir/inner"))
	if err := e.undo(files.CreateDirectoryID, tok); err != nil {
		t.Fatal(err)
	}
	e.missing("dir")
}

func TestUndoTokens(t *testing.T) {
	e := newEnv(t)
	e.writeFile("f", "v1", 0o644)
	_, tok := e.ok(files.WriteFileID, `{"path":"f","content":"v2"}`)
	if len(tok) != 32 || strings.Trim(tok, "0123456789abcdef") != "" {
		t.Fatalf("token %q is not 128 bits of hex", tok)
	}
	_, tok2 := e.ok(files.WriteFileID, `{"path":"f","content":"v3"}`)
	if tok2 == tok {
		t.Fatal("two changes share a token")
	}
	forged := []string{"", "x", strings.Repeat("0", 32), strings.ToUpper(tok), tok + "0", "../" + tok[3:], tok[:31] + "/", "../undo/" + tok, `{"path":"f"}`}
	for _, f := range forged {
		e.checkErr(e.undo(files.WriteFileID, f), sdk.CodeExecutionFailed, "forged token "+f)
	}
	// A token names its capability.
	e.checkErr(e.undo(files.DeleteFileID, tok), sdk.CodeExecutionFailed, "another capability's token")
	if e.readFile("f") != "v3" {
		t.Fatal("a refused undo changed the file")
	}
	// Undoing in reverse order walks back.
	if err := e.undo(files.WriteFileID, tok2); err != nil || e.readFile("f") != "v2" {
		t.Fatalf("undo 2: %v", err)
	}
	if err := e.undo(files.WriteFileID, tok); err != nil || e.readFile("f") != "v1" {
		t.Fatalf("undo 1: %v", err)
	}
}

func TestPurge(t *testing.T) {
	e := newEnv(t)
	e.writeFile("f", "v1", 0o644)
	_, tok := e.ok(files.WriteFileID, `{"path":"f","content":"v2"}`)
	_, tok2 := e.ok(files.DeleteFileID, `{"path":"f"}`)
	if n := e.app.Purge(time.Now()); n != 0 {
		t.Fatalf("purged %d records inside their window", n)
	}
	if n := e.app.Purge(time.Now().Add(5*time.Minute + time.Second)); n != 2 {
		t.Fatalf("purged %d, want 2", n)
	}
	if n, b := files.UndoState(e.app); n != 0 || b != 0 {
		t.Fatalf("undo area after purge: %d records %d bytes", n, b)
	}
	left, _ := os.ReadDir(filepath.Join(e.state, "undo"))
	if len(left) != 0 {
		t.Fatalf("%d files left in the undo area", len(left))
	}
	se := e.checkErr(e.undo(files.WriteFileID, tok), sdk.CodeExecutionFailed, "undo after purge")
	if !strings.Contains(se.Reason, "window ended") {
		t.Errorf("reason %q does not say the window may have ended", se.Reason)
	}
	e.checkErr(e.undo(files.DeleteFileID, tok2), sdk.CodeExecutionFailed, "undo after purge")
}

// TestLazyPurge uses a manifest with a 1 ms window: the next call purges, and an undo past
// the window is refused even before a purge.
func TestLazyPurge(t *testing.T) {
	e := newEnvWith(t, strings.ReplaceAll(files.Manifest, `"undo_window_ms": 300000`, `"undo_window_ms": 1`))
	e.writeFile("f", "v1", 0o644)
	_, tok := e.ok(files.WriteFileID, `{"path":"f","content":"v2"}`)
	time.Sleep(20 * time.Millisecond)
	se := e.checkErr(e.undo(files.WriteFileID, tok), sdk.CodeExecutionFailed, "undo past the window")
	if se.Reason != "the undo window has ended" {
		t.Errorf("reason %q", se.Reason)
	}
	e.ok(files.WriteFileID, `{"path":"f","content":"v3"}`)
	time.Sleep(20 * time.Millisecond)
	e.ok(files.ListDirectoryID, `{"path":"."}`)
	if n, _ := files.UndoState(e.app); n != 0 {
		t.Fatalf("%d records left after a call past their window", n)
	}
}

// TestUndoSurvivesRestart: the undo area is on disk; a new App over it undoes, and drops
// damaged records and stray files.
func TestUndoSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	e.writeFile("f", "v1", 0o644)
	_, tok := e.ok(files.WriteFileID, `{"path":"f","content":"v2"}`)
	_, tok2 := e.ok(files.WriteFileID, `{"path":"f","content":"v3"}`)
	_, tok3 := e.ok(files.CreateFileID, `{"path":"g","content":"x"}`)
	e.app.Close()
	undoDir := filepath.Join(e.state, "undo")
	os.WriteFile(filepath.Join(undoDir, tok2+".json"), []byte(`{"id":"`+tok2+`","capability":"x"}`), 0o600)
	os.WriteFile(filepath.Join(undoDir, tok3+".data"), []byte("stray"), 0o600)
	os.WriteFile(filepath.Join(undoDir, "junk.tmp"), []byte("stray"), 0o600)
	// A copy whose bytes changed is caught by its digest.
	a, err := files.New(e.doc, e.root, e.state)
	if err != nil {
		t.Fatal(err)
	}
	e.app = a
	if n, _ := files.UndoState(a); n != 2 {
		t.Fatalf("%d records loaded, want 2", n)
	}
	for _, name := range []string{tok2 + ".json", tok2 + ".data", tok3 + ".data", "junk.tmp"} {
		if _, err := os.Stat(filepath.Join(undoDir, name)); err == nil {
			t.Errorf("%s kept", name)
		}
	}
	e.checkErr(e.undo(files.WriteFileID, tok2), sdk.CodeExecutionFailed, "undo of a damaged record")
	if err := e.undo(files.CreateFileID, tok3); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(undoDir, tok+".data"), []byte("v9"), 0o600) // same size, other bytes
	e.checkErr(e.undo(files.WriteFileID, tok), sdk.CodeExecutionFailed, "undo from a tampered copy")
	if e.readFile("f") != "v3" {
		t.Fatal("a tampered copy was restored")
	}
	os.WriteFile(filepath.Join(undoDir, tok+".data"), []byte("v1"), 0o600)
	if err := e.undo(files.WriteFileID, tok); err != nil || e.readFile("f") != "v1" {
		t.Fatalf("undo after restart: %v", err)
	}
}

func TestUndoLimits(t *testing.T) {
	e := newEnv(t)
	e.writeFile("big", strings.Repeat("b", 100), 0o644)
	e.writeFile("small", "s", 0o644)
	files.SetUndoLimits(e.app, 50, 1000, 3)
	e.fails(files.WriteFileID, `{"path":"big","content":"x"}`, sdk.CodeExecutionFailed)
	e.fails(files.DeleteFileID, `{"path":"big"}`, sdk.CodeExecutionFailed)
	if e.readFile("big") != strings.Repeat("b", 100) {
		t.Fatal("a refused change changed the file")
	}
	for range 3 {
		e.ok(files.WriteFileID, `{"path":"small","content":"s"}`)
	}
	se := e.fails(files.WriteFileID, `{"path":"small","content":"t"}`, sdk.CodeExecutionFailed)
	if !se.Recoverable {
		t.Error("a full undo area is recoverable")
	}
	e.fails(files.CreateDirectoryID, `{"path":"d"}`, sdk.CodeExecutionFailed)
	e.missing("d")
	e.app.Purge(time.Now().Add(time.Hour))
	// Bytes: two copies of 40 bytes fit in 100, a third does not.
	files.SetUndoLimits(e.app, 50, 100, 100)
	e.writeFile("mid", strings.Repeat("m", 40), 0o644)
	e.ok(files.WriteFileID, `{"path":"mid","content":`+q(strings.Repeat("m", 40))+`}`)
	e.ok(files.WriteFileID, `{"path":"mid","content":`+q(strings.Repeat("m", 40))+`}`)
	e.fails(files.WriteFileID, `{"path":"mid","content":"x"}`, sdk.CodeExecutionFailed)
	if n, b := files.UndoState(e.app); n != 2 || b != 80 {
		t.Fatalf("undo area: %d records %d bytes", n, b)
	}
}

// TestConcurrentWrites: writers overwrite and append one file at once while readers read it
// over and over; every read sees one whole version, and the end is whole.
func TestConcurrentWrites(t *testing.T) {
	e := newEnv(t)
	const writers, rounds, size = 8, 4, 512 << 10
	e.writeFile("f", strings.Repeat("0", size), 0o644)
	whole := func(c string) bool { return len(c) == size && strings.Count(c, c[:1]) == size }
	var wg sync.WaitGroup
	errs := make(chan error, 4*writers)
	stop := make(chan struct{})
	for i := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range rounds {
				if _, err := e.call(files.WriteFileID, `{"path":"f","content":`+q(strings.Repeat(string(rune('a'+i)), size))+`}`); err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := e.call(files.WriteFileID, `{"path":"log","content":`+q(strings.Repeat(string(rune('A'+i)), 1000)+"\n")+`,"mode":"append"}`); err != nil {
				errs <- err
			}
		}()
	}
	var readers sync.WaitGroup
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := e.call(files.ReadFileID, `{"path":"f","length":1048576}`)
				if err != nil {
					errs <- err
					return
				}
				var m map[string]any
				json.Unmarshal(res.Data, &m)
				if !whole(m["content"].(string)) {
					errs <- fmt.Errorf("a read saw a torn file")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !whole(e.readFile("f")) {
		t.Fatal("the file is torn")
	}
	lines := strings.Split(strings.TrimSuffix(e.readFile("log"), "\n"), "\n")
	if len(lines) != writers {
		t.Fatalf("%d lines appended, want %d", len(lines), writers)
	}
	for _, l := range lines {
		if len(l) != 1000 || strings.Count(l, l[:1]) != 1000 {
			t.Fatal("appends interleaved")
		}
	}
}

func TestContextDone(t *testing.T) {
	e := newEnv(t)
	e.writeFile("f", "v1", 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	for _, c := range []struct{ id, params string }{
		{files.WriteFileID, `{"path":"f","content":"v2"}`},
		{files.DeleteFileID, `{"path":"f"}`},
		{files.CreateFileID, `{"path":"g"}`},
		{files.CreateDirectoryID, `{"path":"d"}`},
		{files.ListDirectoryID, `{"path":"."}`},
	} {
		_, err := e.invoke(ctx, c.id, c.params)
		e.checkErr(err, sdk.CodeTimeout, c.id)
	}
	if e.readFile("f") != "v1" {
		t.Fatal("a timed-out write changed the file")
	}
	e.missing("g")
	e.missing("d")
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	_, err := e.invoke(cctx, files.WriteFileID, `{"path":"f","content":"v2"}`)
	e.checkErr(err, sdk.CodeExecutionFailed, "cancelled")
	_, tok := e.ok(files.WriteFileID, `{"path":"f","content":"v2"}`)
	e.checkErr(e.app.Undo(ctx, files.WriteFileID, tok, ic()), sdk.CodeTimeout, "undo")
	if n, _ := files.UndoState(e.app); n != 1 {
		t.Fatalf("%d records, want the one not undone", n)
	}
}
