package intent

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The rules a filesystem intent's path can break. None contains any part of the value checked.
const (
	rulePathEmpty        = "must not be empty"
	rulePathLength       = "must be at most 4096 bytes"
	rulePathUTF8         = "must be valid UTF-8"
	rulePathNUL          = "must not contain NUL"
	rulePathBackslash    = "must not contain a backslash"
	rulePathBidi         = "must not contain bidirectional formatting characters"
	rulePathZeroWidth    = "must not contain zero-width or invisible formatting characters"
	rulePathReplacement  = "must not contain the Unicode replacement character"
	rulePathPrintable    = "must contain only printable characters"
	rulePathNFC          = "must be in Unicode normalization form NFC"
	rulePathAbsolute     = "must be absolute"
	rulePathEmptySegment = "must not have an empty segment (a doubled or trailing separator)"
	rulePathDotSegment   = "must not have a dot or dot-dot segment"
	rulePathSegment      = "must have segments of at most 255 bytes"
	rulePathOutside      = "must be inside the sandbox root"
	rulePathProtected    = "must not be inside a protected mount"
	rulePathBadRoot      = "cannot be checked: the host's sandbox root is not a clean absolute path"
)

// PathRule returns "" when p may be the path of a filesystem intent under h, or the rule it
// breaks. A path is absolute, at most MaxPathBytes, valid UTF-8 in NFC, every character
// printable (no bidirectional controls, zero-width characters or U+FFFD), with no NUL or
// backslash, no empty, "." or ".." segment (so no doubled or trailing "/") and segments of at
// most MaxSegmentBytes; it is the sandbox root or lies beneath it, and is not inside a
// protected mount. The root itself is allowed. With h.ResolveOnDisk the symbolic links along
// its existing prefixes are resolved too (see Host.ResolveOnDisk).
//
// A path is never repaired: "/sandbox//x" is refused, not read as "/sandbox/x".
func PathRule(p string, h Host) string {
	if rule := pathLexicalRule(p); rule != "" {
		return rule
	}
	root, ok := h.root()
	if !ok {
		return rulePathBadRoot
	}
	if !within(p, root) {
		return rulePathOutside
	}
	for _, prot := range h.protected(root) {
		if within(p, prot) {
			return rulePathProtected
		}
	}
	if h.ResolveOnDisk {
		return diskRule(p, root, h)
	}
	return ""
}

// pathLexicalRule checks everything about p that needs no host.
func pathLexicalRule(p string) string {
	switch {
	case p == "":
		return rulePathEmpty
	case len(p) > MaxPathBytes:
		return rulePathLength
	case !utf8.ValidString(p):
		return rulePathUTF8
	case strings.IndexByte(p, 0) >= 0:
		return rulePathNUL
	case strings.IndexByte(p, '\\') >= 0:
		return rulePathBackslash
	}
	for _, c := range p {
		if rule := runeRule(c); rule != "" {
			return rule
		}
	}
	if !norm.NFC.IsNormalString(p) {
		return rulePathNFC
	}
	if p[0] != '/' {
		return rulePathAbsolute
	}
	if p == "/" {
		return ""
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		switch {
		case seg == "":
			return rulePathEmptySegment
		case seg == "." || seg == "..":
			return rulePathDotSegment
		case len(seg) > MaxSegmentBytes:
			return rulePathSegment
		}
	}
	return ""
}

// runeRule returns the rule one character of a path breaks, or "".
func runeRule(c rune) string {
	switch {
	case c == 0x061c, // ARABIC LETTER MARK
		c == 0x200e, c == 0x200f, // LEFT-TO-RIGHT MARK, RIGHT-TO-LEFT MARK
		0x202a <= c && c <= 0x202e, // LRE, RLE, PDF, LRO, RLO
		0x2066 <= c && c <= 0x2069: // LRI, RLI, FSI, PDI
		return rulePathBidi
	case 0x200b <= c && c <= 0x200d, // ZERO WIDTH SPACE, NON-JOINER, JOINER
		c == 0x2060, // WORD JOINER
		c == 0xfeff: // ZERO WIDTH NO-BREAK SPACE (byte order mark)
		return rulePathZeroWidth
	case c == utf8.RuneError:
		return rulePathReplacement
	case !unicode.IsPrint(c):
		return rulePathPrintable
	}
	return ""
}
