package jcs

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func TestAppendIndent(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"scalar", `  1.50E+2 `, `1.50E+2`},
		{"empty containers", `{"a":[],"b":{}}`, "{\n  \"a\": [],\n  \"b\": {}\n}"},
		{"received order and literals", `{"z":1.0,"a":[true,null,"x\u00e9\n"],"m":{"k":-0}}`,
			"{\n  \"z\": 1.0,\n  \"a\": [\n    true,\n    null,\n    \"xé\\n\"\n  ],\n  \"m\": {\n    \"k\": -0\n  }\n}"},
		{"nested arrays", `[[1,[2]]]`, "[\n  [\n    1,\n    [\n      2\n    ]\n  ]\n]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse([]byte(tt.in), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := v.AppendIndent(nil)
			if string(got) != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
			// What people read must parse back to the same canonical form.
			c1, _ := Canonicalize([]byte(tt.in))
			c2, err := Canonicalize(got)
			if err != nil || string(c1) != string(c2) {
				t.Fatalf("indented form reads differently: %s vs %s (%v)", c1, c2, err)
			}
		})
	}
}

func TestAppendIndentHandBuilt(t *testing.T) {
	tests := []struct {
		name string
		v    Value
		want string
	}{
		{"empty Num uses Float", Value{Kind: Number, Float: 1e21}, `1e+21`},
		{"invalid Num uses Float", Value{Kind: Number, Num: "1,5", Float: 1.5}, `1.5`},
		{"non-finite without Num", Value{Kind: Number, Float: math.NaN()}, `null`},
		{"invalid UTF-8", Value{Kind: String, Str: "a\xffb"}, "\"a\ufffdb\""},
		{"invalid UTF-8 name", Value{Kind: Object, Members: []Member{{"\xc3", Value{}}}}, "{\n  \"\ufffd\": null\n}"},
		{"undefined kind", Value{Kind: 200}, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.v.AppendIndent([]byte("x"))
			if string(got) != "x"+tt.want {
				t.Fatalf("got %q, want %q", got, "x"+tt.want)
			}
			if !json.Valid(got[1:]) {
				t.Fatalf("%q is not valid JSON", got[1:])
			}
		})
	}
}

// TestAppendIndentSelfContaining checks that a Value containing itself is
// written down to MaxDepthCeiling and no further.
func TestAppendIndentSelfContaining(t *testing.T) {
	got := selfContaining().AppendIndent(nil)
	if n := bytes.Count(got, []byte("[")); n != MaxDepthCeiling/2 {
		t.Errorf("%d arrays, want %d", n, MaxDepthCeiling/2)
	}
	if n := bytes.Count(got, []byte("{")); n != MaxDepthCeiling/2 {
		t.Errorf("%d objects, want %d", n, MaxDepthCeiling/2)
	}
	if n := bytes.Count(got, []byte(`"x": null`)); n != 1 {
		t.Errorf("%d nulls at the bottom, want 1", n)
	}
}
