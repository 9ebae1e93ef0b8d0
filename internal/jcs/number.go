package jcs

import (
	"math"
	"strconv"
)

// FormatNumber writes f as ECMAScript's Number.prototype.toString does,
// which is the number form of RFC 8785 §3.2.2.3: the shortest digits that
// read back as f, without an exponent from 1e-6 up to but not including
// 1e21, and -0 written as 0. It returns ErrNonFinite for a NaN or an
// infinity, which JSON cannot express.
func FormatNumber(f float64) (string, error) {
	var buf [32]byte
	b, err := appendNumber(buf[:0], f)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// appendNumber is FormatNumber appending to dst. strconv supplies the
// shortest round-trip digits (the same digits ECMAScript's algorithm
// chooses, including its tie to the even digit) and this lays them out by
// the rules of ECMA-262 Number::toString.
func appendNumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, ErrNonFinite
	}
	if f == 0 {
		return append(dst, '0'), nil // also -0
	}
	// Integers of up to 53 bits, most numbers in signed documents, have
	// the digits of their int64 and no exponent (they are below 1e21).
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return strconv.AppendInt(dst, int64(f), 10), nil
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// 'e' gives d[.ddd]e±xx: the digits and the decimal exponent.
	var ebuf [32]byte
	e := strconv.AppendFloat(ebuf[:0], f, 'e', -1, 64)
	var digits [maxExactDigits + 1]byte
	k := 0
	i := 0
	for ; e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[k] = e[i]
			k++
		}
	}
	exp := 0
	for _, c := range e[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		exp = -exp
	}
	// In ECMA-262's terms the value is 0.d1d2…dk × 10^n.
	n := exp + 1
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits[:k]...)
		for j := k; j < n; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:k]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := n; j < 0; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits[:k]...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:k]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst, nil
}

// exactLiteral reports whether the number literal lit, which reads as f,
// denotes exactly the decimal that is the shortest round-trip form of f. It
// compares exact decimal values, never rounded ones, so no literal can pass
// by rounding to a neighbour: a literal passes only when it carries no more
// precision than the double keeps.
func exactLiteral(lit string, f float64) bool {
	var a, b decimal
	if !readDecimal(&a, lit) {
		return false
	}
	var buf [32]byte
	if !readDecimal(&b, strconv.AppendFloat(buf[:0], f, 'e', -1, 64)) {
		return false // cannot happen: a double needs at most 17 digits
	}
	if a.n == 0 || b.n == 0 {
		return a.n == b.n // zero equals zero whatever its sign
	}
	return a.neg == b.neg && a.exp == b.exp && a.digits == b.digits
}

// decimal is an exact decimal value digits × 10^exp, with no leading or
// trailing zero in digits; n == 0 is zero.
type decimal struct {
	neg    bool
	n      int
	digits [maxExactDigits]byte
	exp    int64
}

// readDecimal sets d from a number in JSON grammar (also strconv's 'e'
// output). It returns false if the value has more than maxExactDigits
// significant digits, which no shortest round-trip form has.
func readDecimal[T string | []byte](d *decimal, s T) bool {
	*d = decimal{}
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	frac := int64(0)  // digits after the point
	zeros := int64(0) // zeros after the last nonzero digit, not yet kept
	point := false
	for ; i < len(s) && s[i] != 'e' && s[i] != 'E'; i++ {
		c := s[i]
		if c == '.' {
			point = true
			continue
		}
		if point {
			frac++
		}
		if c == '0' {
			if d.n > 0 {
				zeros++
			}
			continue
		}
		if int64(d.n)+zeros+1 > maxExactDigits {
			return false
		}
		for ; zeros > 0; zeros-- {
			d.digits[d.n] = '0'
			d.n++
		}
		d.digits[d.n] = c
		d.n++
	}
	var exp int64
	if i < len(s) {
		i++ // 'e'
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		for ; i < len(s); i++ {
			// Past 1e12 the exponent is certain to overflow or underflow
			// a double; clamping keeps the sum below from overflowing.
			if exp < 1e12 {
				exp = exp*10 + int64(s[i]-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	d.exp = exp - frac + zeros
	return true
}
