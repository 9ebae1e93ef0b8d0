package jcs

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		``, ` `, `null`, `true`, `false`, `0`, `-0`, `1.5e-7`, `1e21`, `1e400`, `1e-400`,
		`9007199254740993`, `0.1`, `""`, `"\u0000\u001f\"\\\/\b\f\n\r\t"`, `"\ud83d\ude00"`,
		`"\ud800"`, `"\udc00\ud800"`, "\"\u2028\u007f\"", "\"\xff\"", "\xef\xbb\xbf1",
		`[]`, `{}`, `[1,]`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `[01]`, `.5`, `+1`,
		"{\"\ue000\":1,\"\U00010000\":2}", `{"b":[{"y":1,"x":[true,null]}],"a":"x"}`,
		`[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`, `{"a" :1 , "b":[ 1 , 2 ] }`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("testdata/*/*.json")
	more, _ := filepath.Glob("testdata/cyberphone/*/*.json")
	for _, name := range append(files, more...) {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data, nil)
		_, exactErr := Parse(data, &Options{ExactNumbers: true})
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Rule == "" || se.Offset < 0 || se.Offset > len(data) {
				t.Fatalf("bad error %#v", err)
			}
			if exactErr == nil {
				t.Fatalf("ExactNumbers accepted what the default refused: %v", err)
			}
			// encoding/json checks the same grammar, so anything it
			// accepts we refuse only for a stricter rule, not as a
			// syntax error.
			if errors.Is(err, ErrSyntax) && json.Valid(data) {
				t.Fatalf("refused as syntax but encoding/json accepts it: %v", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted input that encoding/json refuses")
		}
		sameAsStdlib(t, data, v)

		c, err := v.AppendCanonical(nil)
		if err != nil {
			t.Fatalf("AppendCanonical of a parsed value: %v", err)
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form %q is not valid JSON", c)
		}
		c2, err := Canonicalize(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("not idempotent: %q -> %q, %v", c, c2, err)
		}
		// Canonical numbers are shortest round-trip forms, so the canonical
		// form always passes ExactNumbers.
		if _, err := Parse(c, &Options{ExactNumbers: true}); err != nil {
			t.Fatalf("canonical form fails ExactNumbers: %v", err)
		}
		// The indented form people read means the same document.
		ind := v.AppendIndent(nil)
		c3, err := Canonicalize(ind)
		if err != nil || !bytes.Equal(c, c3) {
			t.Fatalf("indented form %q canonicalizes to %q, %v; want %q", ind, c3, err, c)
		}
	})
}

// sameAsStdlib checks that v holds what encoding/json decodes from data.
func sameAsStdlib(t *testing.T, data []byte, v Value) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if path, ok := equalStd(v, want); !ok {
		t.Fatalf("value differs from encoding/json's at %s", path)
	}
}

func equalStd(v Value, w any) (string, bool) {
	switch w := w.(type) {
	case nil:
		return "", v.Kind == Null
	case bool:
		return "", v.Kind == Bool && v.Bool == w
	case json.Number:
		f, _ := strconv.ParseFloat(string(w), 64)
		return "", v.Kind == Number && v.Num == string(w) && math.Float64bits(v.Float) == math.Float64bits(f)
	case string:
		return "", v.Kind == String && v.Str == w
	case []any:
		if v.Kind != Array || len(v.Items) != len(w) {
			return "", false
		}
		for i := range w {
			if p, ok := equalStd(v.Items[i], w[i]); !ok {
				return "[" + strconv.Itoa(i) + "]" + p, false
			}
		}
		return "", true
	case map[string]any:
		if v.Kind != Object || len(v.Members) != len(w) {
			return "", false
		}
		for _, m := range v.Members {
			if p, ok := equalStd(m.Value, w[m.Name]); !ok {
				return strconv.Quote(m.Name) + p, false
			}
		}
		return "", true
	}
	return "", false
}

func FuzzFormatNumber(f *testing.F) {
	for _, x := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e21, 1e-7, 1e-6, 9007199254740993,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308, 333333333.33333329} {
		f.Add(math.Float64bits(x))
	}
	f.Add(uint64(0x7ff0000000000000))
	f.Add(uint64(0x7ff8000000000001))
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		s, err := FormatNumber(x)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if !errors.Is(err, ErrNonFinite) || s != "" {
				t.Fatalf("FormatNumber(%v) = %q, %v; want ErrNonFinite", x, s, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("FormatNumber(%v): %v", x, err)
		}
		back, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("FormatNumber(%v) = %q does not parse: %v", x, s, err)
		}
		if x == 0 {
			if s != "0" {
				t.Fatalf("FormatNumber(%v) = %q, want 0", x, s)
			}
		} else if back != x {
			t.Fatalf("FormatNumber(%v) = %q reads back as %v", x, s, back)
		}
		// The form is a JSON number that passes ExactNumbers and is its
		// own canonical form.
		c, err := Canonicalize([]byte(s))
		if err != nil || string(c) != s {
			t.Fatalf("Canonicalize(%q) = %q, %v", s, c, err)
		}
		if _, err := Parse([]byte(s), &Options{ExactNumbers: true}); err != nil {
			t.Fatalf("FormatNumber(%v) = %q fails ExactNumbers: %v", x, s, err)
		}
		// Its digits are the shortest that round-trip, as strconv finds them.
		var got, shortest decimal
		readDecimal(&got, s)
		readDecimal(&shortest, strconv.FormatFloat(math.Abs(x), 'e', -1, 64))
		if x != 0 && (got.n != shortest.n || got.digits != shortest.digits || got.exp != shortest.exp) {
			t.Fatalf("FormatNumber(%v) = %q has other digits than the shortest", x, s)
		}
	})
}
