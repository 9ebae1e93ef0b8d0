package archive

import (
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/capgate/capgate/manifest"
)

// Package is a plugin package as Open read it: the manifest's bytes and the path, mode, size
// and digest of every other file. It holds no other content.
type Package struct {
	Manifest []byte // the bytes of the root manifest.json, at most MaxManifestBytes
	Files    []File // every other file, sorted by Path in byte order, paths unique
}

// File is one file of a package other than the manifest.
type File struct {
	Path   string      // slash-separated, relative, clean, printable NFC (see the package doc)
	Mode   fs.FileMode // 0o755 if executable by its owner, else 0o644
	Size   int64
	Digest string // "sha256:" and the 64 lowercase hex digits of the SHA-256 of the content
}

// Open reads the package at path: a folder, or a gzip-compressed tar file (recognised by the
// gzip magic bytes, whatever its name). It extracts nothing: files are read into hashes, and only
// the manifest is kept. path itself may be a symbolic link; nothing inside the package is
// followed. A package that breaks a rule of the package documentation is refused with an *Error
// wrapping one of the sentinel errors.
func Open(path string) (*Package, error) { return open(path, nil) }

// Extract reads the package at path as Open does and writes its content into the folder dst,
// which it creates and which must not exist: every file as it was hashed (the Package returned
// describes the files written, not a second reading of path), folders mode 0555, files 0444
// (0555 when executable). The manifest is written too, as manifest.json. On any failure
// nothing is left at dst.
func Extract(path, dst string) (*Package, error) {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return nil, failure("", "cannot make the folder to extract into", err)
	}
	out, err := os.OpenRoot(dst)
	if err != nil {
		os.RemoveAll(dst)
		return nil, failure("", "cannot open the folder to extract into", err)
	}
	pkg, err := open(path, out)
	if err == nil {
		err = sealTree(out, pkg)
	}
	out.Close()
	if err != nil {
		unsealTree(dst)
		os.RemoveAll(dst)
		return nil, err
	}
	return pkg, nil
}

func open(path string, out *os.Root) (*Package, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, failure("", "cannot open the package", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, failure("", "cannot stat the package", err)
	}
	if fi.IsDir() {
		return openFolder(path, out)
	}
	if !fi.Mode().IsRegular() {
		return nil, refuse("", ErrFormat, "neither a folder nor a regular file")
	}
	var magic [2]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || magic != gzipMagic {
		return nil, refuse("", ErrFormat, "neither a folder nor a gzip file")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, failure("", "cannot read the package", err)
	}
	return openTarGz(f, fi.Size(), out)
}

// File returns the file of the package at exactly path (no normalisation), and whether there is
// one. The manifest is not a File.
func (p *Package) File(path string) (File, bool) {
	i, ok := slices.BinarySearchFunc(p.Files, path, func(f File, path string) int {
		return strings.Compare(f.Path, path)
	})
	if !ok {
		return File{}, false
	}
	return p.Files[i], true
}

// CheckReference checks a reference of the manifest (sbom_ref, provenance_ref: a
// manifest.Reference) against the package: digest must be a valid digest, and path must name a
// file of the package whose digest is digest. It returns "" or the rule broken, never the
// values; the caller adds the field path. A reference to the manifest itself is refused: the
// manifest cannot carry its own digest.
func (p *Package) CheckReference(path, digest string) string {
	if _, err := manifest.ParseDigest(digest); err != nil {
		return `digest must be "sha256:" and 64 lowercase hex digits`
	}
	if rule := pathRule(path); rule != "" {
		return "path must be a valid package path: " + rule
	}
	if path == ManifestJSON {
		return "path must not name the manifest"
	}
	f, ok := p.File(path)
	if !ok {
		return "path names no file of the package"
	}
	if f.Digest != digest {
		return "digest does not match the file's content"
	}
	return ""
}
