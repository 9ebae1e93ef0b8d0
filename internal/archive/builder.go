package archive

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
)

// Manifest file names: exactly one of them sits at the root of a package.
const (
	ManifestYAML = "manifest.yaml"
	ManifestJSON = "manifest.json"
)

// builder assembles a Package from the entries a folder walk or a tar stream yields, in any
// order, applying every rule that does not depend on where the entries come from.
type builder struct {
	idx     *index
	entries int
	total   int64
	pkg     Package
	// readErr turns a failure to read an entry's content into the error Open returns.
	readErr func(path string, err error) error
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

// manifestName reports whether the root entry p is named like a manifest: exactly (ok) or only
// up to case (a refusal: on a case-insensitive file system it would shadow or be the manifest).
func (b *builder) manifestName(p string) (exact bool, err error) {
	if strings.IndexByte(p, '/') >= 0 {
		return false, nil // a nested manifest is content
	}
	if p == ManifestYAML || p == ManifestJSON {
		return true, nil
	}
	if k := b.idx.fold(p); k == ManifestYAML || k == ManifestJSON {
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
	return nil
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
		if b.pkg.ManifestName != "" {
			return refuse(p, ErrManifest, "both manifest.yaml and manifest.json are present")
		}
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
		b.pkg.ManifestName, b.pkg.Manifest = p, data
		return nil
	}
	h := sha256.New()
	n, err := io.Copy(h, lr)
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
	if b.pkg.ManifestName == "" {
		return nil, refuse("", ErrManifest, "no manifest.yaml or manifest.json at the root")
	}
	slices.SortFunc(b.pkg.Files, func(x, y File) int { return cmp.Compare(x.Path, y.Path) })
	p := b.pkg
	return &p, nil
}

// errSizeChanged: a file yielded more or fewer bytes than its header or Lstat said.
var errSizeChanged = errors.New("content length differs from the recorded size")
