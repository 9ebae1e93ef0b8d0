package yamljson

import (
	"errors"
	"strings"
	"testing"
)

// convertCase is one input and either the exact JSON Convert must return or
// the error it must report.
type convertCase struct {
	name string
	in   string

	want string // exact JSON, for accepted input

	rule      string // for refused input: the rule, and
	path      string // the path,
	line, col int    // the position (col 0: not checked),
	hide      string // text of the offending value the error must not show
}

var convertCases = []convertCase{
	// Mappings.
	{name: "block mapping keeps document order", in: "b: 1\na: 2\nc: 3\n", want: `{"b":1,"a":2,"c":3}`},
	{name: "nested block mapping", in: "a:\n  b:\n    c: x\n  d: y\n", want: `{"a":{"b":{"c":"x"},"d":"y"}}`},
	{name: "flow mapping", in: "{b: 1, a: [x, y]}", want: `{"b":1,"a":["x","y"]}`},
	{name: "flow mapping key without value", in: "{a, b: 1}", want: `{"a":null,"b":1}`},
	{name: "empty collections", in: "a: {}\nb: []\n", want: `{"a":{},"b":[]}`},
	{name: "single pair in flow sequence", in: "[a: 1, b]", want: `[{"a":1},"b"]`},
	{name: "quoted keys", in: "\"a b\": 1\n'c''d': 2\n", want: `{"a b":1,"c'd":2}`},
	{name: "YAML 1.1 boolean word as key", in: "yes: 1\non: 2\n", want: `{"yes":1,"on":2}`},
	{name: "version-like key", in: "1.2.3: x\n", want: `{"1.2.3":"x"}`},
	{name: "!!str integer key", in: "!!str 1: x\n", want: `{"1":"x"}`},
	{name: "quoted number key", in: "\"1\": x\n", want: `{"1":"x"}`},
	{name: "missing value is null", in: "a:\nb: 1\n", want: `{"a":null,"b":1}`},

	// Sequences.
	{name: "block sequence", in: "- a\n- b\n", want: `["a","b"]`},
	{name: "compact nested sequences", in: "- - a\n  - b\n- c\n", want: `[["a","b"],"c"]`},
	{name: "zero-indented sequence under key", in: "a:\n- 1\n- 2\nb: 3\n", want: `{"a":[1,2],"b":3}`},
	{name: "sequence of mappings", in: "- a: 1\n  b: 2\n- a: 3\n", want: `[{"a":1,"b":2},{"a":3}]`},
	{name: "empty entry is null", in: "-\n- a\n", want: `[null,"a"]`},
	{name: "flow sequence over lines", in: "a: [1,\n  2, 3]\n", want: `{"a":[1,2,3]}`},

	// Plain scalars.
	{name: "plain string", in: "a: hello world\n", want: `{"a":"hello world"}`},
	{name: "plain multi-line string folds", in: "a: hello\n  big\n\n  world\n", want: `{"a":"hello big\nworld"}`},
	{name: "YAML 1.1 words are strings", in: "[yes, no, on, off, y, n, Yes, OFF]", want: `["yes","no","on","off","y","n","Yes","OFF"]`},
	{name: "sexagesimal is a string", in: "a: 1:30\n", want: `{"a":"1:30"}`},
	{name: "version is a string", in: "a: 1.2.3\n", want: `{"a":"1.2.3"}`},
	{name: "date is a string", in: "a: 2001-12-14\n", want: `{"a":"2001-12-14"}`},
	{name: "not-quite numbers are strings", in: "[0X1F, 0x, 1e3x, 1e, ., +, 0o8, nULL, tRUE]", want: `["0X1F","0x","1e3x","1e",".","+","0o8","nULL","tRUE"]`},
	{name: "null spellings", in: "[null, Null, NULL, ~]", want: `[null,null,null,null]`},
	{name: "bool spellings", in: "[true, True, TRUE, false, False, FALSE]", want: `[true,true,true,false,false,false]`},
	{name: "top-level scalar", in: "42\n", want: `42`},
	{name: "top-level null", in: "~\n", want: `null`},
	{name: "document markers", in: "---\na: 1\n...\n", want: `{"a":1}`},
	{name: "comments ignored", in: "# head\na: 1 # line\n# foot\n", want: `{"a":1}`},

	// Integers.
	{name: "decimal", in: "[0, 12, -12, +12, -0]", want: `[0,12,-12,12,-0]`},
	{name: "hexadecimal", in: "a: 0x1F\n", want: `{"a":31}`},
	{name: "octal", in: "a: 0o17\n", want: `{"a":15}`},
	{name: "large hexadecimal stays exact", in: "a: 0xFFFFFFFFFFFFFFFFFFFF\n", want: `{"a":1208925819614629174706175}`},
	{name: "precision beyond float64", in: "n: 9007199254740993\n", want: `{"n":9007199254740993}`},
	{name: "beyond 64 bits", in: "n: 99999999999999999999\n", want: `{"n":99999999999999999999}`},

	// Floats.
	{name: "float text preserved", in: "x: 1.00000000000000001\n", want: `{"x":1.00000000000000001}`},
	{name: "trailing zero kept", in: "a: 1.50\n", want: `{"a":1.50}`},
	{name: "exponent without dot", in: "a: 1e3\n", want: `{"a":1e3}`},
	{name: "missing integer part", in: "a: .5\n", want: `{"a":0.5}`},
	{name: "plus sign dropped", in: "a: +1.5\n", want: `{"a":1.5}`},
	{name: "missing fraction", in: "a: 1.\n", want: `{"a":1.0}`},
	{name: "signed exponent kept", in: "[-.5E-3, 1.5e+03, 0.0]", want: `[-0.5E-3,1.5e+03,0.0]`},
	{name: "huge finite exponent", in: "a: 1e400\n", want: `{"a":1e400}`},

	// Quoted and block scalars.
	{name: "single quoted", in: "a: 'it''s \\n'\n", want: `{"a":"it's \\n"}`},
	{name: "double quoted escapes", in: `a: "t\tn\nq\"s\\ \/ \x41 \u00e9 \U0001F600 \_"` + "\n", want: "{\"a\":\"t\\tn\\nq\\\"s\\\\ / A \u00e9 \U0001F600 \u00a0\"}"},
	{name: "surrogate pair", in: `a: "\uD83D\uDE00"` + "\n", want: "{\"a\":\"\U0001F600\"}"},
	{name: "control characters escaped in JSON", in: `a: "\0\x01\e\b\f\r\x7f"` + "\n", want: `{"a":"\u0000\u0001\u001b\b\f\r\u007f"}`},
	{name: "characters YAML forbids escaped in JSON", in: `a: "\x80\x85\uFEFF\uFFFE\uFFFF\uFFFD"` + "\n", want: "{\"a\":\"\\u0080\u0085\\ufeff\\ufffe\\uffff\uFFFD\"}"},
	{name: "line and paragraph separators raw", in: `a: "\L\P"` + "\n", want: "{\"a\":\"\u2028\u2029\"}"},
	{name: "double quoted folding", in: "a: \"x  \n  y\n\n  z\"\n", want: `{"a":"x y\nz"}`},
	{name: "escaped line break", in: "a: \"x \\\n  y\"\n", want: `{"a":"x y"}`},
	{name: "single quoted folding", in: "a: 'x\n  y'\n", want: `{"a":"x y"}`},
	{name: "tab before quoted scalar", in: "a:\t\"x\"\n", want: `{"a":"x"}`},
	{name: "quoted scalars in a flow line", in: "[\t\"x\",\t'y', it's, 'z']\n", want: `["x","y","it's","z"]`},
	{name: "quoted scalar after tag and comment", in: "# c\n- !!str \"a\"\n- 'b'\n", want: `["a","b"]`},
	{name: "unicode text", in: "a: é😀\n", want: "{\"a\":\"é😀\"}"},
	{name: "literal clip", in: "a: |\n  x\n  y\n\nb: 1\n", want: `{"a":"x\ny\n","b":1}`},
	{name: "literal strip", in: "a: |-\n  x\n\n", want: `{"a":"x"}`},
	{name: "literal keep", in: "a: |+\n  x\n\n", want: `{"a":"x\n\n"}`},
	{name: "literal at end of input without line break", in: "a: |\n  x", want: `{"a":"x"}`},
	{name: "literal indentation indicator", in: "a: |2\n   x\n", want: `{"a":" x\n"}`},
	{name: "folded", in: "a: >\n  x\n  y\n\n  z\n", want: `{"a":"x y\nz\n"}`},
	{name: "folded more-indented line kept", in: "a: >-\n  p\n   q\n  r\n", want: `{"a":"p\n q\nr"}`},

	// Tags.
	{name: "!!str on integer", in: "a: !!str 123\n", want: `{"a":"123"}`},
	{name: "!!str on words", in: "[!!str true, !!str null, !!str ~, !!str 0x1F]", want: `["true","null","~","0x1F"]`},
	{name: "!!str on quoted and block", in: "a: !!str \"x\"\nb: !!str |\n  y\n", want: `{"a":"x","b":"y\n"}`},
	{name: "!!str with no value", in: "a: !!str\n", want: `{"a":""}`},
	{name: "!!str with no value in flow", in: "{a: !!str , b: 1}", want: `{"a":"","b":1}`},
	{name: "!!int", in: "[!!int 12, !!int 0x10, !!int -3]", want: `[12,16,-3]`},
	{name: "!!float", in: "[!!float 1, !!float 1.5, !!float 2e3]", want: `[1,1.5,2e3]`},
	{name: "!!bool and !!null", in: "[!!bool true, !!null ~, !!null null]", want: `[true,null,null]`},
	{name: "!!null with no value", in: "a: !!null\n", want: `{"a":null}`},
	{name: "!!map and !!seq", in: "a: !!map {b: 1}\nc: !!seq [1]\nd: !!map\n  e: 2\n", want: `{"a":{"b":1},"c":[1],"d":{"e":2}}`},

	// Input forms.
	{name: "CRLF line breaks", in: "a: 1\r\nb: |\r\n  x\r\n  y\r\n", want: `{"a":1,"b":"x\ny\n"}`},
	{name: "leading byte order mark", in: "\uFEFFa: 1\n", want: `{"a":1}`},

	// Refused: documents.
	{name: "empty input", in: "", rule: ruleEmptyDoc},
	{name: "only a comment", in: "# nothing\n", rule: ruleEmptyDoc},
	{name: "only white space", in: "   \n", rule: ruleEmptyDoc},
	{name: "document marker alone", in: "---\n", rule: ruleEmptyDoc},
	{name: "two documents", in: "a: 1\n---\nb: 2\n", rule: ruleMultiDoc, line: 2, col: 1},
	{name: "trailing empty document", in: "a: 1\n---\n", rule: ruleMultiDoc, line: 2},
	{name: "YAML directive", in: "%YAML 1.2\n---\na: 1\n", rule: ruleDirective, line: 1},
	{name: "TAG directive", in: "%TAG !! tag:example.com,2000:\n---\na: !!str x\n", rule: ruleDirective, line: 1},
	{name: "syntax error", in: "a: [1, 2\n", rule: ruleSyntax},
	{name: "syntax error does not quote source", in: "x: 1\na: \"s3cr3t\n", rule: ruleSyntax, hide: "s3cr3t"},
	{name: "mapping value in plain scalar", in: "a: b: s3cr3t\n", rule: ruleSyntax, line: 1, hide: "s3cr3t"},
	{name: "tag dropped at end of input", in: "a: !!str", rule: ruleFinalBreak, line: 1},
	{name: "custom tag dropped at end of input", in: "x: 1\na: \"x\" !s3cr3t", rule: ruleFinalBreak, line: 2, hide: "s3cr3t"},

	// Refused: keys.
	{name: "integer key", in: "a:\n  1: x\n", rule: ruleKeyNotString, path: "a", line: 2, col: 3},
	{name: "boolean key", in: "true: x\n", rule: ruleKeyNotString, line: 1, col: 1},
	{name: "null key", in: "~: x\n", rule: ruleKeyNotString, line: 1, col: 1},
	{name: "float key", in: "1.5: x\n", rule: ruleKeyNotString, line: 1, col: 1},
	{name: "duplicate key", in: "app: 1\nk: 2\nk: 3\n", rule: ruleDuplicateKey, line: 3, col: 1, hide: "k:"},
	{name: "duplicate nested key", in: "caps:\n- x: 1\n- s3cr3t: 1\n  s3cr3t: 2\n", rule: ruleDuplicateKey, path: "caps[1]", line: 4, col: 3, hide: "s3cr3t"},
	{name: "duplicate quoted and plain key", in: "a: 1\n\"a\": 2\n", rule: ruleDuplicateKey, line: 2},
	{name: "duplicate flow key", in: "{s3cr3t: 1, s3cr3t: 2}", rule: ruleDuplicateKey, line: 1, col: 13, hide: "s3cr3t"},
	{name: "duplicate !!str key", in: "!!str 1: x\n\"1\": y\n", rule: ruleDuplicateKey, line: 2},
	{name: "merge key", in: "a:\n  b: 1\n  <<: {c: 1}\n", rule: ruleMergeKey, path: "a", line: 3, col: 3},
	{name: "explicit key", in: "? a\n: b\n", rule: ruleExplicitKey, line: 1},

	// Refused: anchors, aliases, tags.
	{name: "anchor", in: "a: &x 1\nb: *x\n", rule: ruleAnchor, path: "a", line: 1, col: 4},
	{name: "alias", in: "a: *s3cr3t\n", rule: ruleAlias, path: "a", line: 1, col: 4, hide: "s3cr3t"},
	{name: "billion laughs", in: "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n", rule: ruleAnchor, path: "a"},
	{name: "custom tag", in: "a: !s3cr3t x\n", rule: ruleTag, path: "a", line: 1, col: 4, hide: "s3cr3t"},
	{name: "other core tag", in: "a: !!binary aGk=\n", rule: ruleTag, path: "a"},
	{name: "non-specific tag", in: "a: ! x\n", rule: ruleTag, path: "a"},
	{name: "verbatim tag", in: "a: !<tag:yaml.org,2002:str> x\n", rule: ruleTag, path: "a"},
	{name: "!!int on float", in: "a: !!int 1.5\n", rule: ruleTagMismatch, path: "a"},
	{name: "!!int on quoted", in: "a: !!int \"1\"\n", rule: ruleTagMismatch, path: "a"},
	{name: "!!int with no value", in: "a: !!int\n", rule: ruleTagMismatch, path: "a"},
	{name: "!!int with no value in flow", in: "{a: !!int , b: 1}", rule: ruleTagMismatch, path: "a"},
	{name: "!!float on hexadecimal", in: "a: !!float 0x1F\n", rule: ruleTagMismatch, path: "a"},
	{name: "!!bool on YAML 1.1 word", in: "a: !!bool yes\n", rule: ruleTagMismatch, path: "a"},
	{name: "!!null on string", in: "a: !!null s3cr3t\n", rule: ruleTagMismatch, path: "a", hide: "s3cr3t"},
	{name: "!!map on scalar (goccy refuses)", in: "a: !!map x\n", rule: ruleSyntax, line: 1},
	{name: "!!int on leading zero", in: "a: !!int 012\n", rule: ruleLeadingZero, path: "a"},

	// Refused: numbers.
	{name: "infinity", in: "a: .inf\n", rule: ruleNonFinite, path: "a", line: 1, col: 4, hide: "inf"},
	{name: "negative infinity", in: "a: -.Inf\n", rule: ruleNonFinite, path: "a"},
	{name: "infinity in odd case", in: "a: .iNF\n", rule: ruleNonFinite, path: "a"},
	{name: "plus infinity", in: "a: +.INF\n", rule: ruleNonFinite, path: "a"},
	{name: "NaN in a sequence", in: "x: [1, .NaN]\n", rule: ruleNonFinite, path: "x[1]", line: 1, col: 8, hide: "NaN"},
	{name: "underscored integer", in: "a: 1_000\n", rule: ruleAmbiguousNum, path: "a", hide: "1_000"},
	{name: "binary integer", in: "a: 0b101\n", rule: ruleAmbiguousNum, path: "a", hide: "0b101"},
	{name: "signed hexadecimal", in: "a: -0x1F\n", rule: ruleAmbiguousNum, path: "a", hide: "0x1F"},
	{name: "underscored octal", in: "a: 0o1_7\n", rule: ruleAmbiguousNum, path: "a"},
	{name: "underscored float", in: "a: 1.5_\n", rule: ruleAmbiguousNum, path: "a"},
	{name: "leading zero integer", in: "a: 012\n", rule: ruleLeadingZero, path: "a", hide: "012"},
	{name: "leading zero 9", in: "a: 09\n", rule: ruleLeadingZero, path: "a"},
	{name: "double zero", in: "a: -00\n", rule: ruleLeadingZero, path: "a"},
	{name: "leading zero float", in: "a: 01.5\n", rule: ruleLeadingZero, path: "a"},

	// Refused: quoted scalars.
	{name: "bad hex escape", in: "a: \"x\\xZZ\"\n", rule: ruleBadEscape, path: "a", line: 1, col: 6},
	{name: "unknown escape", in: "a: \"\\q\"\n", rule: ruleSyntax, line: 1},
	{name: "lone high surrogate (goccy refuses)", in: "a: \"\\uD800x\"\n", rule: ruleSyntax, line: 1},
	{name: "lone low surrogate after text", in: "a: \"x\\uDC00\"\n", rule: ruleSurrogate, path: "a", line: 1, col: 6},
	{name: "lone low surrogate", in: "a: \"\\uDC00\"\n", rule: ruleSurrogate, path: "a"},
	{name: "beyond Unicode", in: "a: \"\\U00110000\"\n", rule: ruleSurrogate, path: "a"},
	{name: "escaped space before line break", in: "a: \"x\\ \n  y\"\n", rule: ruleQuoteDiffers, path: "a", line: 1},
	// goccy reads \xZZ as U+02CA; the check must not match it to the
	// earlier, valid scalar with that value.
	{name: "bad escape equal to an earlier scalar", in: "[\"\u02ca\", \"\\xZZ\"]\n", rule: ruleBadEscape, path: "[1]", line: 1, col: 8},
	{name: "bad escape in key", in: "k:\n  \"\\xZZ\": 1\n", rule: ruleBadEscape, path: "k", line: 2, col: 4},

	// Refused: characters.
	{name: "invalid UTF-8", in: "a: x\nb: \xff\n", rule: ruleNotUTF8, line: 2, col: 4},
	{name: "control character", in: "a: x\x01\n", rule: ruleBadChar, line: 1, col: 5},
	{name: "DEL", in: "a: \x7f\n", rule: ruleBadChar, line: 1, col: 4},
	{name: "C1 control", in: "a: \u0090\n", rule: ruleBadChar, line: 1, col: 4},
	{name: "bare carriage return", in: "a: 1\rb: 2\n", rule: ruleBareCR, line: 1, col: 5},
	{name: "byte order mark inside", in: "a: 1\n\uFEFFb: 2\n", rule: ruleMidDocBOM, line: 2, col: 1},
}

