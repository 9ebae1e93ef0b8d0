package jcs

import (
	"cmp"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Canonicalize parses data with the default Options and returns its RFC 8785
// canonical form. It refuses, with a *SyntaxError, everything Parse refuses.
func Canonicalize(data []byte) ([]byte, error) {
	v, err := Parse(data, nil)
	if err != nil {
		return nil, err
	}
	// The canonical form is rarely longer than the input.
	return v.AppendCanonical(make([]byte, 0, len(data)))
}

// AppendCanonical appends the RFC 8785 canonical form of v to dst: no
// whitespace, object members sorted by name as UTF-16 code units, numbers
// written from Float by FormatNumber (Num is ignored), strings escaped only
// where JSON requires. A Value from Parse always succeeds; one built by hand
// fails with a *SyntaxError (Offset -1) for a NaN or infinite Float, invalid
// UTF-8 in a string or name, two members of one name, an undefined Kind, or
// nesting deeper than MaxDepthCeiling (a Value that contains itself).
// On error the returned slice holds dst and a partial form, to be discarded.
func (v Value) AppendCanonical(dst []byte) ([]byte, error) {
	var e encoder
	return e.value(dst, &v)
}

// encoder carries the path for errors and a scratch stack of member orders,
// shared by all objects of one document so that sorting allocates rarely.
type encoder struct {
	path  []pathSeg
	order []int
}

func (e *encoder) fail(sentinel error, rule string) error {
	return &SyntaxError{Offset: -1, Path: formatPath(e.path), Rule: rule, err: sentinel}
}

func (e *encoder) value(dst []byte, v *Value) ([]byte, error) {
	switch v.Kind {
	case Null:
		return append(dst, "null"...), nil
	case Bool:
		if v.Bool {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case Number:
		out, err := appendNumber(dst, v.Float)
		if err != nil {
			return out, e.fail(ErrNonFinite, "number is not finite")
		}
		return out, nil
	case String:
		out, ok := appendString(dst, v.Str, true)
		if !ok {
			return out, e.fail(ErrInvalidUTF8, "invalid UTF-8")
		}
		return out, nil
	case Array:
		return e.array(dst, v.Items)
	case Object:
		return e.object(dst, v.Members)
	}
	return dst, e.fail(ErrSyntax, "undefined kind of value")
}

func (e *encoder) array(dst []byte, items []Value) ([]byte, error) {
	if len(e.path) >= MaxDepthCeiling {
		return dst, e.fail(ErrTooDeep, "nesting deeper than "+strconv.Itoa(MaxDepthCeiling))
	}
	dst = append(dst, '[')
	e.path = append(e.path, pathSeg{})
	top := len(e.path) - 1
	for i := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		e.path[top].index = i
		var err error
		if dst, err = e.value(dst, &items[i]); err != nil {
			return dst, err
		}
	}
	e.path = e.path[:top]
	return append(dst, ']'), nil
}

func (e *encoder) object(dst []byte, members []Member) ([]byte, error) {
	if len(e.path) >= MaxDepthCeiling {
		return dst, e.fail(ErrTooDeep, "nesting deeper than "+strconv.Itoa(MaxDepthCeiling))
	}
	// Signed documents are often canonical already; a scan finds that
	// without the cost of sorting.
	sorted := true
	for i := 1; i < len(members); i++ {
		if compareUTF16(members[i-1].Name, members[i].Name) >= 0 {
			sorted = false
			break
		}
	}
	base := len(e.order)
	if !sorted {
		for i := range members {
			e.order = append(e.order, i)
		}
		order := e.order[base:]
		slices.SortFunc(order, func(a, b int) int {
			return compareUTF16(members[a].Name, members[b].Name)
		})
		for i := 1; i < len(order); i++ {
			if members[order[i-1]].Name == members[order[i]].Name {
				e.order = e.order[:base]
				return dst, e.fail(ErrDuplicateKey, "duplicate object member name")
			}
		}
	}
	dst = append(dst, '{')
	for i := range members {
		m := &members[i]
		if !sorted {
			// Index afresh: nested objects may have grown e.order.
			m = &members[e.order[base+i]]
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = appendString(dst, m.Name, true); !ok {
			return dst, e.fail(ErrInvalidUTF8, "invalid UTF-8 in object member name")
		}
		dst = append(dst, ':')
		e.path = append(e.path, pathSeg{name: m.Name, index: -1})
		var err error
		if dst, err = e.value(dst, &m.Value); err != nil {
			return dst, err
		}
		e.path = e.path[:len(e.path)-1]
	}
	e.order = e.order[:base]
	return append(dst, '}'), nil
}

// compareUTF16 orders member names as RFC 8785 §3.2.3 requires: as arrays of
// UTF-16 code units. That is UTF-8 byte order except where a character
// above U+FFFF (a surrogate pair, D800–DBFF first) meets one in
// U+E000–U+FFFF, so bytes are compared until the first difference and only
// the two characters there are weighed by their UTF-16 form.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmp.Compare(len(a), len(b))
	}
	if a[i] < utf8.RuneSelf || b[i] < utf8.RuneSelf {
		return cmp.Compare(a[i], b[i])
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	return cmp.Compare(utf16Weight(ra), utf16Weight(rb))
}

// utf16Weight maps a code point to a number whose order is that of its
// UTF-16 encoding: U+E000–U+FFFF move above every character beyond U+FFFF,
// whose leading surrogate (D800–DBFF) sorts before them.
func utf16Weight(r rune) rune {
	if r >= 0xe000 && r <= 0xffff {
		return r + 0x200000
	}
	return r
}

// plain marks the bytes appendString copies without a second look: ASCII
// other than controls, '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s as RFC 8785 writes a string, for a caller that writes a document
// of fixed shape itself; false (with dst holding a partial form) when s is not valid UTF-8.
func AppendString(dst []byte, s string) ([]byte, bool) { return appendString(dst, s, true) }

// appendString appends s as a JSON string the way RFC 8785 §3.2.2.2 writes
// it: only '"', '\\' and the controls below U+0020 escaped, with the short
// forms \b \t \n \f \r and lowercase \u00xx for the rest; everything else,
// U+007F, U+2028 and all non-ASCII included, as its UTF-8 bytes. If strict,
// invalid UTF-8 stops it and it returns false; otherwise each invalid byte
// is written as U+FFFD.
func appendString(dst []byte, s string, strict bool) ([]byte, bool) {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if plain[s[i]] {
			i++
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\r':
				dst = append(dst, '\\', 'r')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if strict {
				return dst, false
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), true
}
