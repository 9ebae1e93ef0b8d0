package token

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// notDir is the error of a path beneath a file.
var notDir error = syscall.ENOTDIR

// Path patterns of allowed_paths are absolute and clean ("/home/*", "/srv/data/**"). A "*"
// matches any run of characters within one segment, dot files included, and nothing else is
// special; "**" may only be the whole last segment, where it matches the folder before it and
// everything beneath it. So "/home/*" is anything directly under /home, not /home itself nor
// /home/a/b, and "/" alone matches only the root: "/**" is everything.
//
// Matching is on resolved paths. The path checked is made absolute against the caller's
// folder and its symbolic links resolved as the kernel would follow them (see ResolvePath),
// so "..", "//", "/./" and links lead where they really lead; the literal part of each
// pattern (the segments before the first "*") is resolved the same way. Matching is exact and
// case-sensitive: on a case-insensitive filesystem a differently cased path is refused, never
// allowed.

var (
	errPathNUL      = errors.New("path contains NUL")
	errPathUTF8     = errors.New("path is not valid UTF-8")
	errPathRelative = errors.New("relative path without a base folder")
	errPathLong     = errors.New("path too long")
	errPathLoop     = errors.New("too many symbolic links")
	errPathStat     = errors.New("path cannot be resolved")
	errPathBudget   = errors.New("too many path segments to examine")
)

// ResolvePath returns the absolute path p names with every symbolic link along it resolved:
// p is joined to dir when relative (dir must then be absolute), then walked one segment at a
// time from the root, following each link that exists, treating ".." as the parent of what
// was reached so far (which is where the kernel goes after a link), and appending the
// segments that do not exist as they are. The result is clean. A NUL byte, invalid UTF-8, a
// relative path without an absolute dir, a loop of links, or a segment that cannot be
// examined (permission denied) is an error: the path is refused, not guessed.
//
// The answer is true of the filesystem when ResolvePath looked; a provider that opens the
// path later should open the resolved path, so that a link made in between is not followed.
func ResolvePath(p, dir string) (string, error) { return resolvePath(p, dir, nil) }

// resolvePath is ResolvePath; each segment it examines on disk takes one from *budget when
// budget is not nil, and the path is refused when none is left.
func resolvePath(p, dir string, budget *int) (string, error) {
	if err := pathText(p); err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		if err := pathText(dir); err != nil || !filepath.IsAbs(dir) {
			return "", errPathRelative
		}
		p = dir + string(filepath.Separator) + p
	}
	if len(p) > 2*MaxEntryBytes {
		return "", errPathLong
	}
	rest := strings.Split(p, "/")
	resolved := "/"
	hops := 0
	for len(rest) > 0 {
		seg := rest[0]
		rest = rest[1:]
		switch seg {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, seg)
		if budget != nil {
			if *budget <= 0 {
				return "", errPathBudget
			}
			*budget--
		}
		fi, err := os.Lstat(next)
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			hops++
			if hops > maxLinkHops {
				return "", errPathLoop
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", errPathStat
			}
			if filepath.IsAbs(target) {
				resolved = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
			if len(rest) > MaxEntryBytes {
				return "", errPathLong
			}
		case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, notDir):
			// Not a link (or not there, or beneath a file): nothing to follow.
			resolved = next
		default:
			return "", errPathStat
		}
	}
	return resolved, nil
}

func pathText(p string) error {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return errPathNUL
	case !utf8.ValidString(p):
		return errPathUTF8
	case len(p) > MaxEntryBytes:
		return errPathLong
	}
	return nil
}

// pattern is a parsed allowed_paths entry.
type pattern struct {
	segs []string // the segments before a trailing "**"; "/" has none
	tree bool     // a trailing "/**"
}

