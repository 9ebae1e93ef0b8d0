package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// errOutside is the refusal of a path beyond the root. It never echoes the path.
func errOutside() *sdk.Error {
	return sdk.PermissionDenied("the path is outside the files app's folder")
}

func badParam(field, rule string) *sdk.Error {
	return sdk.InvalidParams(manifest.Problems{{Path: field, Rule: rule}})
}

// resolvePath reads p, a path param, as a path relative to the root: clean, never absolute,
// never with a ".." segment, "." for the root itself. roots are the absolute, clean spellings
// of the root that an absolute p may start with (as given and with its links resolved).
//
// An absolute p must lie under one of roots once cleaned; a relative p is taken relative to
// the root. A p that leaves the root lexically is refused as outside (PermissionDenied); a
// ".." that stays inside is refused as invalid, since os.Root and the gateway's constraint
// check resolve ".." after following links while filepath.Clean does not. Links are left to
// os.Root, which refuses any that lead outside.
func resolvePath(roots []string, p string) (string, error) {
	switch {
	case p == "":
		return "", badParam("path", "must not be empty")
	case len(p) > MaxPathBytes:
		return "", badParam("path", "must be at most 4096 bytes")
	case strings.IndexByte(p, 0) >= 0:
		return "", badParam("path", "must not contain NUL")
	case !utf8.ValidString(p):
		return "", badParam("path", "must be valid UTF-8")
	}
	dotdot := false
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r < utf8.RuneSelf && os.IsPathSeparator(uint8(r)) }) {
		if seg == ".." {
			dotdot = true
		}
	}
	c := filepath.Clean(p)
	var rel string
	if filepath.IsAbs(c) {
		found := false
		for _, r := range roots {
			if c == r {
				rel, found = ".", true
				break
			}
			prefix := r
			if !strings.HasSuffix(prefix, string(filepath.Separator)) {
				prefix += string(filepath.Separator)
			}
			if after, ok := strings.CutPrefix(c, prefix); ok {
				rel, found = after, true
				break
			}
		}
		if !found {
			return "", errOutside()
		}
	} else {
		if c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
			return "", errOutside()
		}
		rel = c
	}
	if dotdot {
		return "", badParam("path", "must not contain a '..' segment")
	}
	return rel, nil
}

// errPathEscapesText is the text of os's unexported error for a name that leaves its Root.
// A test checks that an escape is still recognised, should the text change.
const errPathEscapesText = "path escapes from parent"

// isEscape reports whether err is os.Root's refusal of a name leaving the root.
func isEscape(err error) bool {
	for err != nil {
		if err.Error() == errPathEscapesText {
			return true
		}
		err = errors.Unwrap(err)
	}
	return false
}
