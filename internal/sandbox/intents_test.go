package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/manifest"
)

func appID(t *testing.T, s string) manifest.AppID {
	t.Helper()
	id, err := manifest.ParseAppID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A capability's filesystem intents are shown at their paths, backed by the app's own folder
// in capgate's data folder, read-only unless read_write; nothing else of the sandbox root is
// there, and two apps declaring the same path get folders of their own.
func TestIntentBinds(t *testing.T) {
	s := sandboxtest.Open(t)
	data := t.TempDir()
	kb := sandbox.AppFolder(data, appID(t, "org.example.kb"))
	other := sandbox.AppFolder(data, appID(t, "org.example.other"))
	if kb != filepath.Join(data, "sandbox", "org.example.kb") {
		t.Fatalf("the app's folder: %s", kb)
	}
	intents := []manifest.FilesystemIntent{
		{Path: "/sandbox/notes", Mode: manifest.ModeReadWrite},
		{Path: "/sandbox/reference/books", Mode: manifest.ModeReadOnly},
	}
	binds, closeAll, err := sandbox.IntentBinds("", kb, intents)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	for _, p := range []string{"notes", "reference/books"} {
		if fi, err := os.Stat(filepath.Join(kb, p)); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s not made on demand: %v %v", p, fi, err)
		}
	}
	if err := os.WriteFile(filepath.Join(kb, "reference/books/a.txt"), []byte("a book"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kb, "undeclared"), []byte("not declared"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := func(args ...string) sandbox.Spec {
		sp := self(t, args...)
		sp.Binds = binds
		return sp
	}
	if got := run(t, s, spec("write", "/sandbox/notes/n.txt")); got != "written\n" {
		t.Errorf("the read_write intent: %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(kb, "notes/n.txt")); err != nil || string(b) != "x" {
		t.Errorf("the host does not see the write in the app's folder: %q %v", b, err)
	}
	if got := run(t, s, spec("read", "/sandbox/reference/books/a.txt")); !strings.Contains(got, "a book") {
		t.Errorf("the read_only intent: %s", got)
	}
	for _, p := range []string{"/sandbox/reference/books/b.txt", "/sandbox/reference/x", "/sandbox/x"} {
		if got := run(t, s, spec("write", p)); got != "unwritable\n" {
			t.Errorf("%s: %s", p, got)
		}
	}
	for _, p := range []string{"/sandbox/undeclared", filepath.Join(kb, "undeclared"), data} {
		if got := run(t, s, spec("read", p)); strings.Contains(got, "not declared") || !strings.HasPrefix(got, "unreadable") {
			t.Errorf("%s: %s", p, got)
		}
	}
	// Another app declaring the same path sees its own, empty, folder.
	obinds, oclose, err := sandbox.IntentBinds("/sandbox", other, intents[:1])
	if err != nil {
		t.Fatal(err)
	}
	defer oclose()
	sp := self(t, "read", "/sandbox/notes/n.txt")
	sp.Binds = obinds
	if got := run(t, s, sp); !strings.HasPrefix(got, "unreadable") {
		t.Errorf("the other app reads the first's notes: %s", got)
	}
}

// A symbolic link the app made in its own folder (through a read_write intent) cannot point
// a later bind out of the folder; a path outside the root, or not clean, is refused.
func TestIntentBindsRefuse(t *testing.T) {
	app := filepath.Join(t.TempDir(), "sandbox", "org.example.kb")
	if err := os.MkdirAll(filepath.Join(app, "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(app, "notes", "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(app, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		path string
		want string
	}{
		"a link on the way":     {"/sandbox/notes/etc", "symbolic link"},
		"a link as the folder":  {"/sandbox/link", "symbolic link"},
		"a link then more":      {"/sandbox/link/ssh", "symbolic link"},
		"a file on the way":     {"/sandbox/file/x", "not a folder"},
		"outside the root":      {"/etc", "inside the sandbox root"},
		"dot-dot":               {"/sandbox/../etc", "dot-dot"},
		"the sandbox's own":     {"/sandbox/x", ""},
		"a doubled separator":   {"/sandbox//x", "empty segment"},
		"a relative path":       {"sandbox/x", "absolute"},
		"a prefix, not a child": {"/sandboxes/x", "inside the sandbox root"},
	} {
		t.Run(name, func(t *testing.T) {
			binds, closeAll, err := sandbox.IntentBinds("/sandbox", app, []manifest.FilesystemIntent{{Path: c.path, Mode: manifest.ModeReadWrite}})
			defer closeAll()
			if c.want == "" {
				if err != nil || len(binds) != 1 {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "filesystem_intents[0].path") {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
	if _, err := os.Lstat("/etc/ssh/x"); err == nil {
		t.Error("a folder was made through the link")
	}
}
