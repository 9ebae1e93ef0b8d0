package calc

// Limits on what one expression may cost. Each bounds the memory and time an agent's input can
// take; none is close to what a person types into a calculator.
const (
	// MaxExpressionBytes bounds the expression: a long formula is a few hundred bytes.
	MaxExpressionBytes = 1024

	// MaxDepth bounds the parser's recursion: parentheses, signs and powers nested in one
	// another. A person rarely nests more than five deep.
	MaxDepth = 64

	// MaxBits bounds the numerator and the denominator of every number the parser holds,
	// literals and intermediate results alike (4096 bits is about 1233 decimal digits). It
	// keeps each multiplication, division and gcd a few microseconds.
	MaxBits = 4096

	// MaxPowerExponent bounds the exponent of ^ for any base other than 0, 1 and -1; with
	// MaxBits it stops a power such as 9^9^9 before it is computed.
	MaxPowerExponent = MaxBits

	// MaxDecimalExponent bounds the exponent of a literal written as 1e300.
	MaxDecimalExponent = 1000

	// MaxResultDigits bounds the integer digits of a result, so that it is a JSON number every
	// client can read as a double (whose largest value is about 1.8e308).
	MaxResultDigits = 300

	// FractionDigits is how many digits after the decimal point a result shows, rounded half
	// away from zero, trailing zeros trimmed.
	FractionDigits = 12
)
