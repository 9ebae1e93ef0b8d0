package jcs

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

// TestFormatNumberAppendixB is the table of RFC 8785 Appendix B: IEEE 754
// bit patterns and the string ECMAScript writes for each.
func TestFormatNumberAppendixB(t *testing.T) {
	tests := []struct {
		bits uint64
		want string // "" means FormatNumber must fail
	}{
		{0x0000000000000000, "0"}, // zero
		{0x8000000000000000, "0"}, // minus zero
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x7fffffffffffffff, ""}, // NaN
		{0x7ff0000000000000, ""}, // Infinity
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"}, // round to even
		// Beyond the RFC's table.
		{0xfff0000000000000, ""},                        // -Infinity
		{0xfff8000000000001, ""},                        // a negative NaN
		{0x3ff0000000000000, "1"},                       // 1
		{0x3ff8000000000000, "1.5"},                     // 1.5
		{0x3fb999999999999a, "0.1"},                     // 0.1
		{0x3e7ad7f29abcaf48, "1e-7"},                    // 1e-7
		{0x0010000000000000, "2.2250738585072014e-308"}, // smallest normal
	}
	for _, tt := range tests {
		t.Run(strconv.FormatUint(tt.bits, 16), func(t *testing.T) {
			got, err := FormatNumber(math.Float64frombits(tt.bits))
			if tt.want == "" {
				if !errors.Is(err, ErrNonFinite) {
					t.Fatalf("got %q, %v; want ErrNonFinite", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestFormatNumberLayout(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{100, "100"},
		{123e18, "123000000000000000000"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1.5e21, "1.5e+21"},
		{-1e21, "-1e+21"},
		{12.5, "12.5"},
		{0.5, "0.5"},
		{0.00012, "0.00012"},
		{1e-6, "0.000001"},
		{1.5e-7, "1.5e-7"},
		{-1.5e-7, "-1.5e-7"},
		{1e300, "1e+300"},
		{123456789, "123456789"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got, err := FormatNumber(tt.f); err != nil || got != tt.want {
				t.Fatalf("FormatNumber(%v) = %q, %v; want %q", tt.f, got, err, tt.want)
			}
		})
	}
}

func TestExactNumbers(t *testing.T) {
	accept := []string{
		"0", "-0", "0.0", "-0.000e9999", "0e-99999999999999999999",
		"1", "1.0", "1.5", "1e2", "1E+2", "100e-2", "0.1", "0.10", "-0.1",
		"9007199254740992", "-9007199254740992", "9007199254740991",
		"1e+23", "100000000000000000000000", "295147905179352830000",
		"333333333.3333333", "1.7976931348623157e308", "5e-324",
		"2.2250738585072014e-308", "123456789012345680000",
	}
	refuse := []string{
		"9007199254740993", "1.00000000000000001", "1.0000000000000001",
		"0.10000000000000001", "123456789012345678901234567890",
		"295147905179352825856", "1000000000000000128", "333333333.33333329",
		"1e-400", "-1e-400", "4.9406564584124654e-324", "2e-324",
		"0.30000000000000000000000000000000000000000000000000000001",
	}
	exact := &Options{ExactNumbers: true}
	for _, lit := range accept {
		t.Run("accept/"+lit, func(t *testing.T) {
			v, err := Parse([]byte(lit), exact)
			if err != nil {
				t.Fatalf("Parse(%s): %v", lit, err)
			}
			if v.Kind != Number || v.Num != lit {
				t.Fatalf("got %+v", v)
			}
			if f, _ := strconv.ParseFloat(lit, 64); v.Float != f {
				t.Fatalf("Float = %v, want %v", v.Float, f)
			}
		})
	}
	for _, lit := range refuse {
		t.Run("refuse/"+lit, func(t *testing.T) {
			doc := `{"a":[` + lit + `]}`
			_, err := Parse([]byte(doc), exact)
			if !errors.Is(err, ErrPrecision) {
				t.Fatalf("Parse(%s) = %v, want ErrPrecision", lit, err)
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.Path != "a[0]" || se.Offset != 6 {
				t.Fatalf("err = %#v, want path a[0] at offset 6", err)
			}
			// Without ExactNumbers the same literal is fine.
			if _, err := Parse([]byte(doc), nil); err != nil {
				t.Fatalf("without ExactNumbers: %v", err)
			}
		})
	}
}

// TestNonFinite checks that overflow is refused in every mode.
func TestNonFinite(t *testing.T) {
	for _, lit := range []string{"1e400", "-1e400", "1e309", "1.8e308", "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792", "1e99999999999999999999999"} {
		for _, exact := range []bool{false, true} {
			t.Run(lit[:min(len(lit), 20)]+"/exact="+strconv.FormatBool(exact), func(t *testing.T) {
				_, err := Parse([]byte(lit), &Options{ExactNumbers: exact})
				if !errors.Is(err, ErrNonFinite) {
					t.Fatalf("got %v, want ErrNonFinite", err)
				}
			})
		}
	}
	// The largest double is finite.
	if _, err := Parse([]byte("1.7976931348623157e308"), nil); err != nil {
		t.Fatal(err)
	}
}
