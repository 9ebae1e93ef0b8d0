package python

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// scripts is the folder execute_file reads from, opened once as an os.Root: every open is
// confined to it, whatever ".." or symbolic links the path holds.
type scripts struct {
	dir  string // absolute and clean
	root *os.Root
}

func openScripts(dir string) (*scripts, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	return &scripts{dir: abs, root: root}, nil
}

func pathProblem(rule string) error {
	return sdk.InvalidParams(manifest.Problems{{Path: "path", Rule: rule}})
}

var errOutside = sdk.PermissionDenied("path: must name a file inside the scripts folder")

// resolve reads a path param as a name inside the folder: an absolute path must lie under
// the folder once cleaned, a relative one is taken from the folder. It checks only the
// text; the open through the root refuses what escapes on disk.
func (s *scripts) resolve(p string) (string, error) {
	switch {
	case p == "":
		return "", pathProblem("must not be empty")
	case len(p) > MaxPathBytes:
		return "", pathProblem("longer than 4096 bytes")
	case !utf8.ValidString(p):
		return "", pathProblem("must be valid UTF-8")
	case strings.IndexByte(p, 0) >= 0:
		return "", pathProblem("must not contain NUL")
	case strings.IndexByte(p, '\\') >= 0:
		return "", pathProblem("must use / as its separator")
	case !strings.HasSuffix(p, ".star") && !strings.HasSuffix(p, ".py"):
		return "", pathProblem("must name a .star or .py file")
	}
	name := filepath.Clean(p)
	if filepath.IsAbs(name) {
		rel, err := filepath.Rel(s.dir, name)
		if err != nil {
			return "", errOutside
		}
		name = rel
	}
	if name == "." || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) || filepath.IsAbs(name) {
		return "", errOutside
	}
	return name, nil
}

// read returns the script at path p: a regular file inside the folder, at most
// MaxSourceBytes of valid UTF-8.
func (s *scripts) read(p string) (string, []byte, error) {
	name, err := s.resolve(p)
	if err != nil {
		return "", nil, err
	}
	f, err := s.root.OpenFile(name, openFlags, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil, pathProblem("no such file in the scripts folder")
	case err != nil:
		// os.Root refuses a path that escapes, through ".." or a symbolic link, with an
		// error of its own; a file the gateway may not read lands here too.
		return "", nil, errOutside
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", nil, sdk.ExecutionFailed("the script could not be read", true)
	}
	if !info.Mode().IsRegular() {
		return "", nil, pathProblem("must name a regular file")
	}
	if info.Size() > MaxSourceBytes {
		return "", nil, pathProblem("the script is larger than 256 KiB")
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxSourceBytes+1))
	if err != nil {
		return "", nil, sdk.ExecutionFailed("the script could not be read", true)
	}
	if len(src) > MaxSourceBytes {
		return "", nil, pathProblem("the script is larger than 256 KiB")
	}
	if !utf8.Valid(src) {
		return "", nil, pathProblem("the script must be valid UTF-8")
	}
	return filepath.ToSlash(name), src, nil
}
