package yamljson

import "unicode/utf8"

// Quoted scalars are checked against the input text rather than trusted to
// goccy, whose decoder (v1.19.2) is lenient where a signed format must not
// be: it turns \xZZ into an arbitrary character instead of refusing it, turns
// a lone surrogate escape or a code point beyond U+10FFFF into U+FFFD
// silently, and drops an escaped space at the end of a line of a multi-line
// double-quoted scalar.
//
// goccy's token positions are approximate (the offset runs one short after a
// comment or a tag, the column skips some tabs), so the scalar is found by
// trying the quote characters on the token's line from a lower bound on its
// position, and accepted where the text there decodes, by YAML 1.2's rules,
// to exactly goccy's value. The value Convert emits is therefore one both
// decoders agree on; where they disagree, or an escape is invalid, the
// document is refused.

// quoteMatch is the outcome of matching one candidate position.
type quoteMatch int

const (
	quoteSame     quoteMatch = iota // decodes to the expected value
	quoteDiffers                    // decodes to something else, or is not a scalar
	quoteRejected                   // holds an invalid escape: rule and at are set
)

// matchQuoted decodes the single- or double-quoted scalar whose opening
// quote is at src[start] and compares it with want as it goes, stopping at
// the first difference so that a wrong candidate costs little. It returns
// the index after the closing quote for quoteSame, and the rule and the
// index of the offending escape for quoteRejected.
func matchQuoted(src []rune, start int, want string) (end int, m quoteMatch, rule string, at int) {
	q := quote{want: want}
	open := src[start]
	// pending holds a run of literal spaces and tabs: a line break drops
	// them, anything else makes them content.
	pendingFrom := -1
	i := start + 1
	for i < len(src) && !q.differs {
		c := src[i]
		if c != ' ' && c != '\t' && c != '\n' && pendingFrom >= 0 {
			for _, w := range src[pendingFrom:i] {
				q.emit(w)
			}
			pendingFrom = -1
		}
		switch {
		case c == open && open == '\'' && i+1 < len(src) && src[i+1] == '\'':
			q.emit('\'')
			i += 2
		case c == open:
			if q.pos != len(q.want) {
				return 0, quoteDiffers, "", 0
			}
			return i + 1, quoteSame, "", 0
		case c == '\\' && open == '"' && i+1 < len(src) && src[i+1] == '\n':
			// An escaped line break joins the lines, keeping the white space
			// before it and dropping the indentation after it; empty lines
			// in between still count as line feeds.
			i = q.fold(src, i+1, false)
		case c == '\\' && open == '"':
			if i+1 >= len(src) {
				return 0, quoteRejected, ruleBadEscape, i
			}
			r, n, rule := decodeEscape(src, i)
			if rule != "" {
				return 0, quoteRejected, rule, i
			}
			q.emit(r)
			i += n
		case c == '\n':
			// A line break folds: trailing white space goes, one break
			// becomes a space, n+1 breaks become n line feeds.
			pendingFrom = -1
			i = q.fold(src, i, true)
		case c == ' ' || c == '\t':
			if pendingFrom < 0 {
				pendingFrom = i
			}
			i++
		default:
			q.emit(c)
			i++
		}
	}
	return 0, quoteDiffers, "", 0
}

// quote compares decoded characters with the expected value.
type quote struct {
	want    string
	pos     int // bytes of want matched so far
	differs bool
}

func (q *quote) emit(r rune) {
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	if q.pos+n > len(q.want) || q.want[q.pos:q.pos+n] != string(buf[:n]) {
		q.differs = true
		return
	}
	q.pos += n
}

// fold consumes the line break at src[i], any following lines that hold
// only white space, and the indentation of the next line. It emits a line
// feed per such empty line or, when join is set and there were none, one
// space. It returns the index after the indentation.
func (q *quote) fold(src []rune, i int, join bool) int {
	i++ // the break
	empty := 0
	for {
		j := i
		for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
			j++
		}
		if j < len(src) && src[j] == '\n' {
			empty++
			i = j + 1
			continue
		}
		i = j
		break
	}
	if empty == 0 && join {
		q.emit(' ')
	}
	for ; empty > 0; empty-- {
		q.emit('\n')
	}
	return i
}

// decodeEscape decodes the escape sequence starting with the backslash at
// src[i], returning the character, the length of the sequence, or a rule.
// The escapes are YAML 1.2's; \u may also be a UTF-16 surrogate pair, as in
// JSON, but a lone surrogate is refused, as is \U beyond U+10FFFF.
func decodeEscape(src []rune, i int) (rune, int, string) {
	e := src[i+1]
	if r, ok := simpleEscapes[e]; ok {
		return r, 2, ""
	}
	width := hexEscapeWidth[e]
	if width == 0 {
		return 0, 0, ruleBadEscape
	}
	r, ok := hexRune(src, i+2, width)
	if !ok {
		return 0, 0, ruleBadEscape
	}
	n := 2 + width
	if e == 'u' && r >= 0xD800 && r <= 0xDBFF {
		// A high surrogate must be followed by \u and a low surrogate.
		if i+n+1 < len(src) && src[i+n] == '\\' && src[i+n+1] == 'u' {
			lo, ok := hexRune(src, i+n+2, 4)
			if ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), n + 6, ""
			}
		}
		return 0, 0, ruleSurrogate
	}
	if !utf8.ValidRune(r) {
		return 0, 0, ruleSurrogate
	}
	return r, n, ""
}

// simpleEscapes maps the character after a backslash to what it stands for,
// for YAML 1.2's one-character escapes.
var simpleEscapes = map[rune]rune{
	'0': 0, 'a': 0x07, 'b': 0x08, 't': 0x09, '\t': 0x09, 'n': 0x0A,
	'v': 0x0B, 'f': 0x0C, 'r': 0x0D, 'e': 0x1B, ' ': 0x20, '"': '"',
	'/': '/', '\\': '\\', 'N': 0x85, '_': 0xA0, 'L': 0x2028, 'P': 0x2029,
}

// hexEscapeWidth is the number of hexadecimal digits after \x, \u and \U.
var hexEscapeWidth = map[rune]int{'x': 2, 'u': 4, 'U': 8}

// hexRune reads width hexadecimal digits at src[i:].
func hexRune(src []rune, i, width int) (rune, bool) {
	if i+width > len(src) {
		return 0, false
	}
	var r rune
	for _, c := range src[i : i+width] {
		if c > 0x7F {
			return 0, false
		}
		d := digitValue(byte(c))
		if d > 15 {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
