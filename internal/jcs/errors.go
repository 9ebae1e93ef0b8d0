package jcs

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinel errors, one for each way a document can fail, for callers to test
// with errors.Is. A *SyntaxError wraps exactly one of them.
var (
	// ErrSyntax is a break of the RFC 8259 grammar, including empty input,
	// a byte order mark and data after the top-level value.
	ErrSyntax = errors.New("jcs: invalid JSON")
	// ErrDuplicateKey is an object with two members of the same name,
	// compared after escapes are resolved. Readers disagree on which one
	// wins, so such an object has no single meaning to sign.
	ErrDuplicateKey = errors.New("jcs: duplicate object member name")
	// ErrInvalidUTF8 is a byte sequence that is not UTF-8, in the input or
	// in a string of a Value built by hand.
	ErrInvalidUTF8 = errors.New("jcs: invalid UTF-8")
	// ErrLoneSurrogate is a \u escape of a UTF-16 surrogate that is not half
	// of a high-then-low pair. It names no character, so it has no UTF-8
	// form to canonicalize to.
	ErrLoneSurrogate = errors.New("jcs: lone surrogate in string escape")
	// ErrNonFinite is a number that reads as an infinity (such as 1e400),
	// or a NaN or infinite Float in a Value built by hand. RFC 8785 has no
	// form for them.
	ErrNonFinite = errors.New("jcs: number is not finite")
	// ErrPrecision is a number literal, refused under
	// Options.ExactNumbers, that says more than the double it reads as.
	ErrPrecision = errors.New("jcs: number loses precision as an IEEE 754 double")
	// ErrTooDeep is nesting deeper than the depth limit.
	ErrTooDeep = errors.New("jcs: nesting too deep")
	// ErrTooLarge is input longer than the size limit.
	ErrTooLarge = errors.New("jcs: input too large")
)

// SyntaxError reports why a document or Value has no canonical form, and
// where. It never holds the offending text: member names, strings and
// numbers may be secrets, and an error often ends up in a log.
type SyntaxError struct {
	// Offset is the byte offset in the input at which the rule was broken,
	// or -1 when the error comes from AppendCanonical on a Value.
	Offset int
	// Path is the location of the value being read, such as
	// capabilities[3].parameters, or empty for the top-level value. Member
	// names outside [A-Za-z0-9_] are written quoted in brackets, as in
	// ["content-type"]. For a fault in a member name (a duplicate, say) it
	// is the path of the object holding the member.
	Path string
	// Rule says what was broken, such as "duplicate object member name".
	Rule string

	err error // the sentinel Unwrap returns
}

// Error returns "jcs: PATH: RULE (offset N)", with $ as the PATH of the
// top-level value and no offset when Offset is negative.
func (e *SyntaxError) Error() string {
	var b strings.Builder
	b.WriteString("jcs: ")
	if e.Path == "" {
		b.WriteByte('$')
	} else {
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Rule)
	if e.Offset >= 0 {
		b.WriteString(" (offset ")
		b.WriteString(strconv.Itoa(e.Offset))
		b.WriteByte(')')
	}
	return b.String()
}

// Unwrap returns the sentinel that names the class of the error, such as
// ErrDuplicateKey.
func (e *SyntaxError) Unwrap() error { return e.err }

// pathSeg is one step of the path from the top-level value to the value
// being read: a member name, or an array index when index >= 0.
type pathSeg struct {
	name  string
	index int
}

// formatPath writes a path in the a.b[3]["c d"] form of SyntaxError.Path.
// It is called only when an error is made, so parsing keeps the path as
// cheap segments and pays for the text only on failure.
// A path longer than maxPathSegments keeps its first and last segments with
// "..." between them.
func formatPath(path []pathSeg) string {
	var b strings.Builder
	elided := false // just wrote "...", which also separates
	for i, seg := range path {
		if len(path) > maxPathSegments {
			head := maxPathSegments / 4
			tail := len(path) - (maxPathSegments - head)
			if i >= head && i < tail {
				if i == head {
					b.WriteString("...")
					elided = true
				}
				continue
			}
		}
		switch {
		case seg.index >= 0:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(seg.index))
			b.WriteByte(']')
		case isIdent(seg.name):
			if i > 0 && !elided {
				b.WriteByte('.')
			}
			b.WriteString(seg.name)
		default:
			name, cut := seg.name, false
			if len(name) > maxPathName {
				n := maxPathName
				for n > 0 && !utf8.RuneStart(name[n]) {
					n--
				}
				name, cut = name[:n], true
			}
			q := strconv.Quote(name)
			b.WriteByte('[')
			if cut {
				b.WriteString(q[:len(q)-1])
				b.WriteString(`..."`)
			} else {
				b.WriteString(q)
			}
			b.WriteByte(']')
		}
		elided = false
	}
	return b.String()
}

// isIdent reports whether a member name can be written bare in a path.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
