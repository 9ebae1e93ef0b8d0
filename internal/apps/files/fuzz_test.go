package files

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// fuzzRoot makes a root holding a file, a folder and links that lead out of it (absolute,
// relative, through a folder, chained), beside a secret folder, and returns the app over it.
func fuzzRoot(f *testing.F) (*App, string) {
	f.Helper()
	base := f.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, filepath.Join(root, "sub"), outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "f"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "abs"))
	os.Symlink("../outside", filepath.Join(root, "out"))
	os.Symlink("../../outside/secret", filepath.Join(root, "sub", "up"))
	os.Symlink("sub/up", filepath.Join(root, "chain"))
	os.Symlink("sub", filepath.Join(root, "in"))
	doc, err := manifest.Load([]byte(Manifest))
	if err != nil {
		f.Fatal(err)
	}
	a, err := New(doc, root, filepath.Join(base, "state"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { a.Close() })
	real, _ := filepath.EvalSymlinks(root)
	return a, real
}

// FuzzResolvePath checks that no accepted path names anything outside the root: lexically
// (the relative path has no ".." and joins to a path under the root) and on a real folder
// with links out (what os.Root opens for it is under the root, as the kernel sees it).
func FuzzResolvePath(f *testing.F) {
	a, realRoot := fuzzRoot(f)
	for _, s := range []string{
		".", "/", "f", "./f", "sub/../f", "..", "../outside/secret", "abs", "out/secret", "sub/up",
		"chain", "in/up", "in/../f", a.display, a.display + "/f", a.display + "/../outside/secret",
		a.display + "2/f", a.display + "//f/", "a\x00b", "\xff", strings.Repeat("a/", 3000), "in/./up/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := resolvePath(a.roots, p)
		if err != nil {
			if _, ok := err.(*sdk.Error); !ok {
				t.Fatalf("error %T is not an *sdk.Error", err)
			}
			if strings.Contains(err.Error(), a.display) {
				t.Fatalf("error %q echoes the root", err)
			}
			return
		}
		if rel == "" || filepath.IsAbs(rel) || len(rel) > MaxPathBytes || !utf8.ValidString(rel) || strings.IndexByte(rel, 0) >= 0 {
			t.Fatalf("accepted %q as %q", p, rel)
		}
		for _, seg := range strings.Split(rel, string(filepath.Separator)) {
			if seg == ".." || (seg == "" && rel != "") {
				t.Fatalf("accepted %q as %q with a bad segment", p, rel)
			}
		}
		if !within(a.display, filepath.Join(a.display, rel)) {
			t.Fatalf("%q resolves outside the root", p)
		}
		if filepath.IsAbs(p) && filepath.Join(a.display, rel) != filepath.Clean(p) && filepath.Join(realRoot, rel) != filepath.Clean(p) {
			t.Fatalf("%q accepted as %q, another file", p, rel)
		}
		fh, err := a.root.Open(rel)
		if err != nil {
			return
		}
		defer fh.Close()
		if runtime.GOOS != "linux" {
			return
		}
		opened, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fh.Fd())))
		if err != nil {
			return
		}
		if !within(realRoot, opened) {
			t.Fatalf("%q opened %s, outside the root", p, opened)
		}
	})
}

// FuzzDecodeContent checks that accepted content is bounded and has one spelling: text is
// itself, base64 re-encodes to what was given.
func FuzzDecodeContent(f *testing.F) {
	for _, s := range []string{"", "hello", "héllo", "eA==", "eA=", "eB==", "eA==\n", "e A==", "////", "\xff"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, content string, b64 bool) {
		encoding := "utf-8"
		if b64 {
			encoding = "base64"
		}
		data, err := decodeContent(content, encoding)
		if err != nil {
			return
		}
		if len(data) > MaxContentBytes {
			t.Fatal("accepted too much")
		}
		if b64 && base64.StdEncoding.EncodeToString(data) != content {
			t.Fatalf("base64 %q has another spelling", content)
		}
		if !b64 && string(data) != content {
			t.Fatal("text changed")
		}
	})
}

// FuzzParams feeds arbitrary params to read_file and list_directory directly, as a caller
// that skips the gateway's schema check would: no panic, errors are *sdk.Error, and every
// answer keeps to its returns schema.
func FuzzParams(f *testing.F) {
	a, _ := fuzzRoot(f)
	for _, s := range []string{
		`{"path":"f"}`, `{"path":"f","offset":2,"length":3}`, `{"path":"f","offset":2.0,"length":1e1}`,
		`{"path":"f","offset":-0}`, `{"path":"f","length":1e400}`, `{"path":"."}`, `{"path":"abs"}`,
		`{"path":"f","path":"abs"}`, `{"path":"f","x":1}`, `null`, `[]`, `{"path":null}`, "{\"path\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, id := range []string{ReadFileID, ListDirectoryID} {
			res, err := a.Invoke(context.Background(), id, json.RawMessage(raw), sdk.InvocationContext{})
			if err != nil {
				if _, ok := err.(*sdk.Error); !ok {
					t.Fatalf("error %T is not an *sdk.Error", err)
				}
				continue
			}
			if err := a.doc.ReturnsSchema(id).ValidateJSON(res.Data, ""); err != nil {
				t.Fatalf("%s answer breaks its schema: %v", id, err)
			}
			if strings.Contains(string(res.Data), "secret") {
				t.Fatalf("%s read outside the root", id)
			}
		}
	})
}
