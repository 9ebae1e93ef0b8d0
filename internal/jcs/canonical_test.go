package jcs

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVectors checks the published RFC 8785 examples and the reference
// implementation's test data byte for byte.
func TestVectors(t *testing.T) {
	type vector struct{ name, in, out string }
	vectors := []vector{
		{"rfc8785/values", "testdata/rfc8785/values.input.json", "testdata/rfc8785/values.output.json"},
		{"rfc8785/sorting", "testdata/rfc8785/sorting.input.json", "testdata/rfc8785/sorting.output.json"},
	}
	inputs, err := filepath.Glob("testdata/cyberphone/input/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 6 {
		t.Fatalf("found %d cyberphone inputs, want 6", len(inputs))
	}
	for _, in := range inputs {
		base := filepath.Base(in)
		vectors = append(vectors, vector{"cyberphone/" + base, in, filepath.Join("testdata/cyberphone/output", base)})
	}
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			in, err := os.ReadFile(v.in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(v.out)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonicalize(in)
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("canonical form differs\n got: %q\nwant: %q", got, want)
			}
			// The canonical form is its own canonical form.
			again, err := Canonicalize(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("not idempotent: %q, %v", again, err)
			}
		})
	}
}

func TestCanonicalize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"null", `null`, `null`},
		{"true", ` true `, `true`},
		{"false", "\t\r\nfalse\n", `false`},
		{"empty array", `[ ]`, `[]`},
		{"empty object", `{ }`, `{}`},
		{"empty string", `""`, `""`},
		{"minus zero", `-0`, `0`},
		{"minus zero float", `-0.0e10`, `0`},
		{"exponent", `1E2`, `100`},
		{"big integer", `1e21`, `1e+21`},
		{"just below 1e21", `999999999999999900000`, `999999999999999900000`},
		{"small", `0.0000001`, `1e-7`},
		{"1e-6", `0.000001`, `0.000001`},
		{"underflow reads as zero", `1e-400`, `0`},
		{"negative underflow", `-1e-400`, `0`},
		{"rounds to even", `9007199254740993`, `9007199254740992`},
		{"nested sort", `{"b":{"z":1,"a":2},"a":[{"y":1,"x":2}]}`, `{"a":[{"x":2,"y":1}],"b":{"a":2,"z":1}}`},
		{"prefix sorts first", `{"ab":1,"a":2}`, `{"a":2,"ab":1}`},
		{"short escapes", `"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{"other controls", `"\u0000\u0001\u001f\u000B"`, `"\u0000\u0001\u001f\u000b"`},
		{"escaped quote and backslash", `"\"\\"`, `"\"\\"`},
		{"solidus unescaped", `"\/"`, `"/"`},
		{"DEL literal", `"\u007f"`, "\"\x7f\""},
		{"U+2028 literal", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"non-ASCII literal", `"\u00e9\u4e2d"`, `"é中"`},
		{"surrogate pair", `"\uD83D\uDE00"`, `"😀"`},
		{"raw UTF-8 kept", `"é😀"`, `"é😀"`},
		{"escaped U+FFFD", `"\ufffd"`, "\"\ufffd\""},
		{"BOM inside string", "\"\ufeff\"", "\"\ufeff\""},
		// U+10000 sorts before U+E000 as UTF-16 (D800 DC00 < E000) but
		// after it as UTF-8 bytes (F0 < EE is false).
		{"utf16 order", "{\"\ue000\":1,\"\U00010000\":2}", "{\"\U00010000\":2,\"\ue000\":1}"},
		{"utf16 order reversed input", "{\"\U00010000\":2,\"\ue000\":1}", "{\"\U00010000\":2,\"\ue000\":1}"},
		{"utf16 order same lead", "{\"a\uffff\":1,\"a\U0010ffff\":2,\"a\U00010000\":3}", "{\"a\U00010000\":3,\"a\U0010ffff\":2,\"a\uffff\":1}"},
		{"escaped and literal names differ", `{"\u00e9":1,"e":2}`, `{"e":2,"é":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatalf("Canonicalize(%q): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Fatalf("Canonicalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestLargeObjectSort covers objects past the linear duplicate scan and
// the sort of a long member list.
func TestLargeObjectSort(t *testing.T) {
	var in, want strings.Builder
	in.WriteByte('{')
	want.WriteByte('{')
	const n = 300
	for i := n - 1; i >= 0; i-- {
		if i < n-1 {
			in.WriteByte(',')
		}
		in.WriteString(`"k` + pad3(i) + `":` + pad3(i)[2:])
	}
	for i := range n {
		if i > 0 {
			want.WriteByte(',')
		}
		want.WriteString(`"k` + pad3(i) + `":` + pad3(i)[2:])
	}
	in.WriteByte('}')
	want.WriteByte('}')
	got, err := Canonicalize([]byte(in.String()))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Fatalf("got %s", got)
	}
	dup := strings.Replace(in.String(), `"k000"`, `"k150"`, 1)
	if _, err := Canonicalize([]byte(dup)); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("duplicate in large object: %v", err)
	}
}

func pad3(i int) string {
	return string([]byte{byte('0' + i/100), byte('0' + i/10%10), byte('0' + i%10)})
}

func TestCompareUTF16(t *testing.T) {
	// In UTF-16 order; each is less than every later one.
	ordered := []string{"", "\x00", "\r", "1", "A", "a", "ab", "\u007f", "\u0080", "\u00f6", "\u07ff", "\u0800", "\u20ac", "\ud7ff", "\U00010000", "\U0001f600", "\U0010ffff", "\ue000", "\ufb33", "\uffff"}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := compareUTF16(a, b); got != want {
				t.Errorf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestAppendCanonicalHandBuilt(t *testing.T) {
	obj := func(ms ...Member) Value { return Value{Kind: Object, Members: ms} }
	num := func(f float64) Value { return Value{Kind: Number, Float: f} }
	str := func(s string) Value { return Value{Kind: String, Str: s} }

	t.Run("valid", func(t *testing.T) {
		v := obj(Member{"b", Value{Kind: Array, Items: []Value{num(1.5), {Kind: Bool, Bool: true}, Value{}}}}, Member{"a", str("x")})
		got, err := v.AppendCanonical([]byte("prefix:"))
		if err != nil {
			t.Fatal(err)
		}
		if want := `prefix:{"a":"x","b":[1.5,true,null]}`; string(got) != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
	t.Run("Num ignored", func(t *testing.T) {
		got, err := Value{Kind: Number, Num: "1.50", Float: 2}.AppendCanonical(nil)
		if err != nil || string(got) != "2" {
			t.Fatalf("got %s, %v", got, err)
		}
	})

	const secret = "s3cr3t-\xff"
	tests := []struct {
		name     string
		v        Value
		sentinel error
		path     string
	}{
		{"NaN", obj(Member{"a", Value{Kind: Array, Items: []Value{num(1), num(math.NaN())}}}), ErrNonFinite, "a[1]"},
		{"+Inf", num(math.Inf(1)), ErrNonFinite, ""},
		{"-Inf", obj(Member{"x y", num(math.Inf(-1))}), ErrNonFinite, `["x y"]`},
		{"invalid UTF-8 value", obj(Member{"k", str(secret)}), ErrInvalidUTF8, "k"},
		{"invalid UTF-8 name", obj(Member{"k", obj(Member{secret, Value{}})}), ErrInvalidUTF8, "k"},
		{"duplicate names", obj(Member{"z", Value{}}, Member{"s3cr3t", Value{}}, Member{"s3cr3t", Value{}}), ErrDuplicateKey, ""},
		{"duplicate names sorted", obj(Member{"s3cr3t", Value{}}, Member{"s3cr3t", Value{}}), ErrDuplicateKey, ""},
		{"undefined kind", Value{Kind: 9}, ErrSyntax, ""},
		{"contains itself", selfContaining(), ErrTooDeep, strings.Repeat("[0].x", 4) + "..." + strings.Repeat("[0].x", 12)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.v.AppendCanonical(nil)
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("err = %v, want %v", err, tt.sentinel)
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset != -1 || se.Path != tt.path {
				t.Fatalf("err = %#v, want Offset -1 and Path %q", err, tt.path)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "offset") {
				t.Fatalf("error text %q echoes the value or shows an offset", err)
			}
		})
	}
}

// selfContaining returns an array whose element is an object whose member
// is the array again, which only a Value built by hand can be.
func selfContaining() Value {
	items := make([]Value, 1)
	items[0] = Value{Kind: Object, Members: []Member{{"x", Value{Kind: Array, Items: items}}}}
	return Value{Kind: Array, Items: items}
}

func TestKindString(t *testing.T) {
	want := map[Kind]string{Null: "null", Bool: "boolean", Number: "number", String: "string", Array: "array", Object: "object", 42: "Kind(42)"}
	for k, s := range want {
		t.Run(s, func(t *testing.T) {
			if got := k.String(); got != s {
				t.Fatalf("got %q", got)
			}
		})
	}
}
