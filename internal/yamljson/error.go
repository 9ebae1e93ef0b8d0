package yamljson

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is the only error type Convert returns. It says where the document
// was refused and by which rule, and never carries the offending value or
// key: manifests may hold secrets by mistake, and error text travels into
// logs and terminals.
type Error struct {
	// Line and Column are 1-based; Column counts characters, not bytes. Both
	// are zero when the error has no position (an input too large, an empty
	// document). They come from goccy's token positions, which are exact for
	// ordinary documents but may fall short on a line holding a tab.
	Line, Column int

	// Path is the document path of the node the rule refused, or of the
	// mapping holding a refused key: index-based, such as
	// capabilities[3].parameters, and empty at the root or when the error was
	// found before the document tree was built (syntax errors and limits met
	// while scanning tokens). Keys that are not simple identifiers are shown
	// quoted, such as x["a b"]; a key longer than 64 bytes is cut short.
	Path string

	// Rule is a short fixed text naming the rule, such as
	// "duplicate mapping key". It never includes document text.
	Rule string
}

// Error formats the error as "yaml: LINE:COL: PATH: RULE", leaving out the
// position or the path when they are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("yaml: ")
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Column))
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Rule)
	return b.String()
}

// pathSeg is one step of a document path: a mapping key or a sequence index.
type pathSeg struct {
	key   string
	index int
	isKey bool
}

// renderPath formats segs as an index-based path: a simple key as name (or
// .name after another step), any other key as ["..."] with JSON escaping, an
// index as [n].
func renderPath(segs []pathSeg) string {
	var b []byte
	for i, s := range segs {
		switch {
		case !s.isKey:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(s.index), 10)
			b = append(b, ']')
		case isSimpleKey(s.key):
			if i > 0 {
				b = append(b, '.')
			}
			b = append(b, s.key...)
		default:
			k := s.key
			cut := len(k) > maxPathSegmentBytes
			if cut {
				k = k[:maxPathSegmentBytes]
				for !utf8.ValidString(k) {
					k = k[:len(k)-1]
				}
			}
			b = append(b, '[')
			if cut {
				b = appendJSONString(b, k+"...")
			} else {
				b = appendJSONString(b, k)
			}
			b = append(b, ']')
		}
	}
	return string(b)
}

// isSimpleKey reports whether k can be shown bare in a path: non-empty, at
// most maxPathSegmentBytes long, and made of ASCII letters, digits, '_' and
// '-', so that it cannot be mistaken for path punctuation.
func isSimpleKey(k string) bool {
	if k == "" || len(k) > maxPathSegmentBytes {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
