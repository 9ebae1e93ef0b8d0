package yamljson

import (
	"bytes"
	"unicode/utf8"
)

const utf8BOM = "\uFEFF"

// checkInput validates data as a YAML character stream and returns it ready
// for goccy: the leading byte order mark removed and CRLF line breaks turned
// into LF.
//
// It is strict where YAML is and goccy is not: goccy silently turns invalid
// UTF-8 into U+FFFD, accepts control characters, and keeps a leading byte
// order mark as part of the first key. A bare CR, a line break in YAML 1.2, is refused rather
// than normalized, because editors and goccy disagree about where such lines
// end; no manifest needs one. Removing the BOM shifts the columns of line 1
// by one, which no reader can see. Line numbers are unchanged.
func checkInput(data []byte) (string, *Error) {
	if len(data) > MaxInputBytes {
		return "", &Error{Rule: ruleTooLarge}
	}
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	out := make([]byte, 0, len(data))
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return "", &Error{Line: line, Column: col, Rule: ruleNotUTF8}
		case r == '\r':
			if i+1 >= len(data) || data[i+1] != '\n' {
				return "", &Error{Line: line, Column: col, Rule: ruleBareCR}
			}
			i++ // drop the CR; the LF is handled next.
			continue
		case r == '\uFEFF':
			return "", &Error{Line: line, Column: col, Rule: ruleMidDocBOM}
		case !isPrintable(r):
			return "", &Error{Line: line, Column: col, Rule: ruleBadChar}
		}
		out = append(out, data[i:i+size]...)
		i += size
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return string(out), nil
}

// isPrintable reports whether r is in YAML 1.2's c-printable set (tab, line
// feed and carriage return, printable ASCII, NEL, and the rest of Unicode but
// for C1 controls, surrogates and U+FFFE/U+FFFF).
func isPrintable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r < 0x20 || r == 0x7F:
		return false
	case r < 0x7F:
		return true
	case r == 0x85:
		return true
	case r < 0xA0:
		return false
	case r <= 0xD7FF:
		return true
	case r < 0xE000:
		return false
	case r <= 0xFFFD:
		return true
	default:
		return r >= 0x10000 && r <= 0x10FFFF
	}
}
