package archive

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// pathRule returns "" if p is a valid package path, or the rule it breaks. A valid path is
// relative, slash-separated and clean, printable NFC UTF-8, and within the length limits: the
// same bytes name the same file on every host, and no name can step out of the package or
// spoof another on screen.
func pathRule(p string) string {
	switch {
	case p == "":
		return "path is empty"
	case len(p) > MaxPathBytes:
		return fmt.Sprintf("path is longer than %d bytes", MaxPathBytes)
	case !utf8.ValidString(p):
		return "path is not valid UTF-8"
	case strings.IndexByte(p, 0) >= 0:
		return "path contains NUL"
	case strings.IndexByte(p, '\\') >= 0:
		return "path contains a backslash"
	case strings.IndexFunc(p, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return "path contains a non-printable character"
	case p[0] == '/':
		return "path is absolute"
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch {
		case seg == "":
			return "path has an empty segment"
		case seg == ".":
			return `path has a "." segment`
		case seg == "..":
			return `path has a ".." segment`
		case len(seg) > MaxNameBytes:
			return fmt.Sprintf("path has a segment longer than %d bytes", MaxNameBytes)
		}
	}
	if !norm.NFC.IsNormalString(p) {
		return "path is not in Unicode normalization form C"
	}
	return ""
}

// index finds collisions among the entries of one package: a tree of the paths seen, each
// folder's children keyed by their case-folded name, so that "A" and "a", or "A/x" and "a/y",
// are caught whatever the order, and a file is never also a folder. Adding a path costs time in
// its length. An index is not safe for concurrent use.
type index struct {
	root  node
	caser cases.Caser
}

type node struct {
	name     string // the segment as the package spells it
	dir      bool
	explicit bool // named by an entry of its own, not only as a parent
	kids     map[string]*node
}

func newIndex() *index {
	return &index{root: node{dir: true}, caser: cases.Fold()}
}

// fold is the key two names collide under: full Unicode case folding, then NFC. It is stricter
// than any one case-insensitive file system, which is the point.
func (x *index) fold(name string) string {
	return norm.NFC.String(x.caser.String(name))
}

// add records the valid path p as a folder or a file, or returns the collision.
func (x *index) add(p string, dir bool) *Error {
	cur := &x.root
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		last := i == len(segs)-1
		key := x.fold(seg)
		kid := cur.kids[key]
		if kid == nil {
			kid = &node{name: seg, dir: dir || !last, explicit: last}
			if cur.kids == nil {
				cur.kids = make(map[string]*node)
			}
			cur.kids[key] = kid
			cur = kid
			continue
		}
		if kid.name != seg {
			other := strings.Join(append(segs[:i:i], kid.name), "/")
			return refuse(p, ErrCollision, fmt.Sprintf("differs only in case from %q", other))
		}
		switch {
		case !last && !kid.dir:
			return refuse(p, ErrCollision, fmt.Sprintf("lies under %q, which is a file", strings.Join(segs[:i+1], "/")))
		case last && kid.dir != dir && kid.dir:
			return refuse(p, ErrCollision, "is a file where other entries need a folder")
		case last && kid.dir != dir:
			return refuse(p, ErrCollision, "is a folder where another entry is a file")
		case last && kid.explicit:
			return refuse(p, ErrCollision, "duplicate entry")
		case last:
			kid.explicit = true
		}
		cur = kid
	}
	return nil
}
