package calc

import (
	"errors"
	"strings"
	"testing"
)

// FuzzEvaluate checks that no input panics, that every error is an *ExprError whose position
// lies within the input, that every result stays within the limits, and that a displayed
// result reads back as itself.
func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{
		"123 + 456 * 2", "0.1+0.2", "1/3", "2^3^2", "-2^-2", "(1+2)*3%4", ".5e1", "1e-1000",
		"9^9^9", "2^4095", "1/0", "((1)", "1+2)", "1e", "1.2.3", "x", "0x10", "(((((((1)))))))",
		strings.Repeat("-", 70) + "1", "1 ＋ 2", "\xff", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := evaluate(expr)
		if err != nil {
			var ee *ExprError
			if !errors.As(err, &ee) {
				t.Fatalf("error %v is not an *ExprError", err)
			}
			if ee.Pos < 0 || ee.Pos > len(expr)+1 {
				t.Fatalf("position %d outside 0..%d", ee.Pos, len(expr)+1)
			}
			return
		}
		if v.Num().BitLen() > MaxBits || v.Denom().BitLen() > MaxBits || tooManyDigits(v) {
			t.Fatalf("result beyond the limits")
		}
		shown := format(v)
		back, err := evaluate(shown)
		if err != nil {
			t.Fatalf("display %q does not read back: %v", shown, err)
		}
		if again := format(back); again != shown {
			t.Fatalf("display %q reads back as %q", shown, again)
		}
	})
}
