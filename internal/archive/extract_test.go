package archive

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Extract writes what it hashed: the same package, from a folder or a tar, lands read-only with
// the digest Open computes, and the folder's files match their recorded digests.
func TestExtract(t *testing.T) {
	ents := append(baseEnts(), exe("bin/provider", "#!/bin/sh\necho hi\n"), reg("deep/a/b/c.txt", "deep"))
	for name, src := range map[string]string{"folder": folderPath(t, ents...), "tar": tarGzPath(t, ents...)} {
		t.Run(name, func(t *testing.T) {
			want := mustOpen(t, src)
			dst := filepath.Join(t.TempDir(), "pkg")
			got, err := Extract(src, dst)
			if err != nil {
				t.Fatal(err)
			}
			defer RemoveExtracted(dst)
			if got.Digest() != want.Digest() {
				t.Fatalf("extracted digest %s, the package's %s", got.Digest(), want.Digest())
			}
			again := mustOpen(t, dst)
			if again.Digest() != want.Digest() {
				t.Errorf("the extracted folder's digest %s, want %s", again.Digest(), want.Digest())
			}
			fi, err := os.Stat(filepath.Join(dst, "bin", "provider"))
			if err != nil || fi.Mode().Perm() != 0o555 {
				t.Errorf("the program: %v %v", fi.Mode(), err)
			}
			fi, err = os.Stat(filepath.Join(dst, "deep", "a", "b", "c.txt"))
			if err != nil || fi.Mode().Perm() != 0o444 {
				t.Errorf("a file: %v %v", fi.Mode(), err)
			}
			fi, err = os.Stat(filepath.Join(dst, "deep"))
			if err != nil || fi.Mode().Perm() != 0o555 {
				t.Errorf("a folder: %v %v", fi.Mode(), err)
			}
			if err := RemoveExtracted(dst); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("RemoveExtracted left %s", dst)
			}
		})
	}
}

// A package refused part way leaves nothing where it was extracted, and Extract never writes
// into a folder that exists.
func TestExtractRefusedLeavesNothing(t *testing.T) {
	src := tarGzPath(t, append(baseEnts(), reg("a.txt", "a"), special("link", '2', "/etc/passwd"))...)
	dst := filepath.Join(t.TempDir(), "pkg")
	if _, err := Extract(src, dst); !errors.Is(err, ErrEntryType) {
		t.Fatalf("a package with a link: %v", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused package left %s", dst)
	}
	existing := t.TempDir()
	if _, err := Extract(folderPath(t, baseEnts()...), existing); err == nil {
		t.Error("extracted into a folder that exists")
	}
}
