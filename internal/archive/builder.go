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
	if !b.manifest {
		return nil, refuse("", ErrManifest, "no manifest.json at the root")
	}
	slices.SortFunc(b.pkg.Files, func(x, y File) int { return cmp.Compare(x.Path, y.Path) })
	p := b.pkg
	return &p, nil
}

// errSizeChanged: a file yielded more or fewer bytes than its header or Lstat said.
var errSizeChanged = errors.New("content length differs from the recorded size")
