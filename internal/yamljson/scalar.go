package yamljson

import (
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/token"
)

// kind is what a scalar resolved to.
type kind int

const (
	kindString kind = iota
	kindNumber
	kindBool
	kindNull
)

// scalar is a resolved scalar: for kindString, text is the string's value;
// otherwise it is the JSON literal to emit.
type scalar struct {
	kind kind
	text string
}

// resolvePlain resolves the text of a plain (unquoted) scalar by the YAML 1.2
// core schema, which is what JSON-compatible YAML means, rather than by
// goccy's tokenizer, which differs from it in ways that would change a
// manifest: it reads 1e3 as a string (a float needs a dot), a decimal beyond
// 64 bits as a string, and 1_000, 0b101 and -0x1F as numbers.
//
// Where goccy's tokenizer classified the text (goccyType) as a number but the
// core schema does not, the scalar is refused as ambiguous instead: goccy's
// own decoder, and YAML 1.1 readers, would see a different document than
// Convert. The reverse case (1e3, 99999999999999999999) is a number, as YAML
// 1.2 says. YAML 1.1's other words (yes, no, on, off, y, n) and sexagesimal
// forms (1:30) are strings, as in YAML 1.2 and goccy.
//
// The empty text is null, like ~ and null.
func resolvePlain(text string, goccyType token.Type) (scalar, string) {
	switch text {
	case "", "~", "null", "Null", "NULL":
		return scalar{kind: kindNull, text: "null"}, ""
	case "true", "True", "TRUE":
		return scalar{kind: kindBool, text: "true"}, ""
	case "false", "False", "FALSE":
		return scalar{kind: kindBool, text: "false"}, ""
	}
	if isNonFinite(text) {
		return scalar{}, ruleNonFinite
	}
	if num, rule, ok := coreInt(text); ok {
		return num, rule
	}
	if num, rule, ok := coreFloat(text); ok {
		return num, rule
	}
	switch goccyType {
	case token.IntegerType, token.FloatType, token.BinaryIntegerType,
		token.OctetIntegerType, token.HexIntegerType,
		token.BoolType, token.NullType, token.InfinityType, token.NanType:
		return scalar{}, ruleAmbiguousNum
	}
	return scalar{kind: kindString, text: text}, ""
}

// isNonFinite reports whether text spells an infinity or NaN in any case,
// with or without a sign. The core schema knows only .inf, .Inf and .INF (and
// the same for .nan); refusing every spelling means no YAML reader can see a
// non-finite number where Convert sees a string.
func isNonFinite(text string) bool {
	t := strings.TrimLeft(text, "+-")
	if len(text)-len(t) > 1 {
		return false
	}
	return strings.EqualFold(t, ".inf") || strings.EqualFold(t, ".nan")
}

// coreInt resolves text if it has the form of a core-schema integer:
// [-+]?[0-9]+, 0o[0-7]+ or 0x[0-9a-fA-F]+. ok is false for any other text.
// Octal and hexadecimal are written as their exact decimal value, however
// large; whether a value fits the manifest's number rules is the JSON layer's
// business.
//
// A decimal with a leading zero (012, -00) is refused: YAML 1.1 and goccy
// read it as octal, the core schema as decimal, and JSON forbids it.
func coreInt(text string) (num scalar, rule string, ok bool) {
	if len(text) > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'o') {
		base, digits := 16, text[2:]
		if text[1] == 'o' {
			base = 8
		}
		for i := 0; i < len(digits); i++ {
			if digitValue(digits[i]) >= base {
				return scalar{}, "", false
			}
		}
		var n big.Int
		if _, parsed := n.SetString(digits, base); !parsed {
			return scalar{}, "", false
		}
		return scalar{kind: kindNumber, text: n.String()}, "", true
	}
	sign, digits := splitSign(text)
	if digits == "" || !allDigits(digits) {
		return scalar{}, "", false
	}
	if len(digits) > 1 && digits[0] == '0' {
		return scalar{}, ruleLeadingZero, true
	}
	if sign == "-" {
		return scalar{kind: kindNumber, text: "-" + digits}, "", true
	}
	return scalar{kind: kindNumber, text: digits}, "", true
}

// coreFloat resolves text if it has the form of a core-schema float,
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, into a JSON number
// literal with the same decimal value, derived from the text and never from
// a float64, so that no digit is lost: a plus sign is dropped, a missing
// integer part becomes 0 (.5 → 0.5), a missing fraction after a dot becomes
// 0 (1. → 1.0), and the digits and exponent are kept as written (1.50 stays
// 1.50, 1E+3 stays 1E+3). ok is false for any other text.
//
// An integer part with a leading zero (01.5) is refused, as for integers.
func coreFloat(text string) (num scalar, rule string, ok bool) {
	sign, rest := splitSign(text)
	mantissa, exp := rest, ""
	if i := strings.IndexAny(rest, "eE"); i >= 0 {
		mantissa, exp = rest[:i], rest[i:]
		e := exp[1:]
		if e != "" && (e[0] == '+' || e[0] == '-') {
			e = e[1:]
		}
		if e == "" || !allDigits(e) {
			return scalar{}, "", false
		}
	}
	intPart, frac, hasDot := strings.Cut(mantissa, ".")
	if !allDigits(intPart) || !allDigits(frac) {
		return scalar{}, "", false
	}
	if intPart == "" && frac == "" {
		return scalar{}, "", false // ".", "e5", ".e5"
	}
	if intPart == "" && !hasDot {
		return scalar{}, "", false
	}
	if len(intPart) > 1 && intPart[0] == '0' {
		return scalar{}, ruleLeadingZero, true
	}
	var b strings.Builder
	if sign == "-" {
		b.WriteByte('-')
	}
	if intPart == "" {
		intPart = "0"
	}
	b.WriteString(intPart)
	if hasDot {
		if frac == "" {
			frac = "0"
		}
		b.WriteByte('.')
		b.WriteString(frac)
	}
	b.WriteString(exp)
	return scalar{kind: kindNumber, text: b.String()}, "", true
}

// splitSign splits a leading + or - from text.
func splitSign(text string) (sign, rest string) {
	if text != "" && (text[0] == '+' || text[0] == '-') {
		return text[:1], text[1:]
	}
	return "", text
}

// allDigits reports whether s is made only of ASCII decimal digits; the
// empty string qualifies.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// digitValue is the value of an ASCII hexadecimal digit, or 99.
func digitValue(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return 99
}

// appendJSONString appends s to dst as a JSON string. The caller has checked
// that s is valid UTF-8. It escapes what JSON requires (quote, reverse
// solidus, C0 controls), using the short forms where JSON has them as RFC
// 8785 does, and also the characters YAML does not allow in its text (DEL,
// C1 controls but NEL, U+FEFF, U+FFFE and U+FFFF) as \uXXXX, so that the
// output is itself a YAML document Convert accepts, and so that no
// invisible character reaches a terminal raw. The value is the same either
// way; the JSON layer's canonical form decides the signed bytes.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x7F {
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= 0x7F {
			r, size = utf8.DecodeRuneInString(s[i:])
			if isPrintable(r) && r != '\uFEFF' {
				i += size
				continue
			}
		}
		dst = append(dst, s[start:i]...)
		switch r {
		case '"', '\\':
			dst = append(dst, '\\', byte(r))
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