func TestConvert(t *testing.T) {
	for _, tc := range convertCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Convert([]byte(tc.in))
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("Convert(%q): %v", tc.in, err)
				}
				if string(got) != tc.want {
					t.Fatalf("Convert(%q)\n got %s\nwant %s", tc.in, got, tc.want)
				}
				return
			}
			checkRefused(t, tc, got, err)
		})
	}
}

// checkRefused checks that err is the *Error tc describes and that its text
// does not show the offending value.
func checkRefused(t *testing.T, tc convertCase, got []byte, err error) {
	t.Helper()
	if err == nil {
		if len(got) > 200 {
			got = append(got[:200:200], "..."...)
		}
		t.Fatalf("Convert(%q) = %s, want error %q", tc.in, got, tc.rule)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is %T, not *Error", err, err)
	}
	if e.Rule != tc.rule || e.Path != tc.path {
		t.Fatalf("Convert(%q): rule %q at path %q, want %q at %q", tc.in, e.Rule, e.Path, tc.rule, tc.path)
	}
	if tc.line != 0 && e.Line != tc.line {
		t.Errorf("line %d, want %d (%v)", e.Line, tc.line, err)
	}
	if tc.col != 0 && e.Column != tc.col {
		t.Errorf("column %d, want %d (%v)", e.Column, tc.col, err)
	}
	if tc.hide != "" && strings.Contains(err.Error(), tc.hide) {
		t.Errorf("error %q shows the offending text %q", err, tc.hide)
	}
	if got != nil {
		t.Errorf("output %q alongside the error", got)
	}
}

