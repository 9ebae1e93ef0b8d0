package jcs

import (
	"strconv"
	"strings"
	"testing"
)

// benchDocument builds a manifest-like document of about 60 KB: nested
// objects in non-canonical order, escaped and non-ASCII strings, integers
// and fractions.
func benchDocument() []byte {
	var b strings.Builder
	b.WriteString(`{"version": 3, "name": "bench", "description": "caf\u00e9 \u2014 \"quoted\"\n", "capabilities": [`)
	for i := 0; b.Len() < 60_000; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		n := strconv.Itoa(i)
		b.WriteString(`{"id": "files.read.` + n + `", "title": "Read file ` + n + ` — ünïcödé 😀",`)
		b.WriteString(` "weight": ` + strconv.FormatFloat(float64(i)*1.25+0.1, 'g', -1, 64) + `, "limit": ` + strconv.Itoa(i*1000) + `,`)
		b.WriteString(` "parameters": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string", "maxLength": 4096}, "offset": {"type": "integer", "minimum": 0}}},`)
		b.WriteString(` "enabled": true, "note": null, "escapes": "tab\tnew\\line\u0001"}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func BenchmarkCanonicalize(b *testing.B) {
	doc := benchDocument()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonicalize(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseExact(b *testing.B) {
	doc := benchDocument()
	opts := &Options{ExactNumbers: true}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(doc, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendCanonical(b *testing.B) {
	v, err := Parse(benchDocument(), nil)
	if err != nil {
		b.Fatal(err)
	}
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = v.AppendCanonical(dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseSmall measures Parse of a call's params: the document parsed several times
// on every call's path.
func BenchmarkParseSmall(b *testing.B) {
	data := []byte(`{"category":"display","key":"brightness"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, nil); err != nil {
			b.Fatal(err)
		}
	}
}
