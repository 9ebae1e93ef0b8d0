package jcs

// AppendIndent appends v to dst as JSON for people to read: two spaces of
// indent per level, object members in the order received (not canonical
// order), numbers as their literal Num as received, and strings escaped as
// in the canonical form. It writes no final newline. It is for showing a
// signed document, never for what is signed: nothing written by it is
// checked against a signature.
//
// It does not fail. For a Value built by hand, a Number whose Num is not a
// JSON number literal is written from Float by FormatNumber, or as null if
// Float is not finite; invalid UTF-8 in strings is written as U+FFFD; and
// arrays and objects nested deeper than MaxDepthCeiling (a Value that
// contains itself) are written as null.
func (v Value) AppendIndent(dst []byte) []byte {
	return appendIndent(dst, &v, 0)
}

func appendIndent(dst []byte, v *Value, depth int) []byte {
	switch v.Kind {
	case Bool:
		if v.Bool {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Number:
		if isNumberLiteral(v.Num) {
			return append(dst, v.Num...)
		}
		if out, err := appendNumber(dst, v.Float); err == nil {
			return out
		}
		return append(dst, "null"...)
	case String:
		dst, _ = appendString(dst, v.Str, false)
		return dst
	case Array:
		if depth >= MaxDepthCeiling {
			break
		}
		if len(v.Items) == 0 {
			return append(dst, "[]"...)
		}
		dst = append(dst, '[')
		for i := range v.Items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, depth+1)
			dst = appendIndent(dst, &v.Items[i], depth+1)
		}
		dst = newline(dst, depth)
		return append(dst, ']')
	case Object:
		if depth >= MaxDepthCeiling {
			break
		}
		if len(v.Members) == 0 {
			return append(dst, "{}"...)
		}
		dst = append(dst, '{')
		for i := range v.Members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, depth+1)
			dst, _ = appendString(dst, v.Members[i].Name, false)
			dst = append(dst, ':', ' ')
			dst = appendIndent(dst, &v.Members[i].Value, depth+1)
		}
		dst = newline(dst, depth)
		return append(dst, '}')
	}
	return append(dst, "null"...) // Null, and any undefined Kind
}

func newline(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, ' ', ' ')
	}
	return dst
}

// isNumberLiteral reports whether s is a number in RFC 8259 grammar, so that
// AppendIndent never writes a hand-set Num that would make invalid JSON.
func isNumberLiteral(s string) bool {
	end, rule := scanNumber(s, 0)
	return rule == "" && end == len(s)
}
