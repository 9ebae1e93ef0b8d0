package archive

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Manifest file names. A package carries its signed manifest.json at the root; manifest.yaml
// (or .yml), the authoring form, is refused there: capgate installs JSON only.
const (
	ManifestJSON = "manifest.json"
	ManifestYAML = "manifest.yaml"
	manifestYML  = "manifest.yml"
)

// ruleYAMLManifest is the refusal of a root entry named like the YAML authoring form: it names
// the command that makes the manifest.json a package carries.
const ruleYAMLManifest = "the YAML authoring form; a package carries the signed manifest.json: sign it first (capgate manifest sign -o manifest.json manifest.yaml) and leave the YAML out"

// builder assembles a Package from the entries a folder walk or a tar stream yields, in any
// order, applying every rule that does not depend on where the entries come from.
type builder struct {
	idx     *index
	entries int
	total   int64
	pkg     Package
	// manifest is set once the root manifest.json was read.
	manifest bool
	// readErr turns a failure to read an entry's content into the error Open returns.
	readErr func(path string, err error) error
	// out, when set, is where Extract writes the content as it is read.
	out *os.Root
}

func newBuilder(readErr func(string, error) error) *builder {
	return &builder{idx: newIndex(), readErr: readErr}
}

// entry counts one entry and checks its path.
func (b *builder) entry(p string) error {
	b.entries++
	if b.entries > MaxEntries {
		return refuse(p, ErrLimit, fmt.Sprintf("more than %d entries", MaxEntries))
	}
	if rule := pathRule(p); rule != "" {
		return refuse(p, ErrPath, rule)
	}
	return nil
}

// manifestName reports whether the root entry p is the manifest: exactly manifest.json (exact),
// or named like one only up to case (a refusal: on a case-insensitive file system it would
// shadow or be the manifest). A root entry named like the YAML authoring form (manifest.yaml or
// manifest.yml, in any case) is refused too, file or folder, so that a package built from the
// author's folder says how to make its JSON instead of hiding the YAML among the content.
func (b *builder) manifestName(p string) (exact bool, err error) {
	if strings.IndexByte(p, '/') >= 0 {
		return false, nil // a nested manifest is content
	}
	k := b.idx.fold(p)
	switch {
	case k == ManifestYAML || k == manifestYML:
		return false, refuse(p, ErrManifest, ruleYAMLManifest)
	case p == ManifestJSON:
		return true, nil
	case k == ManifestJSON:
		return false, refuse(p, ErrManifest, "differs only in case from "+k)
	}
	return false, nil
}

func (b *builder) dir(p string) error {
	if err := b.entry(p); err != nil {
		return err
	}
	if exact, err := b.manifestName(p); err != nil {
		return err
	} else if exact {
		return refuse(p, ErrManifest, "the manifest must be a regular file")
	}
	if err := b.idx.add(p, true); err != nil {
		return err
	}
	if b.out != nil {
		if err := b.out.MkdirAll(filepath.FromSlash(p), 0o700); err != nil {
			return failure(p, "cannot make the folder", err)
		}
	}
	return nil
}

// sink returns where the content of the file p is written as it is read (io.Discard unless
// extracting), and a function that finishes it.
func (b *builder) sink(p string) (io.Writer, func() error, error) {
	if b.out == nil {
		return io.Discard, func() error { return nil }, nil
	}
	if dir := path.Dir(p); dir != "." {
		// A tar stream may name a file before its folder, or not name the folder at all.
		if err := b.out.MkdirAll(filepath.FromSlash(dir), 0o700); err != nil {
			return nil, nil, failure(p, "cannot make the file's folder", err)
		}
	}
	f, err := b.out.OpenFile(filepath.FromSlash(p), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, failure(p, "cannot write the file", err)
	}
	return f, func() error {
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return failure(p, "cannot write the file", err)
		}
		return nil
	}, nil
}

// file reads a regular file of the given size from r: into the manifest if it is one,
// otherwise into a hash only.
func (b *builder) file(p string, executable bool, size int64, r io.Reader) error {
	if err := b.entry(p); err != nil {
		return err
	}
	isManifest, err := b.manifestName(p)
	if err != nil {
		return err
	}
	if err := b.idx.add(p, false); err != nil {
		return err
	}
	if size > MaxContentBytes-b.total {
		return refuse(p, ErrLimit, fmt.Sprintf("files total more than %d bytes", MaxContentBytes))
	}
	b.total += size
	// Reading one byte past size tells a file that grew from one that did not.
	lr := io.LimitReader(r, size+1)
	if isManifest {
		if size > MaxManifestBytes {
			return refuse(p, ErrLimit, fmt.Sprintf("manifest is larger than %d bytes", MaxManifestBytes))
		}
		data, err := io.ReadAll(lr)
		if err != nil {
			return b.readErr(p, err)
		}
		if int64(len(data)) != size {
			return b.readErr(p, errSizeChanged)
		}
		b.pkg.Manifest, b.manifest = data, true
		if b.out != nil {
			w, done, err := b.sink(p)
			if err != nil {
				return err
			}
			if _, err := w.Write(data); err != nil {
				done()
				return failure(p, "cannot write the file", err)
			}
			return done()
		}
		return nil
	}
	w, done, err := b.sink(p)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(h, w), lr)
	if derr := done(); err == nil && derr != nil {
		return derr
	}
	if err != nil {
		return b.readErr(p, err)
	}
	if n != size {
		return b.readErr(p, errSizeChanged)
	}
	mode := fs.FileMode(0o644)
	if executable {
		mode = 0o755
	}
	b.pkg.Files = append(b.pkg.Files, File{
		Path:   p,
		Mode:   mode,
		Size:   size,
		Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)),
	})
	return nil
}

func (b *builder) finish() (*Package, error) {
	if !b.manifest {
		return nil, refuse("", ErrManifest, "no manifest.json at the root")
	}
	slices.SortFunc(b.pkg.Files, func(x, y File) int { return cmp.Compare(x.Path, y.Path) })
	p := b.pkg
	return &p, nil
}

// errSizeChanged: a file yielded more or fewer bytes than its header or Lstat said.
var errSizeChanged = errors.New("content length differs from the recorded size")

// sealTree makes what Extract wrote read-only: files 0444 (0555 when executable), folders
// 0555, deepest first so that each folder is sealed after what it holds.
func sealTree(out *os.Root, pkg *Package) error {
	for _, f := range pkg.Files {
		mode := fs.FileMode(0o444)
		if f.Mode&0o100 != 0 {
			mode = 0o555
		}
		if err := out.Chmod(filepath.FromSlash(f.Path), mode); err != nil {
			return failure(f.Path, "cannot make the file read-only", err)
		}
	}
	if err := out.Chmod(ManifestJSON, 0o444); err != nil {
		return failure(ManifestJSON, "cannot make the file read-only", err)
	}
	var dirs []string
	err := fs.WalkDir(out.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		return failure("", "cannot list what was extracted", err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := out.Chmod(filepath.FromSlash(dirs[i]), 0o555); err != nil {
			return failure(dirs[i], "cannot make the folder read-only", err)
		}
	}
	return nil
}

// unsealTree makes the folders under dir writable again, so that a failed Extract, or the
// removal of an extracted package, can remove them (for a user other than root).
func unsealTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
}

// RemoveExtracted removes a folder Extract made, read-only as it is.
func RemoveExtracted(dir string) error {
	unsealTree(dir)
	return os.RemoveAll(dir)
}
