package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ent is one entry of a test package, written either into a real folder or into a real tar.
type ent struct {
	hdr  tar.Header
	body string
}

var testTime = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func reg(name, body string) ent {
	return ent{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: testTime}, body: body}
}

func exe(name, body string) ent {
	e := reg(name, body)
	e.hdr.Mode = 0o755
	return e
}

func dirEnt(name string) ent {
	return ent{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: testTime}}
}

func special(name string, flag byte, link string) ent {
	return ent{hdr: tar.Header{Typeflag: flag, Name: name, Linkname: link, Mode: 0o644, ModTime: testTime}}
}

// tarBytes writes ents as an uncompressed tar archive, end-of-archive marker included.
func tarBytes(t testing.TB, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("tar header %q: %v", h.Name, err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatalf("tar body %q: %v", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeTemp writes data to a new file in a fresh temporary folder and returns its path. The
// name deliberately does not end in .tar.gz: Open detects by content.
func writeTemp(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pkg.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func tarGzPath(t testing.TB, ents ...ent) string {
	t.Helper()
	return writeTemp(t, gz(t, tarBytes(t, ents...)))
}

// folderPath writes ents into a fresh real folder: files with their mode, folders created.
func folderPath(t testing.TB, ents ...ent) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "pkg")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p := filepath.Join(root, filepath.FromSlash(e.hdr.Name))
		switch e.hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(e.body), fs.FileMode(e.hdr.Mode)); err != nil {
				t.Fatal(err)
			}
			// WriteFile's mode passes through the umask; set it exactly.
			if err := os.Chmod(p, fs.FileMode(e.hdr.Mode)); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("folderPath: unsupported type %q", e.hdr.Typeflag)
		}
	}
	return root
}

// baseEnts is a small package with nesting, an executable, an empty file and a nested
// manifest.json that is content.
func baseEnts() []ent {
	return []ent{
		reg("manifest.json", `{"app_id":"org.example.hello"}`),
		reg("README.md", "hello\n"),
		exe("bin/hello", "#!/bin/sh\necho hello\n"),
		reg("empty", ""),
		reg("lib/x/data.bin", "\x00\x01\x02\xff"),
		reg("x/manifest.json", "{}"),
		reg("ünïcode.txt", "nfc"),
	}
}

func mustOpen(t testing.TB, path string) *Package {
	t.Helper()
	p, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return p
}
