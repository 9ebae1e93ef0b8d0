package jcs

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestRefusals checks every input Parse must refuse, in every mode, with the
// sentinel, the location, and an error text that does not echo the input.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		sentinel error
		offset   int
		path     string
	}{
		// Grammar.
		{"empty", ``, ErrSyntax, 0, ""},
		{"only whitespace", "  \n", ErrSyntax, 3, ""},
		{"byte order mark", "\xef\xbb\xbf{}", ErrSyntax, 0, ""},
		{"leading zero", `[01]`, ErrSyntax, 1, "[0]"},
		{"negative leading zero", `[-01]`, ErrSyntax, 1, "[0]"},
		{"plus sign", `+1`, ErrSyntax, 0, ""},
		{"bare fraction", `.5`, ErrSyntax, 0, ""},
		{"trailing point", `1.`, ErrSyntax, 0, ""},
		{"point then exponent", `1.e5`, ErrSyntax, 0, ""},
		{"empty exponent", `1e`, ErrSyntax, 0, ""},
		{"signed empty exponent", `1e+`, ErrSyntax, 0, ""},
		{"lone minus", `-`, ErrSyntax, 0, ""},
		{"minus letter", `-x`, ErrSyntax, 0, ""},
		{"hex", `0x10`, ErrSyntax, 1, ""},
		{"NaN", `NaN`, ErrSyntax, 0, ""},
		{"Infinity", `Infinity`, ErrSyntax, 0, ""},
		{"minus Infinity", `-Infinity`, ErrSyntax, 0, ""},
		{"trailing comma array", `[1,]`, ErrSyntax, 3, ""},
		{"trailing comma object", `{"a":1,}`, ErrSyntax, 7, ""},
		{"leading comma", `[,1]`, ErrSyntax, 1, "[0]"},
		{"double comma", `[1,,2]`, ErrSyntax, 3, "[1]"},
		{"missing comma", `[1 2]`, ErrSyntax, 3, ""},
		{"missing colon", `{"a" 1}`, ErrSyntax, 5, ""},
		{"missing value", `{"a":}`, ErrSyntax, 5, "a"},
		{"unquoted name", `{a:1}`, ErrSyntax, 1, ""},
		{"number name", `{1:1}`, ErrSyntax, 1, ""},
		{"single quotes", `['a']`, ErrSyntax, 1, "[0]"},
		{"line comment", "[1 // c\n]", ErrSyntax, 3, ""},
		{"block comment", `/* c */ 1`, ErrSyntax, 0, ""},
		{"unclosed array", `[1`, ErrSyntax, 2, ""},
		{"unclosed object", `{"a":1`, ErrSyntax, 6, ""},
		{"unclosed string", `"abc`, ErrSyntax, 0, ""},
		{"unclosed escape", `"abc\`, ErrSyntax, 0, ""},
		{"mismatched bracket", `[1}`, ErrSyntax, 2, ""},
		{"trailing data", `{} {}`, ErrSyntax, 3, ""},
		{"trailing garbage", `1x`, ErrSyntax, 1, ""},
		{"bad literal", `tru`, ErrSyntax, 0, ""},
		{"capital literal", `True`, ErrSyntax, 0, ""},
		{"literal with suffix", `nullx`, ErrSyntax, 4, ""},
		{"raw newline in string", "\"a\nb\"", ErrSyntax, 2, ""},
		{"raw tab in string", "\"a\tb\"", ErrSyntax, 2, ""},
		{"raw NUL in string", "\"\x00\"", ErrSyntax, 1, ""},
		{"bad escape", `"\x41"`, ErrSyntax, 1, ""},
		{"short unicode escape", `"\u41"`, ErrSyntax, 1, ""},
		{"non-hex unicode escape", `"\u00g1"`, ErrSyntax, 1, ""},
		{"uppercase U escape", `"\U0041"`, ErrSyntax, 1, ""},
		{"form feed whitespace", "\f1", ErrSyntax, 0, ""},
		{"NBSP whitespace", "\u00a01", ErrSyntax, 0, ""},
		{"bad escape after high surrogate", `"\ud800\u12"`, ErrSyntax, 7, ""},
		// Encoding.
		{"invalid UTF-8 in string", "\"a\xffb\"", ErrInvalidUTF8, 2, ""},
		{"invalid UTF-8 after escape", "\"\\n\xff\"", ErrInvalidUTF8, 3, ""},
		{"invalid UTF-8 in name", "{\"\xc3\":1}", ErrInvalidUTF8, 2, ""},
		{"invalid UTF-8 outside string", "[\xff]", ErrInvalidUTF8, 1, "[0]"},
		{"truncated UTF-8", "\"\xe2\x82\"", ErrInvalidUTF8, 1, ""},
		{"overlong UTF-8", "\"\xc0\xaf\"", ErrInvalidUTF8, 1, ""},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", ErrInvalidUTF8, 1, ""},
		{"beyond U+10FFFF", "\"\xf4\x90\x80\x80\"", ErrInvalidUTF8, 1, ""},
		{"UTF-16 input", "\xff\xfe[\x00]\x00", ErrInvalidUTF8, 0, ""},
		// Surrogates.
		{"lone high surrogate", `"\ud800"`, ErrLoneSurrogate, 1, ""},
		{"lone low surrogate", `"\udc00"`, ErrLoneSurrogate, 1, ""},
		{"reversed pair", `"\udc00\ud800"`, ErrLoneSurrogate, 1, ""},
		{"high then letter", `"\ud800a"`, ErrLoneSurrogate, 1, ""},
		{"high then BMP escape", `"x\ud800\u0041"`, ErrLoneSurrogate, 2, ""},
		{"two highs", `"\ud83d\ud83d"`, ErrLoneSurrogate, 1, ""},
		{"two lows", `"\udc00\udc00"`, ErrLoneSurrogate, 1, ""},
		{"high at end", `"\udbff`, ErrLoneSurrogate, 1, ""},
		{"lone surrogate in name", `{"\udfff":1}`, ErrLoneSurrogate, 2, ""},
		// Duplicates.
		{"duplicate", `{"a":1,"a":2}`, ErrDuplicateKey, 7, ""},
		{"duplicate after unescape", `{"a":1,"\u0061":2}`, ErrDuplicateKey, 7, ""},
		{"duplicate same value", `{"a":1,"b":0,"a":1}`, ErrDuplicateKey, 13, ""},
		{"duplicate empty name", `{"":1,"":2}`, ErrDuplicateKey, 6, ""},
		{"duplicate surrogate pair", `{"😀":1,"\ud83d\ude00":2}`, ErrDuplicateKey, 10, ""},
		{"duplicate nested", `{"a":{"b":{"c":1,"c":2}}}`, ErrDuplicateKey, 17, "a.b"},
		{"duplicate in large object", `{"x":{` + manyMembers(40) + `,"m07":0}}`, ErrDuplicateKey, 6 + len(manyMembers(40)) + 1, "x"},
		{"duplicate at scan limit", `{` + manyMembers(linearDupScan) + `,"m00":0}`, ErrDuplicateKey, 1 + len(manyMembers(linearDupScan)) + 1, ""},
		// Numbers.
		{"overflow", `1e400`, ErrNonFinite, 0, ""},
		{"negative overflow", `[-1e400]`, ErrNonFinite, 1, "[0]"},
		{"long overflow", "1" + strings.Repeat("0", 400), ErrNonFinite, 0, ""},
		// Limits.
		{"too deep arrays", strings.Repeat("[", DefaultMaxDepth+1) + strings.Repeat("]", DefaultMaxDepth+1), ErrTooDeep, DefaultMaxDepth, strings.Repeat("[0]", 8) + "..." + strings.Repeat("[0]", 24)},
		{"too deep objects", strings.Repeat(`{"a":`, DefaultMaxDepth+1) + "1" + strings.Repeat("}", DefaultMaxDepth+1), ErrTooDeep, 5 * DefaultMaxDepth, "a" + strings.Repeat(".a", 7) + "...a" + strings.Repeat(".a", 23)},
		{"too deep unclosed", strings.Repeat("[", 100000), ErrTooDeep, DefaultMaxDepth, strings.Repeat("[0]", 8) + "..." + strings.Repeat("[0]", 24)},
		{"too large", `"` + strings.Repeat("a", DefaultMaxBytes) + `"`, ErrTooLarge, DefaultMaxBytes, ""},
	}
	for _, tt := range tests {
		for _, exact := range []bool{false, true} {
			name := tt.name
			if exact {
				name += "/exact"
			}
			t.Run(name, func(t *testing.T) {
				_, err := Parse([]byte(tt.in), &Options{ExactNumbers: exact})
				checkRefusal(t, err, tt.sentinel, tt.offset, tt.path)
				if exact {
					return
				}
				out, err := Canonicalize([]byte(tt.in))
				if out != nil {
					t.Errorf("Canonicalize returned output %q with error", out)
				}
				checkRefusal(t, err, tt.sentinel, tt.offset, tt.path)
			})
		}
	}
}

