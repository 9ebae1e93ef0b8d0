package terminal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// root is the terminal's root folder: as resolved (no symbolic links), and as given (made
// absolute and clean), which may name it through a link.
type root struct {
	real, given string
}

// resolveRoot reads the root folder given to New, which must exist and be a folder.
func resolveRoot(dir string) (root, error) {
	if dir == "" {
		return root{}, errors.New("terminal: no root folder")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return root{}, fmt.Errorf("terminal: root: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return root{}, fmt.Errorf("terminal: root: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return root{}, fmt.Errorf("terminal: root: %w", err)
	}
	if !fi.IsDir() {
		return root{}, errors.New("terminal: the root is not a folder")
	}
	return root{real: real, given: abs}, nil
}

// within reports whether p is root or under it; both are clean and absolute.
func within(root, p string) bool {
	if p == root {
		return true
	}
	prefix := root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}

// errOutsideRoot is the cwd problem of a folder that resolves outside the root; it says
// neither the folder nor the root.
var errOutsideRoot = sdk.InvalidParams(manifest.Problems{{Path: "cwd", Rule: "must be a folder inside the terminal's root folder"}})

// resolveDir returns the folder a command runs in: root when cwd is empty, else cwd (relative
// to root when not absolute), cleaned and with its symbolic links resolved, which must be an
// existing folder inside root.
//
// A cwd that is not inside the root as written is refused before the filesystem is asked,
// so that the answer tells nothing of what exists outside the root; one inside it as written
// must still be inside it once its links are resolved.
//
// The check and the chdir of the child are not atomic: someone who can write inside the root
// could swap a folder for a link in between. Such a writer can run commands anyway; the root
// bounds where commands start, it is not a sandbox.
func resolveDir(r root, cwd string) (string, error) {
	if cwd == "" {
		return r.real, nil
	}
	if len(cwd) > MaxPathBytes || strings.IndexByte(cwd, 0) >= 0 {
		return "", sdk.InvalidParams(manifest.Problems{{Path: "cwd", Rule: "must be at most 4096 bytes without NUL"}})
	}
	p := cwd
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.real, p)
	}
	p = filepath.Clean(p)
	if !within(r.real, p) && !within(r.given, p) {
		return "", errOutsideRoot
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", sdk.InvalidParams(manifest.Problems{{Path: "cwd", Rule: "must be an existing folder"}})
	}
	if !within(r.real, real) {
		return "", errOutsideRoot
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.IsDir() {
		return "", sdk.InvalidParams(manifest.Problems{{Path: "cwd", Rule: "must be an existing folder"}})
	}
	return real, nil
}
