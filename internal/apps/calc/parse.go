package calc

import (
	"math/big"
	"strconv"
	"strings"
)

// ExprError is a problem with an expression: the rule it breaks and where, as a 1-based byte
// position (0 when the problem has no position, as for an empty expression). It never holds
// the expression's text.
type ExprError struct {
	Pos     int
	Problem string
}

// Error returns the problem and its position, such as "division by zero at 4".
func (e *ExprError) Error() string {
	if e.Pos == 0 {
		return e.Problem
	}
	return e.Problem + " at " + strconv.Itoa(e.Pos)
}

// The grammar, loosest binding first. ^ binds tighter than a sign, so -2^2 is -4, and is
// right-associative, so 2^3^2 is 2^9; its exponent may carry a sign, as in 2^-1.
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("+" | "-") unary | power
//	power   = primary [ "^" unary ]
//	primary = number | "(" expr ")"
//	number  = digits [ "." [digits] ] [ exponent ] | "." digits [ exponent ]
//	exponent = ("e" | "E") [ "+" | "-" ] digits
//
// Whitespace (space, tab, CR, LF) may stand between tokens.

// evaluate parses and computes expr exactly. Its errors are *ExprError.
func evaluate(expr string) (*big.Rat, error) {
	if len(expr) > MaxExpressionBytes {
		return nil, &ExprError{Problem: "longer than " + strconv.Itoa(MaxExpressionBytes) + " bytes"}
	}
	p := &parser{src: expr}
	p.space()
	if p.pos == len(p.src) {
		return nil, &ExprError{Problem: "the expression is empty"}
	}
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.src) {
		if p.src[p.pos] == ')' {
			return nil, p.fail("unbalanced parenthesis")
		}
		return nil, p.unexpected("expected an operator")
	}
	if tooManyDigits(v) {
		return nil, &ExprError{Problem: "the result has more than " + strconv.Itoa(MaxResultDigits) + " integer digits"}
	}
	return v, nil
}

type parser struct {
	src   string
	pos   int // byte offset of the next unread byte
	depth int
}

// fail returns an error at the current position.
func (p *parser) fail(problem string) *ExprError { return p.failAt(p.pos, problem) }

func (p *parser) failAt(pos int, problem string) *ExprError {
	return &ExprError{Pos: pos + 1, Problem: problem}
}

// unexpected reports the byte at pos: a byte no expression may hold is an unexpected
// character, one that is merely misplaced breaks the rule given.
func (p *parser) unexpected(rule string) *ExprError {
	if p.pos >= len(p.src) {
		return p.fail("unexpected end of expression")
	}
	switch c := p.src[p.pos]; {
	case isDigit(c), c == '.', c == '+', c == '-', c == '*', c == '/', c == '%', c == '^', c == '(', c == ')':
		return p.fail(rule)
	}
	return p.fail("unexpected character")
}

func (p *parser) space() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace, or 0 at the end.
func (p *parser) peek() byte {
	p.space()
	if p.pos == len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *parser) expr() (*big.Rat, error) {
	return p.left(p.term, "+-", func(op byte, a, b *big.Rat, _ int) (*big.Rat, error) {
		if op == '+' {
			return new(big.Rat).Add(a, b), nil
		}
		return new(big.Rat).Sub(a, b), nil
	})
}

func (p *parser) term() (*big.Rat, error) {
	return p.left(p.unary, "*/%", func(op byte, a, b *big.Rat, at int) (*big.Rat, error) {
		switch {
		case op == '*':
			return new(big.Rat).Mul(a, b), nil
		case b.Sign() == 0:
			return nil, p.failAt(at, "division by zero")
		case op == '/':
			return new(big.Rat).Quo(a, b), nil
		}
		return rem(a, b), nil
	})
}

// left parses one left-associative level of the grammar: operands read by operand, joined
// by any of the operators in ops, each applied by apply as it comes (which may refuse, as a
// division by zero, at the operator's position at) and every partial result bounded.
func (p *parser) left(operand func() (*big.Rat, error), ops string, apply func(op byte, a, b *big.Rat, at int) (*big.Rat, error)) (*big.Rat, error) {
	v, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		op := p.peek()
		if op == 0 || strings.IndexByte(ops, op) < 0 {
			return v, nil
		}
		at := p.pos
		p.pos++
		r, err := operand()
		if err != nil {
			return nil, err
		}
		if v, err = apply(op, v, r, at); err != nil {
			return nil, err
		}
		if err := p.bounded(v, at); err != nil {
			return nil, err
		}
	}
}

// rem is a - b*trunc(a/b): the remainder takes the sign of a, as in Go and C, and is exact for
// fractions too (5.5 % 2 is 1.5).
func rem(a, b *big.Rat) *big.Rat {
	q := new(big.Rat).Quo(a, b)
	t := new(big.Int).Quo(q.Num(), q.Denom()) // truncates toward zero
	bt := new(big.Rat).Mul(b, new(big.Rat).SetInt(t))
	return new(big.Rat).Sub(a, bt)
}

// unary is where every recursion of the grammar passes, so it alone counts the depth.
func (p *parser) unary() (*big.Rat, error) {
	c := p.peek()
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > MaxDepth {
		return nil, p.fail("too deeply nested (more than " + strconv.Itoa(MaxDepth) + " levels)")
	}
	if c == '+' || c == '-' {
		p.pos++
		v, err := p.unary()
		if err != nil {
			return nil, err
		}
		if c == '-' {
			v = new(big.Rat).Neg(v)
		}
		return v, nil
	}
	return p.power()
}