// manyMembers returns n object members "m00":0, "m01":1, … without braces.
func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"m` + pad3(i)[1:] + `":` + strconv.Itoa(i))
	}
	return b.String()
}

func checkRefusal(t *testing.T, err, sentinel error, offset int, path string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want %v", err, sentinel)
	}
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("err = %T, want *SyntaxError", err)
	}
	if se.Offset != offset || se.Path != path {
		t.Errorf("offset %d path %q, want offset %d path %q (%v)", se.Offset, se.Path, offset, path, err)
	}
	if se.Rule == "" {
		t.Errorf("empty Rule")
	}
}

// TestErrorsDoNotEchoInput puts a marker in the offending key or value of
// each kind of refusal and checks the error text does not carry it.
func TestErrorsDoNotEchoInput(t *testing.T) {
	const m = "Zq7secret"
	tests := []struct {
		name     string
		in       string
		sentinel error
	}{
		{"duplicate key", `{"` + m + `":1,"` + m + `":2}`, ErrDuplicateKey},
		{"duplicate escaped key", `{"` + m + `":1,"\u005a` + m[1:] + `":2}`, ErrDuplicateKey},
		{"invalid UTF-8 value", `{"k":"` + m + "\xff" + m + `"}`, ErrInvalidUTF8},
		{"invalid UTF-8 key", `{"` + m + "\xff" + `":1}`, ErrInvalidUTF8},
		{"lone surrogate value", `{"k":"` + m + `\ud800` + m + `"}`, ErrLoneSurrogate},
		{"lone surrogate key", `{"` + m + `\udc00":1}`, ErrLoneSurrogate},
		{"control char", `{"k":"` + m + "\n" + m + `"}`, ErrSyntax},
		{"bad escape", `{"k":"` + m + `\q"}`, ErrSyntax},
		{"unterminated", `{"k":"` + m, ErrSyntax},
		{"bare word", `{"k":` + m + `}`, ErrSyntax},
		{"bad key token", `{` + m + `:1}`, ErrSyntax},
		{"non-finite", `{"k":7` + strings.Repeat("7", 400) + `}`, ErrNonFinite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), nil)
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("err = %v, want %v", err, tt.sentinel)
			}
			if msg := err.Error(); strings.Contains(msg, m) || strings.Contains(msg, "777") {
				t.Fatalf("error text %q echoes the input", msg)
			}
		})
	}
	t.Run("precision", func(t *testing.T) {
		_, err := Parse([]byte(`{"k":9007199254740993}`), &Options{ExactNumbers: true})
		if !errors.Is(err, ErrPrecision) || strings.Contains(err.Error(), "9007") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestErrorPath(t *testing.T) {
	tests := []struct {
		name, in, path, text string
	}{
		{"duplicate in array element", `{"capabilities":[{},{},{},{"id":1,"id":2}]}`, "capabilities[3]",
			"jcs: capabilities[3]: duplicate object member name (offset 34)"},
		{"value in member", `{"capabilities":[{},{"id":"\ud800"}]}`, "capabilities[1].id",
			"jcs: capabilities[1].id: lone surrogate in string escape (offset 27)"},
		{"root", `[1,]`, "", "jcs: $: trailing comma in array (offset 3)"},
		{"quoted name", `{"content-type":{"a b":[0,{"x":1,"x":1}]}}`, `["content-type"]["a b"][1]`, ""},
		{"root array", `[{"id":[1,-]}]`, "[0].id[1]", ""},
		{"empty name", `{"":[nul]}`, `[""][0]`, ""},
		{"digits and underscore", `{"a_1":{"2":{"x":"\x"}}}`, "a_1.2.x", ""},
		{"non-ASCII name", `{"é":tru}`, `["é"]`, ""},
		{"control in name", `{"a\nb":tru}`, `["a\nb"]`, ""},
		{"long name cut", `{"` + strings.Repeat("é", 40) + `-":tru}`, `["` + strings.Repeat("é", 32) + `..."]`, ""},
		{"error after member", `{"a":{"b":1} x}`, "", ""},
		{"error after element", `{"a":[1 x]}`, "a", ""},
		{"long path elided", `{"n":` + strings.Repeat(`[{"k":`, 20) + `[tru`, "n" + strings.Repeat("[0].k", 3) + "[0]...k" + strings.Repeat("[0].k", 11) + "[0]", ""},
		{"path at segment limit", strings.Repeat(`[`, 32) + `tru`, strings.Repeat("[0]", 32), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), nil)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v", err)
			}
			if se.Path != tt.path {
				t.Fatalf("Path = %q, want %q (%v)", se.Path, tt.path, err)
			}
			if tt.text != "" && err.Error() != tt.text {
				t.Fatalf("Error() = %q, want %q", err, tt.text)
			}
		})
	}
}