// parsePattern checks an allowed_paths entry and splits it.
func parsePattern(s string) (pattern, string) {
	if err := pathText(s); err != nil || s == "" {
		return pattern{}, "must be a non-empty valid UTF-8 path without NUL, at most MaxEntryBytes"
	}
	if !strings.HasPrefix(s, "/") {
		return pattern{}, "must be absolute"
	}
	var p pattern
	body := s
	if s == "/**" {
		return pattern{tree: true}, ""
	}
	if b, ok := strings.CutSuffix(s, "/**"); ok {
		body, p.tree = b, true
	}
	if body != "/" && filepath.Clean(body) != body {
		return pattern{}, "must be clean (no empty, '.' or '..' segment, no trailing '/')"
	}
	if body != "/" {
		p.segs = strings.Split(body[1:], "/")
	}
	for _, seg := range p.segs {
		if strings.Contains(seg, "**") {
			return pattern{}, "'**' may only be the whole last segment"
		}
	}
	return p, ""
}

// resolve returns the pattern with its literal leading segments resolved on disk.
func (p pattern) resolve() (pattern, error) {
	n := 0
	for n < len(p.segs) && !strings.Contains(p.segs[n], "*") {
		n++
	}
	lit, err := ResolvePath("/"+strings.Join(p.segs[:n], "/"), "")
	if err != nil {
		return pattern{}, err
	}
	var segs []string
	if lit != "/" {
		segs = strings.Split(lit[1:], "/")
	}
	return pattern{segs: append(segs, p.segs[n:]...), tree: p.tree}, nil
}

// match reports whether the clean absolute path abs matches p.
func (p pattern) match(abs string) bool {
	var segs []string
	if abs != "/" {
		segs = strings.Split(abs[1:], "/")
	}
	if len(segs) < len(p.segs) || !p.tree && len(segs) != len(p.segs) {
		return false
	}
	for i, ps := range p.segs {
		if !segMatch(ps, segs[i]) {
			return false
		}
	}
	return true
}

// segMatch reports whether the segment s matches the segment pattern pat, in which "*"
// matches any run of characters.
func segMatch(pat, s string) bool {
	star := strings.IndexByte(pat, '*')
	if star < 0 {
		return pat == s
	}
	if !strings.HasPrefix(s, pat[:star]) {
		return false
	}
	s = s[star:]
	pat = pat[star+1:]
	// Each later part must be found in order; the last must end s. Leftmost-first search
	// for every part but the last is correct for patterns whose only wildcard is "*".
	parts := strings.Split(pat, "*")
	for i, part := range parts {
		if i == len(parts)-1 {
			return len(s) >= len(part) && strings.HasSuffix(s, part)
		}
		j := strings.Index(s, part)
		if j < 0 {
			return false
		}
		s = s[j+len(part):]
	}
	return true
}

// within reports whether every path child matches also matches parent, deciding lexically
// and refusing when unsure: a segment pattern is within another when they are equal, when the
// parent's is "*", or when the child's has no "*" and matches the parent's.
func (child pattern) within(parent pattern) bool {
	if !parent.tree && (child.tree || len(child.segs) != len(parent.segs)) {
		return false
	}
	if len(child.segs) < len(parent.segs) {
		return false
	}
	for i, ps := range parent.segs {
		cs := child.segs[i]
		if cs != ps && ps != "*" && (strings.Contains(cs, "*") || !segMatch(ps, cs)) {
			return false
		}
	}
	return true
}

// resolvedPatterns parses and resolves the allowed_paths patterns; one that does not parse
// or resolve is left out, so that it matches nothing.
func resolvedPatterns(patterns []string) []pattern {
	out := make([]pattern, 0, len(patterns))
	for _, s := range patterns {
		pat, rule := parsePattern(s)
		if rule != "" {
			continue
		}
		if rp, err := pat.resolve(); err == nil {
			out = append(out, rp)
		}
	}
	return out
}

// matchPath resolves p, relative to dir when not absolute, and reports the resolved path and
// whether one of the resolved patterns matches it.
func matchPath(pats []pattern, p, dir string) (string, bool) {
	abs, err := ResolvePath(p, dir)
	if err != nil {
		return "", false
	}
	for _, pat := range pats {
		if pat.match(abs) {
			return abs, true
		}
	}
	return "", false
}
