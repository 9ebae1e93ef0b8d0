package editor

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// errOutside is the answer to every path that leads out of the root, however it does.
func errOutside() error { return sdk.PermissionDenied("the path is outside the editor's folder") }

func badPath(rule string) error {
	return sdk.InvalidParams(manifest.Problems{{Path: "path", Rule: rule}})
}

// localPath reads p, a path param, as a path relative to the root: an absolute p must lie
// under one of roots (the root as given, made absolute, and the root with its symbolic links
// resolved) once cleaned; a relative p is relative to the root. The result is clean and local
// (filepath.IsLocal), never the root itself. It looks at text only: symbolic links inside the
// root are the os.Root's to confine.
func localPath(p string, roots []string) (string, error) {
	switch {
	case p == "":
		return "", badPath("must not be empty")
	case len(p) > MaxPathBytes:
		return "", badPath("longer than 4096 bytes")
	case strings.IndexByte(p, 0) >= 0:
		return "", badPath("must not contain NUL")
	}
	var rel string
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		found := false
		for _, r := range roots {
			if x, err := filepath.Rel(r, c); err == nil && filepath.IsLocal(x) {
				rel, found = x, true
				break
			}
		}
		if !found {
			return "", errOutside()
		}
	} else {
		rel = filepath.Clean(p)
		if !filepath.IsLocal(rel) {
			return "", errOutside()
		}
	}
	if rel == "." {
		return "", badPath("names the editor's folder, not a file")
	}
	return rel, nil
}

// fsError reads an error of the os.Root as the call's error. notFound is the rule for a path
// that names nothing. escape is the os.Root's own error for a path that leaves it (see New).
func fsError(err, escape error, notFound string) error {
	switch {
	case escape != nil && errors.Is(err, escape):
		return errOutside()
	case errors.Is(err, syscall.ELOOP):
		// Too many links, or a final link where the open refuses to follow one.
		return sdk.PermissionDenied("the path goes through too many symbolic links")
	case errors.Is(err, fs.ErrNotExist):
		return badPath(notFound)
	case errors.Is(err, syscall.ENOTDIR):
		return badPath("a part of the path is not a folder")
	case errors.Is(err, syscall.EISDIR):
		return badPath("names a folder, not a file")
	case errors.Is(err, syscall.ENAMETOOLONG):
		return badPath("a name in the path is too long")
	case errors.Is(err, fs.ErrPermission):
		return sdk.PermissionDenied("the operating system refuses access to the file")
	}
	return sdk.ExecutionFailed("the file could not be accessed", true)
}