func TestParseValue(t *testing.T) {
	in := `{"s":"a\"\u00e9","n":-1.50e+2,"t":true,"f":false,"z":null,"a":[1,[],{}],"o":{"b":2,"a":1}}`
	v, err := Parse([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != Object || len(v.Members) != 7 {
		t.Fatalf("got %+v", v)
	}
	names := ""
	for _, m := range v.Members {
		names += m.Name
	}
	if names != "sntfzao" {
		t.Fatalf("members not in received order: %q", names)
	}
	tests := []struct {
		name string
		want Value
	}{
		{"s", Value{Kind: String, Str: "a\"é"}},
		{"n", Value{Kind: Number, Num: "-1.50e+2", Float: -150}},
		{"t", Value{Kind: Bool, Bool: true}},
		{"f", Value{Kind: Bool}},
		{"z", Value{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := v.Get(tt.name)
			if !ok || got.Kind != tt.want.Kind || got.Str != tt.want.Str || got.Num != tt.want.Num || got.Float != tt.want.Float || got.Bool != tt.want.Bool {
				t.Fatalf("Get(%q) = %+v, %v; want %+v", tt.name, got, ok, tt.want)
			}
		})
	}
	t.Run("array", func(t *testing.T) {
		a, _ := v.Get("a")
		if a.Kind != Array || len(a.Items) != 3 || a.Items[1].Kind != Array || a.Items[2].Kind != Object {
			t.Fatalf("got %+v", a)
		}
	})
	t.Run("object order", func(t *testing.T) {
		o, _ := v.Get("o")
		if len(o.Members) != 2 || o.Members[0].Name != "b" || o.Members[1].Name != "a" {
			t.Fatalf("got %+v", o)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, ok := v.Get("S"); ok {
			t.Fatal("Get matched a name case-insensitively")
		}
	})
	t.Run("not an object", func(t *testing.T) {
		if _, ok := (Value{Kind: Array}).Get("s"); ok {
			t.Fatal("Get on an array found a member")
		}
	})
}

func TestOptionsLimits(t *testing.T) {
	deep := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	tests := []struct {
		name     string
		in       []byte
		opts     *Options
		sentinel error // nil means accepted
	}{
		{"default depth ok", deep(DefaultMaxDepth), nil, nil},
		{"default depth exceeded", deep(DefaultMaxDepth + 1), nil, ErrTooDeep},
		{"negative depth is default", deep(DefaultMaxDepth), &Options{MaxDepth: -1}, nil},
		{"custom depth ok", deep(3), &Options{MaxDepth: 3}, nil},
		{"custom depth exceeded", deep(4), &Options{MaxDepth: 3}, ErrTooDeep},
		{"custom depth above default", deep(1000), &Options{MaxDepth: 1000}, nil},
		{"ceiling ok", deep(MaxDepthCeiling), &Options{MaxDepth: 1 << 40}, nil},
		{"ceiling exceeded", deep(MaxDepthCeiling + 1), &Options{MaxDepth: 1 << 40}, ErrTooDeep},
		{"scalars have no depth", []byte(`1`), &Options{MaxDepth: 1}, nil},
		{"size ok", []byte(`"12345678"`), &Options{MaxBytes: 10}, nil},
		{"size exceeded", []byte(`"123456789"`), &Options{MaxBytes: 10}, ErrTooLarge},
		{"whitespace counts", []byte(`  1  `), &Options{MaxBytes: 4}, ErrTooLarge},
		{"default size ok", []byte(`"` + strings.Repeat("a", DefaultMaxBytes-2) + `"`), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse(tt.in, tt.opts)
			if tt.sentinel == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				// Whatever parses can be written.
				if _, err := v.AppendCanonical(nil); err != nil {
					t.Fatalf("AppendCanonical: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("err = %v, want %v", err, tt.sentinel)
			}
		})
	}
	t.Run("rule names the limit", func(t *testing.T) {
		_, err := Parse(deep(4), &Options{MaxDepth: 3})
		if err == nil || err.Error() != "jcs: [0][0][0]: nesting deeper than 3 (offset 3)" {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestParseLargeNested checks documents with arrays and objects long enough
// to cross many chunks of the parser's stacks, nested inside each other,
// against encoding/json's reading of them.
func TestParseLargeNested(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	budget := 0 // values left to write, so the document stays small
	var gen func(b *strings.Builder, depth int)
	gen = func(b *strings.Builder, depth int) {
		budget--
		switch k := r.IntN(6); {
		case depth > 6 || budget <= 0 || k == 0:
			b.WriteString(strconv.Itoa(r.IntN(1000) - 500))
		case k == 1:
			b.WriteString(`"s` + strconv.Itoa(r.IntN(100)) + `\n"`)
		case k == 2 || k == 3:
			b.WriteByte('[')
			for i := range r.IntN(300) {
				if budget <= 0 {
					break
				}
				if i > 0 {
					b.WriteByte(',')
				}
				gen(b, depth+1)
			}
			b.WriteByte(']')
		default:
			b.WriteByte('{')
			for i := range r.IntN(300) {
				if budget <= 0 {
					break
				}
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`"k` + strconv.Itoa(i) + `":`)
				gen(b, depth+1)
			}
			b.WriteByte('}')
		}
	}
	for i := range 20 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			var b strings.Builder
			budget = 20000
			b.WriteByte('[')
			gen(&b, 0)
			b.WriteString(",")
			gen(&b, 0)
			b.WriteByte(']')
			data := []byte(b.String())
			v, err := Parse(data, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameAsStdlib(t, data, v)
		})
	}
}
