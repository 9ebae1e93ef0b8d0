//go:build unix

package archive

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestRefuseFolder(t *testing.T) {
	seg := strings.Repeat("d", 200)
	long := strings.Join([]string{seg, seg, seg, seg, seg, seg, "f"}, "/")
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) // dir already holds manifest.json
		kind  error
		path  string
	}{
		{"symlink to a file", func(t *testing.T, dir string) {
			write(t, dir, "a", "x")
			must(t, os.Symlink("a", filepath.Join(dir, "l")))
		}, ErrEntryType, "l"},
		{"symlink out of the package", func(t *testing.T, dir string) {
			must(t, os.Symlink("/etc", filepath.Join(dir, "etc")))
		}, ErrEntryType, "etc"},
		{"symlinked manifest", func(t *testing.T, dir string) {
			write(t, dir, "real.json", "{}")
			must(t, os.Remove(filepath.Join(dir, "manifest.json")))
			must(t, os.Symlink("real.json", filepath.Join(dir, "manifest.json")))
		}, ErrEntryType, "manifest.json"},
		{"hard link", func(t *testing.T, dir string) {
			write(t, dir, "a", "x")
			must(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")))
		}, ErrEntryType, "a"},
		{"fifo", func(t *testing.T, dir string) {
			must(t, syscall.Mkfifo(filepath.Join(dir, "p"), 0o644))
		}, ErrEntryType, "p"},
		{"socket", func(t *testing.T, dir string) {
			l, err := net.Listen("unix", filepath.Join(dir, "s"))
			if err != nil {
				t.Skipf("unix socket: %v", err)
			}
			t.Cleanup(func() { l.Close() })
		}, ErrEntryType, "s"},
		{"case collision", func(t *testing.T, dir string) {
			write(t, dir, "A", "")
			write(t, dir, "a", "")
		}, ErrCollision, "a"},
		{"case collision of folders", func(t *testing.T, dir string) {
			write(t, dir, "Lib/x", "")
			write(t, dir, "lib/y", "")
		}, ErrCollision, "lib"},
		{"not NFC", func(t *testing.T, dir string) { write(t, dir, "e\u0301", "") }, ErrPath, "e\u0301"},
		{"backslash", func(t *testing.T, dir string) { write(t, dir, `a\b`, "") }, ErrPath, `a\b`},
		{"control character", func(t *testing.T, dir string) { write(t, dir, "a\nb", "") }, ErrPath, "a\nb"},
		{"path too long", func(t *testing.T, dir string) { write(t, dir, long, "") }, ErrPath, long[:MaxPathBytes]},
		{"no manifest", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "manifest.json")))
			write(t, dir, "x/manifest.json", "{}")
		}, ErrManifest, ""},
		{"both manifests", func(t *testing.T, dir string) { write(t, dir, "manifest.yaml", "") }, ErrManifest, "manifest.yaml"},
		{"manifest up to case", func(t *testing.T, dir string) { write(t, dir, "MANIFEST.JSON", "") }, ErrManifest, "MANIFEST.JSON"},
		{"manifest is a folder", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "manifest.json")))
			write(t, dir, "manifest.json/x", "")
		}, ErrManifest, "manifest.json"},
		{"manifest too large", func(t *testing.T, dir string) {
			must(t, os.Truncate(filepath.Join(dir, "manifest.json"), MaxManifestBytes+1))
		}, ErrLimit, "manifest.json"},
		{"files too large", func(t *testing.T, dir string) {
			write(t, dir, "z", "")
			must(t, os.Truncate(filepath.Join(dir, "z"), MaxContentBytes)) // sparse: no disk used
		}, ErrLimit, "z"},
		{"too many entries", func(t *testing.T, dir string) {
			if testing.Short() {
				t.Skip("creates 10,000 files")
			}
			must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
			for i := range MaxEntries {
				must(t, os.WriteFile(filepath.Join(dir, "d", "f"+strconv.Itoa(i)), nil, 0o644))
			}
		}, ErrLimit, "d/f9999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := folderPath(t, manifestEnt)
			tc.setup(t, dir)
			_, err := Open(dir)
			checkRefusal(t, err, tc.kind, tc.path)
		})
	}

	t.Run("neither folder nor gzip", func(t *testing.T) {
		_, err := Open(writeTemp(t, []byte("{}")))
		checkRefusal(t, err, ErrFormat, "")
	})
	t.Run("the package itself may be a symlink", func(t *testing.T) {
		dir := folderPath(t, baseEnts()...)
		link := filepath.Join(t.TempDir(), "link")
		must(t, os.Symlink(dir, link))
		if a, b := mustOpen(t, dir).Digest(), mustOpen(t, link).Digest(); a != b {
			t.Errorf("%s != %s", a, b)
		}
	})
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(body), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
