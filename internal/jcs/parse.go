package jcs

import (
	"bytes"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Options tunes Parse. A nil *Options is the same as the zero Options, which
// is the strict default apart from ExactNumbers.
type Options struct {
	// ExactNumbers refuses a number literal that says more than the double
	// it reads as: one whose exact decimal value differs from the shortest
	// decimal that reads back as the same double. 9007199254740993 and
	// 1.00000000000000001 are refused, 0.1, 0.10, 1e2, -0 and
	// 9007199254740992 accepted, and 1e-400, which reads as 0, refused.
	// Signed manifests set it, so that the text a person reviews and the
	// value a program acts on cannot differ.
	ExactNumbers bool
	// MaxDepth is the deepest nesting of arrays and objects accepted;
	// zero or less means DefaultMaxDepth, and more than MaxDepthCeiling
	// means MaxDepthCeiling.
	MaxDepth int
	// MaxBytes is the longest input accepted; zero or less means
	// DefaultMaxBytes.
	MaxBytes int
}

// Parse reads data as exactly one JSON value under the strict rules of the
// package: RFC 8259 grammar with nothing but whitespace around the value,
// UTF-8 without a byte order mark, no lone surrogate escapes, no duplicate
// member names, no number that overflows a double, and the limits of opts.
// A nil opts is the zero Options. Any failure is a *SyntaxError. Parse
// keeps no reference to data, so the caller may reuse it.
func Parse(data []byte, opts *Options) (Value, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	o.MaxDepth = min(o.MaxDepth, MaxDepthCeiling)
	p := parsers.Get().(*parser)
	defer p.release()
	p.data, p.exact, p.maxDepth = data, o.ExactNumbers, o.MaxDepth
	switch {
	case len(data) > o.MaxBytes:
		return Value{}, p.fail(o.MaxBytes, ErrTooLarge, "input larger than "+strconv.Itoa(o.MaxBytes)+" bytes")
	case len(data) == 0:
		return Value{}, p.fail(0, ErrSyntax, "empty input")
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		// RFC 8259 §8.1 forbids a byte order mark; accepting one would
		// give two byte strings the same meaning.
		return Value{}, p.fail(0, ErrSyntax, "byte order mark")
	}
	// One copy of the input as a string lets every name, string and number
	// literal without escapes be a substring of it instead of an
	// allocation of its own: a typical manifest then parses with a quarter
	// of the allocations. It also means the Value never aliases data.
	p.src = string(data)
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return Value{}, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return Value{}, p.unexpected("data after the top-level value")
	}
	return v, nil
}

// parser reads one document. Arrays and objects collect their elements on
// the shared stacks vals and mems and copy them out once complete, so each
// array or object costs one exactly sized allocation whatever its length.
type parser struct {
	data     []byte
	src      string // data as a string, to take substrings of
	pos      int
	exact    bool
	maxDepth int
	depth    int
	path     []pathSeg     // location of the value being read, for errors
	vals     stack[Value]  // elements of the arrays being read
	mems     stack[Member] // members of the objects being read
	buf      []byte        // scratch for strings with escapes
}

// parsers keeps parsers between documents, so that the stacks' first chunks and the
// scratch slices are allocated once rather than on every Parse of a small document (a
// call's params, parsed several times a call).
var parsers = sync.Pool{New: func() any { return new(parser) }}

// release clears p and returns it to parsers, keeping only its stacks' first chunks (a huge
// document's larger chunks are left to the collector rather than held by the pool).
func (p *parser) release() {
	vals, mems, path, buf := p.vals.reset(), p.mems.reset(), p.path[:0], p.buf[:0]
	if cap(buf) > maxPooledScratch {
		buf = nil
	}
	if cap(path) > maxPooledScratch {
		path = nil
	}
	*p = parser{vals: vals, mems: mems, path: path, buf: buf}
	parsers.Put(p)
}

func (p *parser) fail(off int, sentinel error, rule string) error {
	return &SyntaxError{Offset: off, Path: formatPath(p.path), Rule: rule, err: sentinel}
}

