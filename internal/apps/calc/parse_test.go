package calc

import (
	"errors"
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"123 + 456 * 2", "1035"},
		{"0.1+0.2", "0.3"},
		{"0.1 + 0.2 - 0.3", "0"},
		{"1/3", "0.333333333333"},
		{"2/3", "0.666666666667"},
		{"-2/3", "-0.666666666667"},
		{"1/3*3", "1"},
		{"10/4", "2.5"},
		{"(1+2)*3", "9"},
		{"1+2*3", "7"},
		{"2*3+1", "7"},
		{"8-3-2", "3"},
		{"64/4/2", "8"},
		{"2^3^2", "512"},
		{"(2^3)^2", "64"},
		{"-2^2", "-4"},
		{"(-2)^2", "4"},
		{"(-2)^3", "-8"},
		{"2^-1", "0.5"},
		{"2^-2^2", "0.0625"},
		{"(1/2)^-3", "8"},
		{"0^0", "1"},
		{"0^5", "0"},
		{"1^100000000000", "1"},
		{"(-1)^100000000001", "-1"},
		{"(-1)^100000000000", "1"},
		{"2^4095 - 2^4095", "0"},
		{"7 % 3", "1"},
		{"-7 % 3", "-1"},
		{"7 % -3", "1"},
		{"5.5 % 2", "1.5"},
		{"+5", "5"},
		{"--5", "5"},
		{"- - -5", "-5"},
		{"+-+5", "-5"},
		{"2*-3", "-6"},
		{".5", "0.5"},
		{"1.", "1"},
		{"1.50", "1.5"},
		{"007", "7"},
		{"1e3", "1000"},
		{"1E3", "1000"},
		{"1e+3", "1000"},
		{"1.5e-3", "0.0015"},
		{".5e1", "5"},
		{"1e-13", "0"},
		{"-1e-13", "0"},
		{"0.0000000000005", "0.000000000001"},
		{"0.9999999999996", "1"},
		{" \t\r\n 1 \n+\t2 ", "3"},
		{"((((((1))))))", "1"},
		{"100000000000000000000 * 100000000000000000000", "10000000000000000000000000000000000000000"},
		{"1e299 * 9", "9" + strings.Repeat("0", 299)},
		{"-(3)", "-3"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			v, err := evaluate(tt.expr)
			if err != nil {
				t.Fatalf("evaluate = %v", err)
			}
			if got := format(v); got != tt.want {
				t.Fatalf("= %s, want %s", got, tt.want)
			}
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	deep := strings.Repeat("(", MaxDepth+1) + "1" + strings.Repeat(")", MaxDepth+1)
	tests := []struct{ expr, want string }{
		{"", "the expression is empty"},
		{"   \t\n", "the expression is empty"},
		{strings.Repeat("1", MaxExpressionBytes+1), "longer than 1024 bytes"},
		{"1/0", "division by zero at 2"},
		{"1 / (2-2)", "division by zero at 3"},
		{"5 % 0", "division by zero at 3"},
		{"0^-1", "division by zero at 2"},
		{"(1+2", "unbalanced parenthesis at 1"},
		{"1+2)", "unbalanced parenthesis at 4"},
		{"((1)", "unbalanced parenthesis at 1"},
		{")", "expected a number or ( at 1"},
		{"()", "expected a number or ( at 2"},
		{"1+", "unexpected end of expression at 3"},
		{"1 +", "unexpected end of expression at 4"},
		{"-", "unexpected end of expression at 2"},
		{"2^", "unexpected end of expression at 3"},
		{"1 2", "expected an operator at 3"},
		{"2(3)", "expected an operator at 2"},
		{"(1 2)", "expected an operator or ) at 4"},
		{"1 * * 2", "expected a number or ( at 5"},
		{"1a", "unexpected character at 2"},
		{"x", "unexpected character at 1"},
		{"0x10", "unexpected character at 2"},
		{"sqrt(4)", "unexpected character at 1"},
		{"1;2", "unexpected character at 2"},
		{"1,5", "unexpected character at 2"},
		{"1 ＋ 2", "unexpected character at 3"},      // fullwidth plus
		{"1\u00a0+ 2", "unexpected character at 2"}, // no-break space
		{"1\x00", "unexpected character at 2"},
		{"1**2", "expected a number or ( at 3"},
		{"Infinity", "unexpected character at 1"},
		{"NaN", "unexpected character at 1"},
		{".", "malformed number at 1"},
		{"1.2.3", "malformed number at 1"},
		{"1e", "malformed number at 1"},
		{"1e+", "malformed number at 1"},
		{"..5", "malformed number at 1"},
		{"1e1001", "number too large at 1"},
		{"1e99999999999999999999999", "number too large at 1"},
		{"1e-1001", "number too small at 1"},
		{"2^0.5", "the exponent must be an integer at 2"},
		{"2^4096", "number too large at 2"},
		{"9^9^9", "number too large at 2"},
		{"2^(10^100)", "number too large at 2"},
		{"2^-(10^100)", "number too large at 2"},
		{"3^3000", "number too large at 2"},
		{"(2^4000)*(2^4000)", "number too large at 9"},
		{"1/(2^4000)/(2^4000)", "number too small or too precise at 11"},
		{"1e300", "the result has more than 300 integer digits"},
		{"-1e300", "the result has more than 300 integer digits"},
		{deep, "too deeply nested (more than 64 levels) at 65"},
		{strings.Repeat("-", 100) + "1", "too deeply nested (more than 64 levels) at 65"},
		{"2" + strings.Repeat("^2", 100), "too deeply nested (more than 64 levels) at 129"},
	}
	for _, tt := range tests {
		name := tt.expr
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			v, err := evaluate(tt.expr)
			var ee *ExprError
			if !errors.As(err, &ee) {
				t.Fatalf("evaluate = %v, %v; want an *ExprError", v, err)
			}
			if ee.Error() != tt.want {
				t.Fatalf("error = %q, want %q", ee.Error(), tt.want)
			}
		})
	}
}

// The most expensive expressions that fit the limits finish, and are refused or computed.
func TestEvaluateWorstCases(t *testing.T) {
	exprs := []string{
		strings.Repeat("9", MaxExpressionBytes),
		"1/" + strings.Repeat("7", MaxExpressionBytes-2),
		strings.Repeat("(2^4095)*", 100) + "1",
		strings.Repeat("1/3/", 200) + "1",
		strings.Repeat("3^-2^2*", 120) + "1",
		strings.Repeat("0.000000001+", 80) + "1",
		"1e1000/1e-1000",
	}
	for _, e := range exprs {
		if len(e) > MaxExpressionBytes {
			e = e[:MaxExpressionBytes]
		}
		_, _ = evaluate(e)
	}
}

// BenchmarkEvaluateWorst runs expressions near every limit: the longest literal, powers at
// the bit bound, and long chains of divisions whose gcds work on numbers of MaxBits.
func BenchmarkEvaluateWorst(b *testing.B) {
	exprs := map[string]string{
		"literal":   strings.Repeat("9", MaxExpressionBytes),
		"powers":    strings.Repeat("2^4095/3^2583+", 73)[:MaxExpressionBytes-2] + "1",
		"divisions": "(2^4095-1)" + strings.Repeat("/(3^2583+1)*(3^2583+1)", 45),
		"precision": strings.Repeat("1/7^1459+", 113) + "1",
		"decimals":  strings.Repeat("1e1000/1e999-", 78) + "1",
	}
	for name, e := range exprs {
		if len(e) > MaxExpressionBytes {
			b.Fatalf("%s: %d bytes", name, len(e))
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				_, _ = evaluate(e)
			}
		})
	}
}