func (p *parser) power() (*big.Rat, error) {
	b, err := p.primary()
	if err != nil {
		return nil, err
	}
	if p.peek() != '^' {
		return b, nil
	}
	at := p.pos
	p.pos++
	e, err := p.unary()
	if err != nil {
		return nil, err
	}
	return p.pow(b, e, at)
}

// pow computes b^e for an integer e, refusing before any work a result beyond MaxBits.
func (p *parser) pow(b, e *big.Rat, at int) (*big.Rat, error) {
	if !e.IsInt() {
		return nil, p.failAt(at, "the exponent must be an integer")
	}
	n := e.Num() // e is an integer: its denominator is 1
	switch {
	case b.Sign() == 0:
		switch n.Sign() {
		case 0:
			return big.NewRat(1, 1), nil // 0^0 is 1, as in most calculators
		case -1:
			return nil, p.failAt(at, "division by zero")
		}
		return new(big.Rat), nil
	case b.IsInt() && b.Num().IsInt64() && (b.Num().Int64() == 1 || b.Num().Int64() == -1):
		if b.Num().Int64() == -1 && n.Bit(0) == 1 {
			return big.NewRat(-1, 1), nil
		}
		return big.NewRat(1, 1), nil
	}
	// |b| is neither 0 nor 1, so its numerator or its denominator has at least 2 bits, and
	// raising it to |n| gives that part at least (bits-1)*|n|+1 bits.
	if n.CmpAbs(big.NewInt(MaxPowerExponent)) > 0 {
		return nil, p.failAt(at, "number too large")
	}
	k := new(big.Int).Abs(n).Int64()
	grow := max(b.Num().BitLen(), b.Denom().BitLen()) - 1
	if int64(grow)*k >= MaxBits {
		return nil, p.failAt(at, "number too large")
	}
	num := new(big.Int).Exp(b.Num(), big.NewInt(k), nil)
	den := new(big.Int).Exp(b.Denom(), big.NewInt(k), nil)
	if n.Sign() < 0 {
		num, den = den, num
	}
	v := new(big.Rat).SetFrac(num, den)
	if err := p.bounded(v, at); err != nil {
		return nil, err
	}
	return v, nil
}

func (p *parser) primary() (*big.Rat, error) {
	c := p.peek()
	switch {
	case c == '(':
		open := p.pos
		p.pos++
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		switch p.peek() {
		case ')':
			p.pos++
			return v, nil
		case 0:
			return nil, p.failAt(open, "unbalanced parenthesis")
		}
		return nil, p.unexpected("expected an operator or )")
	case isDigit(c) || c == '.':
		return p.number()
	}
	return nil, p.unexpected("expected a number or (")
}

// number reads a decimal literal exactly: "1.5" is 3/2, never a binary float.
func (p *parser) number() (*big.Rat, error) {
	start := p.pos
	var digits []byte
	intDigits := 0
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		digits = append(digits, p.src[p.pos])
		p.pos++
		intDigits++
	}
	frac := 0
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			digits = append(digits, p.src[p.pos])
			p.pos++
			frac++
		}
	}
	if intDigits+frac == 0 {
		return nil, p.failAt(start, "malformed number")
	}
	exp := 0
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		neg := false
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			neg = p.src[p.pos] == '-'
			p.pos++
		}
		if p.pos == len(p.src) || !isDigit(p.src[p.pos]) {
			return nil, p.failAt(start, "malformed number")
		}
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			if exp <= MaxDecimalExponent { // stop growing once out of range: no overflow
				exp = exp*10 + int(p.src[p.pos]-'0')
			}
			p.pos++
		}
		if exp > MaxDecimalExponent {
			if neg {
				return nil, p.failAt(start, "number too small")
			}
			return nil, p.failAt(start, "number too large")
		}
		if neg {
			exp = -exp
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == '.' || isDigit(p.src[p.pos])) {
		return nil, p.failAt(start, "malformed number")
	}
	m, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return nil, p.failAt(start, "malformed number")
	}
	scale := exp - frac
	pow10 := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(scale))), nil)
	v := new(big.Rat)
	if scale >= 0 {
		v.SetInt(m.Mul(m, pow10))
	} else {
		v.SetFrac(m, pow10)
	}
	if err := p.bounded(v, start); err != nil {
		return nil, err
	}
	return v, nil
}

// bounded refuses a number whose numerator or denominator is beyond MaxBits.
func (p *parser) bounded(v *big.Rat, at int) error {
	if v.Num().BitLen() > MaxBits {
		return p.failAt(at, "number too large")
	}
	if v.Denom().BitLen() > MaxBits {
		return p.failAt(at, "number too small or too precise")
	}
	return nil
}

// maxResult is 10^MaxResultDigits: a result's magnitude stays below it.
var maxResult = new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(MaxResultDigits), nil))

func tooManyDigits(v *big.Rat) bool { return new(big.Rat).Abs(v).Cmp(maxResult) >= 0 }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// format writes v in decimal: an integer without a fraction, anything else rounded to
// FractionDigits digits after the point, half away from zero, trailing zeros trimmed. A value
// that rounds to zero is "0", never "-0".
func format(v *big.Rat) string {
	if v.IsInt() {
		return v.Num().String()
	}
	s := v.FloatString(FractionDigits)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	s = trimSuffix(s, '.')
	if s == "-0" {
		return "0"
	}
	return s
}

func trimSuffix(s string, c byte) string {
	if len(s) > 0 && s[len(s)-1] == c {
		return s[:len(s)-1]
	}
	return s
}