func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		want string
	}{
		{Error{Line: 12, Column: 5, Path: "capabilities[3]", Rule: ruleDuplicateKey}, "yaml: 12:5: capabilities[3]: duplicate mapping key"},
		{Error{Line: 1, Column: 1, Rule: ruleKeyNotString}, "yaml: 1:1: mapping key is not a string"},
		{Error{Rule: ruleEmptyDoc}, "yaml: empty document"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorPath(t *testing.T) {
	long := strings.Repeat("k", 100)
	for _, tc := range []struct {
		name, in, path string
	}{
		{"root key", "a: .inf\n", "a"},
		{"nested keys and indexes", "capabilities:\n- id: x\n- id: y\n  parameters:\n    type: .nan\n", "capabilities[1].parameters.type"},
		{"root sequence", "- 1\n- .inf\n", "[1]"},
		{"key needing quotes", "\"a b\": {c: .inf}\n", `["a b"].c`},
		{"key with a dot", "a.b: {c: .inf}\n", `["a.b"].c`},
		{"key with a quote", "'a\"b': .inf\n", `["a\"b"]`},
		{"long key cut short", long + ": .inf\n", `["` + strings.Repeat("k", maxPathSegmentBytes) + `..."]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Convert([]byte(tc.in))
			var e *Error
			if !errors.As(err, &e) || e.Path != tc.path {
				t.Fatalf("got %v, want path %q", err, tc.path)
			}
		})
	}
}

func TestOutputIsCompact(t *testing.T) {
	got, err := Convert([]byte("a:\n  - 1\n  - {b: 'x y'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[1,{"b":"x y"}]}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