// unexpected reports the byte at p.pos as out of place. A byte that starts no
// UTF-8 sequence is reported as invalid UTF-8 rather than as bad grammar, so
// that ErrInvalidUTF8 covers bad encoding wherever it is.
func (p *parser) unexpected(rule string) error {
	if p.pos >= len(p.data) {
		return p.fail(p.pos, ErrSyntax, "unexpected end of input")
	}
	if c := p.data[p.pos]; c >= utf8.RuneSelf {
		if _, size := utf8.DecodeRune(p.data[p.pos:]); size <= 1 {
			return p.fail(p.pos, ErrInvalidUTF8, "invalid UTF-8")
		}
	}
	return p.fail(p.pos, ErrSyntax, rule)
}

// skipSpace skips the four whitespace bytes of RFC 8259 and nothing else.
func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (Value, error) {
	if p.pos >= len(p.data) {
		return Value{}, p.unexpected("")
	}
	switch c := p.data[p.pos]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		s, err := p.str()
		return Value{Kind: String, Str: s}, err
	case 't':
		return p.literal("true", Value{Kind: Bool, Bool: true})
	case 'f':
		return p.literal("false", Value{Kind: Bool})
	case 'n':
		return p.literal("null", Value{})
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return p.number()
		}
		return Value{}, p.unexpected("expected a JSON value")
	}
}

func (p *parser) literal(word string, v Value) (Value, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return Value{}, p.fail(p.pos, ErrSyntax, "invalid literal")
	}
	p.pos += len(word)
	return v, nil
}

// enter counts one more level of nesting for the bracket at p.pos.
func (p *parser) enter() error {
	p.depth++
	if p.depth > p.maxDepth {
		return p.fail(p.pos, ErrTooDeep, "nesting deeper than "+strconv.Itoa(p.maxDepth))
	}
	return nil
}

func (p *parser) array() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return Value{Kind: Array}, nil
	}
	base := p.vals.mark()
	p.path = append(p.path, pathSeg{index: 0})
	top := len(p.path) - 1
	for i := 0; ; i++ {
		p.path[top].index = i
		v, err := p.value()
		if err != nil {
			return Value{}, err
		}
		p.vals.push(v)
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			p.skipSpace()
			if p.pos < len(p.data) && p.data[p.pos] == ']' {
				p.path = p.path[:top]
				return Value{}, p.fail(p.pos, ErrSyntax, "trailing comma in array")
			}
			continue
		}
		p.path = p.path[:top]
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			break
		}
		return Value{}, p.unexpected("expected ',' or ']' after array element")
	}
	items := p.vals.popTo(base)
	p.depth--
	return Value{Kind: Array, Items: items}, nil
}

func (p *parser) object() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	p.pos++ // '{'
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return Value{Kind: Object}, nil
	}
	base := p.mems.mark()
	n := 0                       // members so far
	var seen map[string]struct{} // their names, once the object is large
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Value{}, p.unexpected("expected a string as object member name")
		}
		keyOff := p.pos
		name, err := p.str()
		if err != nil {
			return Value{}, err
		}
		if seen != nil {
			if _, dup := seen[name]; dup {
				return Value{}, p.fail(keyOff, ErrDuplicateKey, "duplicate object member name")
			}
			seen[name] = struct{}{}
		} else {
			for ms := range p.mems.since(base) {
				for i := range ms {
					if ms[i].Name == name {
						return Value{}, p.fail(keyOff, ErrDuplicateKey, "duplicate object member name")
					}
				}
			}
			if n >= linearDupScan {
				seen = make(map[string]struct{}, 2*linearDupScan)
				for ms := range p.mems.since(base) {
					for i := range ms {
						seen[ms[i].Name] = struct{}{}
					}
				}
				seen[name] = struct{}{}
			}
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.unexpected("expected ':' after object member name")
		}
		p.pos++
		p.skipSpace()
		p.path = append(p.path, pathSeg{name: name, index: -1})
		v, err := p.value()
		if err != nil {
			return Value{}, err
		}
		p.path = p.path[:len(p.path)-1]
		p.mems.push(Member{Name: name, Value: v})
		n++
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			p.skipSpace()
			if p.pos < len(p.data) && p.data[p.pos] == '}' {
				return Value{}, p.fail(p.pos, ErrSyntax, "trailing comma in object")
			}
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			break
		}
		return Value{}, p.unexpected("expected ',' or '}' after object member")
	}
	members := p.mems.popTo(base)
	p.depth--
	return Value{Kind: Object, Members: members}, nil
}

