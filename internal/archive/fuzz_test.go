package archive

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzOpenTarGz: any bytes given to Open as a .tar.gz never panic it, never make it write a file
// (the temporary folder holds only the input afterwards, unchanged), and a package it accepts
// satisfies the invariants of Package: valid, unique, sorted paths, normalized modes,
// well-formed digests, a manifest.json and no other root entry named like a manifest, and a
// digest that is stable and found by File.
func FuzzOpenTarGz(f *testing.F) {
	f.Add(gz(f, tarBytes(f, baseEnts()...)))
	f.Add(gz(f, tarBytes(f, withManifest(dirEnt("d"), reg("d/a", "x"), exe("b", "#!"))...)))
	f.Add(gz(f, tarBytes(f, withManifest(special("l", tar.TypeSymlink, "/etc/passwd"))...)))
	f.Add(gz(f, tarBytes(f, withManifest(reg("A", ""), reg("a", ""))...)))
	f.Add(gz(f, tarBytes(f, reg("manifest.yaml", "app_id: a.b\n"), reg("a", "x"))))
	valid := gz(f, tarBytes(f, withManifest(reg("a", "x"))...))
	f.Add(valid[:len(valid)/2])
	f.Add(append(slices.Clone(valid), valid...))
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte("not a package"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in")
		if err := os.WriteFile(in, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Open(in)

		entries, rerr := os.ReadDir(dir)
		if rerr != nil || len(entries) != 1 || entries[0].Name() != "in" {
			t.Fatalf("Open changed the folder it read from: %v %v", entries, rerr)
		}
		if after, _ := os.ReadFile(in); !bytes.Equal(after, data) {
			t.Fatal("Open changed its input")
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Open: %T is not an *Error: %v", err, err)
			}
			return
		}
		if p.Manifest == nil {
			t.Fatal("accepted a package without its manifest")
		}
		var total int64 = int64(len(p.Manifest))
		folded := map[string]bool{}
		x := newIndex()
		for i, file := range p.Files {
			if rule := pathRule(file.Path); rule != "" {
				t.Fatalf("accepted path %q: %s", file.Path, rule)
			}
			if i > 0 && p.Files[i-1].Path >= file.Path {
				t.Fatalf("Files not strictly sorted at %d", i)
			}
			k := x.fold(file.Path)
			if folded[k] || k == ManifestJSON || k == ManifestYAML || k == manifestYML {
				t.Fatalf("accepted colliding path %q", file.Path)
			}
			folded[k] = true
			if file.Mode != 0o644 && file.Mode != 0o755 {
				t.Fatalf("mode %v", file.Mode)
			}
			if _, ok := decodeDigest(file.Digest); !ok {
				t.Fatalf("digest %q", file.Digest)
			}
			if got, ok := p.File(file.Path); !ok || got != file {
				t.Fatalf("File(%q) = %+v, %v", file.Path, got, ok)
			}
			if p.CheckReference(file.Path, file.Digest) != "" {
				t.Fatalf("CheckReference refuses its own file %q", file.Path)
			}
			if strings.HasPrefix(file.Path, ManifestJSON+"/") {
				t.Fatalf("file %q under the manifest", file.Path)
			}
			total += file.Size
		}
		if total > MaxContentBytes || len(p.Files) > MaxEntries {
			t.Fatalf("accepted %d bytes in %d files", total, len(p.Files))
		}
		if d := p.Digest(); d != p.Digest() || len(d) != len("sha256:")+64 {
			t.Fatalf("Digest %q unstable or malformed", d)
		}
	})
}
