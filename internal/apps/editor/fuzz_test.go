package editor

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzLocalPath checks that whatever a path param says, what reaches the os.Root is a clean
// local path, and an absolute param accepted names the same place under the root.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{
		"a.txt", "./a", "a/../b", "../x", "a/../../x", "/srv/root/a", "/srv/root", "/srv/root/../x",
		"/srv/rootx/a", "/etc/passwd", "//srv/root/a", "/srv/root/./a/", ".", "..", "", "a\x00",
		"\\..\\x", "/real/root/a", "…/a", strings.Repeat("a/", 100),
	} {
		f.Add(s)
	}
	roots := []string{"/srv/root", "/real/root"}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := localPath(p, roots)
		if err != nil {
			return
		}
		if !filepath.IsLocal(rel) || rel == "." || rel != filepath.Clean(rel) {
			t.Fatalf("%q -> %q is not a clean local path", p, rel)
		}
		if filepath.IsAbs(p) {
			c := filepath.Clean(p)
			if c != filepath.Join(roots[0], rel) && c != filepath.Join(roots[1], rel) {
				t.Fatalf("%q -> %q names another place", p, rel)
			}
		}
	})
}

// FuzzDecodeParams checks the params reader never panics, takes only the exact member names,
// and hands on only cursors in their bounds.
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"path":"a"}`, `{"PATH":"a"}`, `{"content":"x","cursor":{"line":1,"column":0}}`,
		`{"content":"x","cursor":{"line":1e400,"column":0}}`, `{"content":null}`, `[]`, `null`, ``,
		`{"cursor":{"line":-0,"column":0.0}}`, `{"path":"a","path":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := decodeParams(json.RawMessage(raw), "path", "content", "cursor")
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		for k := range m {
			if k != "path" && k != "content" && k != "cursor" {
				t.Fatalf("took member %q", k)
			}
		}
		if c := p.Cursor; c != nil && (c.Line < 1 || c.Line > MaxLines || c.Column < 0 || c.Column > MaxFileBytes) {
			t.Fatalf("cursor out of bounds: %+v", c)
		}
	})
}

// FuzzCursor checks that clamp always lands on a position validCursor accepts, and leaves a
// valid position where it is.
func FuzzCursor(f *testing.F) {
	f.Add("", 1, 0)
	f.Add("a\nbc\n", 3, 0)
	f.Add("é\n", 1, 1)
	f.Add("x", -5, 99)
	f.Fuzz(func(t *testing.T, content string, l, c int) {
		if !utf8.ValidString(content) {
			return
		}
		cur := Cursor{Line: l, Column: c}
		got := clamp(content, cur)
		if field := validCursor(content, got); field != "" {
			t.Fatalf("clamp(%q, %+v) = %+v, invalid at %s", content, cur, got, field)
		}
		if validCursor(content, cur) == "" && got != cur {
			t.Fatalf("clamp moved a valid cursor %+v to %+v", cur, got)
		}
	})
}