// str reads the string whose opening quote is at p.pos. Strings without
// escapes, nearly all of them, are checked in place and copied once.
func (p *parser) str() (string, error) {
	data := p.data
	start := p.pos + 1
	for i := start; i < len(data); {
		if plain[data[i]] {
			i++
			continue
		}
		c := data[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				p.pos = i + 1
				return p.src[start:i], nil
			case c == '\\':
				return p.strEscaped(start, i)
			case c < 0x20:
				return "", p.fail(i, ErrSyntax, "control character in string must be escaped")
			}
			i++
			continue
		}
		_, size := utf8.DecodeRune(data[i:])
		if size <= 1 {
			return "", p.fail(i, ErrInvalidUTF8, "invalid UTF-8")
		}
		i += size
	}
	return "", p.fail(start-1, ErrSyntax, "unterminated string")
}

// strEscaped continues str from the first backslash at i, decoding into
// p.buf.
func (p *parser) strEscaped(start, i int) (string, error) {
	data := p.data
	buf := append(p.buf[:0], data[start:i]...)
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			p.pos = i + 1
			p.buf = buf
			return string(buf), nil
		case c == '\\':
			if i+1 >= len(data) {
				return "", p.fail(start-1, ErrSyntax, "unterminated string")
			}
			switch data[i+1] {
			case '"', '\\', '/':
				buf = append(buf, data[i+1])
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(data, i+2)
				if !ok {
					return "", p.fail(i, ErrSyntax, "invalid \\u escape in string")
				}
				if utf16.IsSurrogate(r) {
					// Only a high surrogate directly followed by an
					// escaped low surrogate names a character.
					if r >= 0xdc00 || i+7 >= len(data) || data[i+6] != '\\' || data[i+7] != 'u' {
						return "", p.fail(i, ErrLoneSurrogate, "lone surrogate in string escape")
					}
					lo, ok := hex4(data, i+8)
					if !ok {
						return "", p.fail(i+6, ErrSyntax, "invalid \\u escape in string")
					}
					if lo < 0xdc00 || lo > 0xdfff {
						return "", p.fail(i, ErrLoneSurrogate, "lone surrogate in string escape")
					}
					r = utf16.DecodeRune(r, lo)
					i += 6
				}
				buf = utf8.AppendRune(buf, r)
				i += 6
				continue
			default:
				return "", p.fail(i, ErrSyntax, "invalid escape in string")
			}
			i += 2
		case c < 0x20:
			return "", p.fail(i, ErrSyntax, "control character in string must be escaped")
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			_, size := utf8.DecodeRune(data[i:])
			if size <= 1 {
				return "", p.fail(i, ErrInvalidUTF8, "invalid UTF-8")
			}
			buf = append(buf, data[i:i+size]...)
			i += size
		}
	}
	p.buf = buf
	return "", p.fail(start-1, ErrSyntax, "unterminated string")
}

// hex4 reads the four hex digits of a \u escape at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads the number literal at p.pos.
func (p *parser) number() (Value, error) {
	data := p.data
	start := p.pos
	i, rule := scanNumber(data, start)
	if rule != "" {
		return Value{}, p.fail(start, ErrSyntax, rule)
	}
	lit := p.src[start:i]
	// scanNumber admits only what ParseFloat reads, so its one
	// possible error is a range error, and only overflow returns one:
	// underflow reads as zero without error and is left to ExactNumbers.
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return Value{}, p.fail(start, ErrNonFinite, "number is not finite")
	}
	if p.exact && !exactLiteral(lit, f) {
		return Value{}, p.fail(start, ErrPrecision, "number loses precision as an IEEE 754 double")
	}
	p.pos = i
	return Value{Kind: Number, Num: lit, Float: f}, nil
}

// scanNumber reads the RFC 8259 number at s[i:] and returns where it ends,
// or the rule it breaks.
func scanNumber[T string | []byte](s T, i int) (end int, rule string) {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i >= len(s) || !isDigit(s[i]):
		return i, "invalid number"
	case s[i] == '0':
		i++
		if i < len(s) && isDigit(s[i]) {
			return i, "leading zero in number"
		}
	default:
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return i, "number has no digits after the decimal point"
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return i, "number has no digits in the exponent"
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i, ""
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
