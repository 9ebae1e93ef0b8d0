package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// settingsParams is the parameters schema of the Settings app's get_setting.
const settingsParams = `{"type": "object", "required": ["category", "key"], "additionalProperties": false,
  "properties": {"category": {"enum": ["appearance", "display", "sound", "network", "keyboard", "datetime"]},
  "key": {"type": "string", "pattern": "^[a-z_0-9]{1,64}$"}}}`

// compileForTest compiles a schema as a manifest's are: strictly parsed, canonical, then
// through the package's compiler. It returns nil when the schema is not a JSON object or
// does not compile.
func compileForTest(data []byte) *Schema {
	v, err := jcs.Parse(data, &jcs.Options{MaxDepth: MaxDepth, MaxBytes: MaxManifestBytes})
	if err != nil || v.Kind != jcs.Object {
		return nil
	}
	return newSchemaCompiler().compile(canonicalBytes(v), "parameters", &decoder{})
}

// decodeInstance decodes data each way a value reaches Validate: jcs.Parse then toAny
// (the IPC and MCP fronts, ValidateJSON) and encoding/json with UseNumber (what Validate's
// contract names). A way that refuses data is left out.
func decodeInstance(data []byte) []any {
	var out []any
	if v, err := jcs.Parse(data, &jcs.Options{MaxDepth: MaxDepth, MaxBytes: MaxManifestBytes}); err == nil {
		out = append(out, toAny(v))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil && !dec.More() {
		out = append(out, v)
	}
	return out
}

// agree checks the one rule of the fast path, that it never accepts what the library
// refuses, and that Validate answers as the library does. It returns both answers.
func agree(t *testing.T, s *Schema, v any) (fast, lib bool) {
	t.Helper()
	fast = s.fast != nil && s.fast.valid(v)
	lib, panicked := libraryValid(s, v)
	if panicked {
		// jsonschema v6.0.3 dereferences a nil *big.Rat when a number literal big.Rat
		// cannot read (1e-1000001: an exponent past 1e6) meets a bound. The fast path must
		// not answer for such a value either; any other panic is a failure.
		if fast || !hasUnreadableNumber(v) {
			t.Fatalf("the library panics (fast path valid=%v): %#v", fast, v)
		}
		t.Skip("the library panics on a number big.Rat cannot read")
	}
	if fast && !lib {
		t.Fatalf("false accept: the fast path says valid, the library says invalid: %#v", v)
	}
	if got := s.Validate(v, "params") == nil; got != lib {
		t.Fatalf("Validate says valid=%v, the library %v: %#v", got, lib, v)
	}
	return fast, lib
}

func libraryValid(s *Schema, v any) (valid, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return s.s.Validate(v) == nil, false
}

// hasUnreadableNumber reports whether v holds a json.Number that big.Rat cannot read.
func hasUnreadableNumber(v any) bool {
	switch v := v.(type) {
	case json.Number:
		_, ok := new(big.Rat).SetString(string(v))
		return !ok
	case []any:
		return slices.ContainsFunc(v, hasUnreadableNumber)
	case map[string]any:
		for _, m := range v {
			if hasUnreadableNumber(m) {
				return true
			}
		}
	}
	return false
}

type outcome int

const (
	fastValid outcome = iota // the fast path says valid
	slowValid                // the fast path declines, the library says valid
	rejected                 // the library says invalid (so the fast path declines)
	either                   // only the rule: no false accept
)

func (o outcome) String() string {
	return [...]string{"fast-valid", "slow-valid", "rejected", "either"}[o]
}

func check(t *testing.T, s *Schema, v any, want outcome) {
	t.Helper()
	fast, lib := agree(t, s, v)
	var got outcome
	switch {
	case fast:
		got = fastValid
	case lib:
		got = slowValid
	default:
		got = rejected
	}
	if want != either && got != want {
		t.Errorf("%#v: got %v, want %v", v, got, want)
	}
}

type instance struct {
	json string
	want outcome
}

var fastCases = []struct {
	name   string
	schema string
	in     []instance
}{
	{"settings", settingsParams, []instance{
		{`{"category":"display","key":"k1"}`, fastValid},
		{`{"key":"dark_mode","category":"appearance"}`, fastValid},
		{`{"ca\u0074egory":"display","key":"k"}`, fastValid},
		{`{"category":"Display","key":"k1"}`, rejected},
		{`{"category":"display"}`, rejected},
		{`{"key":"k"}`, rejected},
		{`{}`, rejected},
		{`{"category":"display","key":"k1","Key":"x"}`, rejected},
		{`{"Category":"display","key":"k1"}`, rejected},
		{`{"category":"display","KEY":"k1"}`, rejected},
		{`{"category":"display","\uff4b\uff45\uff59":"k1"}`, rejected}, // fullwidth "key"
		{`{"category":"display","\u212aey":"k1"}`, rejected},           // Kelvin sign
		{`{"category":"display","key ":"k1"}`, rejected},
		{`{"category":"display","key":"K"}`, rejected},
		{`{"category":"display","key":""}`, rejected},
		{`{"category":"display","key":"` + strings.Repeat("a", 64) + `"}`, fastValid},
		{`{"category":"display","key":"` + strings.Repeat("a", 65) + `"}`, rejected},
		{`{"category":"display","key":"a\n"}`, rejected},
		{`{"category":"display","key":null}`, rejected},
		{`{"category":null,"key":"a"}`, rejected},
		{`{"category":"display","key":1}`, rejected},
		{`{"category":["display"],"key":"a"}`, rejected},
		{`{"category":"display","key":"a","extra":null}`, rejected},
		{`null`, rejected},
		{`[]`, rejected},
		{`"display"`, rejected},
		{`{"category":"display","key":"a","key":"b"}`, either}, // jcs refuses, encoding/json keeps the last
	}},
	{"set-setting-any-value", `{"type":"object","required":["category","key","value"],"additionalProperties":false,
	  "properties":{"category":{"enum":["display"]},"key":{"type":"string"},"value":{}}}`, []instance{
		{`{"category":"display","key":"k","value":{"deep":[1,{"x":null}]}}`, fastValid},
		{`{"category":"display","key":"k","value":null}`, fastValid},
		{`{"category":"display","key":"k","value":1e400}`, either}, // jcs refuses a non-finite number
		{`{"category":"display","key":"k"}`, rejected},
	}},
	{"string-length", `{"type":"string","minLength":2,"maxLength":3}`, []instance{
		{`"ab"`, fastValid},
		{`"abc"`, fastValid},
		{`"a"`, rejected},
		{`"abcd"`, rejected},
		{`"é"`, rejected},   // one code point, two bytes
		{`"éé"`, fastValid}, // two code points, four bytes
		{`"éééé"`, rejected},
		{`"e\u0301"`, fastValid}, // two code points, one grapheme
		{`"😀😀😀"`, fastValid},     // three code points, twelve bytes
		{`"\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00"`, rejected},
		{`"\ud800"`, either}, // a lone surrogate: jcs refuses, encoding/json gives U+FFFD
		{`1`, rejected},
	}},
	{"integer", `{"type":"integer"}`, []instance{
		{`1`, fastValid},
		{`-0`, fastValid},
		{`0`, fastValid},
		{`999999999999999999`, fastValid},
		{`-999999999999999999`, fastValid},
		{`1000000000000000000`, fastValid},            // 19 digits: read as a big.Rat
		{`123456789012345678901234567890`, fastValid}, // and so are these
		{`1.0`, fastValid},                            // the library's integer is a value
		{`-0.0`, fastValid},
		{`1e0`, slowValid}, // an exponent: left to the library
		{`1E2`, slowValid},
		{`1.5e1`, slowValid},
		{`1.5`, rejected},
		{`0.1`, rejected},
		{`1.00000000000000000000000000000000000000001`, rejected},
		{`"1"`, rejected},
		{`true`, rejected},
		{`null`, rejected},
	}},
	{"integer-enum", `{"enum":[1,2,3,-7,1e30]}`, []instance{
		{`1`, fastValid},
		{`1.0`, fastValid},
		{`1.00`, fastValid},
		{`-7`, fastValid},
		{`1e0`, slowValid},
		{`1000000000000000000000000000000`, fastValid},
		{`1e30`, slowValid},
		{`4`, rejected},
		{`"1"`, rejected},
		{`true`, rejected},
		{`1.5`, rejected},
		{`[1]`, rejected},
	}},
	{"const-zero", `{"const":0}`, []instance{
		{`0`, fastValid},
		{`-0`, fastValid},
		{`0.0`, fastValid},
		{`-0.000`, fastValid},
		{`0e5`, slowValid},
		{`false`, rejected},
		{`null`, rejected},
		{`"0"`, rejected},
	}},
	{"const-null", `{"const":null}`, []instance{
		{`null`, fastValid},
		{`0`, rejected},
		{`false`, rejected},
		{`""`, rejected},
		{`{}`, rejected},
		{`[]`, rejected},
	}},
	{"mixed-enum", `{"enum":["a",true,null,2.5]}`, []instance{
		{`"a"`, fastValid},
		{`true`, fastValid},
		{`null`, fastValid},
		{`2.5`, fastValid},
		{`2.50`, fastValid},
		{`25e-1`, slowValid},
		{`false`, rejected},
		{`"A"`, rejected},
		{`2`, rejected},
		{`0`, rejected},
		{`{}`, rejected},
		{`["a"]`, rejected},
	}},
	{"fraction-enum", `{"enum":[0.5,1e30,-1e-7]}`, []instance{
		{`0.5`, fastValid},
		{`0`, rejected}, // neither 0.5 nor 1e30 is an integer of int64 size
		{`1`, rejected},
		{`-0.0000001`, fastValid},
		{`1000000000000000000000000000000`, fastValid},
	}},
	{"bounds", `{"type":"number","minimum":0.5,"exclusiveMaximum":10}`, []instance{
		{`1`, fastValid},
		{`0.5`, fastValid},
		{`9.999`, fastValid},
		{`0`, rejected},
		{`-0`, rejected},
		{`0.4999`, rejected},
		{`10`, rejected},
		{`10.0`, rejected},
		{`1e1`, rejected},
		{`99999999999999999999`, rejected},
		{`"5"`, rejected},
	}},
	{"integer-bounds", `{"type":"integer","minimum":-2.5,"maximum":2.5,"exclusiveMinimum":-3}`, []instance{
		{`-2`, fastValid},
		{`2`, fastValid},
		{`0`, fastValid},
		{`-3`, rejected},
		{`-3.0`, rejected},
		{`-2.9`, rejected},
		{`3`, rejected},
		{`2.5`, rejected},
		{`-2.0`, fastValid},
	}},
	{"huge-bounds", `{"minimum":1e20,"maximum":1e30}`, []instance{
		{`999999999999999999`, rejected},
		{`100000000000000000000`, fastValid},
		{`1e25`, slowValid},
		{`1000000000000000000000000000001`, rejected},
		{`"x"`, fastValid}, // bounds say nothing of a string
	}},
	{"negative-huge-bounds", `{"minimum":-1e30,"exclusiveMaximum":-1e20}`, []instance{
		{`-999999999999999999`, rejected},
		{`-100000000000000000001`, fastValid},
		{`-100000000000000000000`, rejected},
		{`0`, rejected},
	}},
	{"type-list", `{"type":["string","null"]}`, []instance{
		{`null`, fastValid},
		{`"x"`, fastValid},
		{`0`, rejected},
		{`{}`, rejected},
	}},
	{"number-or-boolean", `{"type":["number","boolean"]}`, []instance{
		{`1.5`, fastValid},
		{`1e999`, either}, // jcs refuses, encoding/json keeps the literal
		{`1e5`, fastValid},
		{`false`, fastValid},
		{`null`, rejected},
	}},
	{"required-unicode", `{"type":"object","required":["café"],"properties":{"café":{"type":"string"}}}`, []instance{
		{`{"café":"x"}`, fastValid},
		{`{"caf\u00e9":"x"}`, fastValid},
		{`{"cafe\u0301":"x"}`, rejected}, // the same text in NFD is another name
		{`{"CAFÉ":"x"}`, rejected},
		{`{"café":1}`, rejected},
	}},
	{"nested-additional", `{"type":"object","additionalProperties":{"type":"object","additionalProperties":{"type":"integer","maximum":9}}}`, []instance{
		{`{"a":{"b":1},"c":{}}`, fastValid},
		{`{}`, fastValid},
		{`{"a":{"b":"x"}}`, rejected},
		{`{"a":{"b":1.5}}`, rejected},
		{`{"a":{"b":10}}`, rejected},
		{`{"a":1}`, rejected},
		{`{"a":null}`, rejected},
	}},
	{"properties-count", `{"minProperties":1,"maxProperties":2,"properties":{"a":{"type":"boolean"}}}`, []instance{
		{`{"a":true}`, fastValid},
		{`{"b":"anything"}`, fastValid},
		{`{}`, rejected},
		{`{"a":true,"b":1,"c":2}`, rejected},
		{`{"a":1}`, rejected},
		{`[]`, fastValid},
	}},
	{"array", `{"type":"array","items":{"type":"string","maxLength":2},"minItems":1,"maxItems":3}`, []instance{
		{`["a"]`, fastValid},
		{`["a","bb","é"]`, fastValid},
		{`[]`, rejected},
		{`["abc"]`, rejected},
		{`["a","b","c","d"]`, rejected},
		{`[null]`, rejected},
		{`{"0":"a"}`, rejected},
	}},
	{"boolean-subschemas", `{"properties":{"a":false,"b":true},"additionalProperties":false}`, []instance{
		{`{}`, fastValid},
		{`{"b":{"x":[1,2,{"y":null}]}}`, fastValid},
		{`{"a":1}`, rejected},
		{`{"c":1}`, rejected},
		{`"not an object"`, fastValid},
	}},
	{"items-ignores-additional-items", `{"items":{"type":"integer"},"additionalItems":false}`, []instance{
		{`[1,2,3]`, fastValid},
		{`[1,"a"]`, rejected},
	}},
	{"empty", `{}`, []instance{
		{`1`, fastValid},
		{`1e300`, fastValid},
		{`{"a":[1,"b"]}`, fastValid},
		{`null`, fastValid},
	}},
	{"annotations", `{"title":"T","description":"D","default":{"a":1},"$comment":"c","readOnly":true,"examples":[1],
	  "type":"object","properties":{"a":{"type":"integer","default":"not checked"}}}`, []instance{
		{`{"a":1}`, fastValid},
		{`{"a":"x"}`, rejected},
	}},
	{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer","minimum":1,"exclusiveMinimum":true,"maximum":5}`, []instance{
		{`1`, rejected},
		{`2`, fastValid},
		{`5`, fastValid},
		{`6`, rejected},
		{`1.5`, rejected},
	}},
	{"draft-04-object", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","required":["a"],
	  "properties":{"a":{"enum":["x","y"]}},"additionalProperties":{"type":"number","maximum":3,"exclusiveMaximum":true}}`, []instance{
		{`{"a":"x"}`, fastValid},
		{`{"a":"x","b":2.9}`, fastValid},
		{`{"a":"x","b":3}`, rejected},
		{`{"a":"z"}`, rejected},
	}},
	{"draft-06-const", `{"$schema":"http://json-schema.org/draft-06/schema#","const":"on"}`, []instance{
		{`"on"`, fastValid},
		{`"off"`, rejected},
	}},
	{"draft-2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","required":["a"],
	  "properties":{"a":{"type":"boolean"},"n":{"type":"array","items":{"const":1}}},"maxProperties":2,"deprecated":true}`, []instance{
		{`{"a":true}`, fastValid},
		{`{"a":true,"n":[1,1.0]}`, fastValid},
		{`{"a":true,"n":[2]}`, rejected},
		{`{"a":true,"b":1,"c":2}`, rejected},
	}},
	{"draft-2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","items":{"type":"integer","exclusiveMinimum":0}}`, []instance{
		{`[1,2]`, fastValid},
		{`[]`, fastValid},
		{`[1,"a"]`, rejected},
		{`[0]`, rejected},
		{`[0.0]`, rejected},
		{`[1,0.5]`, rejected},
	}},
	{"draft-2020-12-format-annotation", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"string","format":"email"}`, []instance{
		{`"not an email"`, fastValid}, // 2020-12 only annotates format by default
		{`1`, rejected},
	}},
}

func TestFastCheck(t *testing.T) {
	for _, tc := range fastCases {
		t.Run(tc.name, func(t *testing.T) {
			s := compileForTest([]byte(tc.schema))
			if s == nil {
				t.Fatal("does not compile")
			}
			if s.fast == nil {
				t.Fatal("no fast path")
			}
			for _, in := range tc.in {
				vs := decodeInstance([]byte(in.json))
				if len(vs) == 0 {
					t.Fatalf("%s: decodes no way", in.json)
				}
				for _, v := range vs {
					check(t, s, v, in.want)
				}
			}
		})
	}
}

// TestFastCheckGoValues gives Validate what no JSON decoder produces: invalid UTF-8,
// number types other than json.Number, json.Number that is not a JSON literal, and types
// the library does not know.
func TestFastCheckGoValues(t *testing.T) {
	str := compileForTest([]byte(`{"type":"string","minLength":2,"maxLength":3,"pattern":"^[^x]*$"}`))
	for _, tc := range []struct {
		v    any
		want outcome
	}{
		{"\xff\xfe", fastValid},         // two invalid bytes are two characters
		{"\xe2\x82", fastValid},         // a truncated sequence: two
		{"\xe2\x82\xac", rejected},      // "€" is one
		{"ab\xff", fastValid},           // three
		{"ab\xe2\x82", rejected},        // four
		{"\xed\xa0\x80", fastValid},     // an encoded surrogate: three bytes, each invalid
		{"\xf0\x9f\x98\x80x", rejected}, // the pattern
	} {
		check(t, str, tc.v, tc.want)
	}

	num := compileForTest([]byte(`{"type":"object","properties":{"n":{"type":"integer","maximum":5}}}`))
	for _, tc := range []struct {
		v    any
		want outcome
	}{
		{map[string]any{"n": json.Number("5")}, fastValid},
		{map[string]any{"n": json.Number("6")}, rejected},
		{map[string]any{"n": 5.0}, slowValid}, // float64: left to the library
		{map[string]any{"n": 6.0}, rejected},
		{map[string]any{"n": 5}, slowValid},
		{map[string]any{"n": int64(5)}, slowValid},
		{map[string]any{"n": float32(5)}, slowValid},
		{map[string]any{"n": math.NaN()}, rejected},
		{map[string]any{"n": json.Number("0x5")}, either},
		{map[string]any{"n": json.Number("5/1")}, either},
		{map[string]any{"n": json.Number("+5")}, either},
		{map[string]any{"n": json.Number("05")}, either},
		{map[string]any{"n": json.Number("")}, either},
		{map[string]any{"n": json.Number(" 5")}, either},
		{map[string]any{"n": json.Number("5.")}, either},
		{map[string]any{"n": json.Number("abc")}, either},
		{map[string]any{"n": struct{}{}}, rejected},
		{map[string]any{"n": []string{"x"}}, rejected},
		{map[string]any{"m": struct{}{}}, fastValid}, // no schema looks at "m"
		{map[string]string{"n": "x"}, rejected},
		{map[string]json.Number{"n": "1"}, rejected},
		{struct{ N int }{1}, rejected},
	} {
		check(t, num, tc.v, tc.want)
	}

	// A json.Number the library never parses (type number, no bound) is valid to it; the
	// fast path still wants a JSON literal.
	loose := compileForTest([]byte(`{"properties":{"n":{"type":"number"},"t":true}}`))
	check(t, loose, map[string]any{"n": json.Number("abc")}, slowValid)
	check(t, loose, map[string]any{"n": json.Number("1e5")}, fastValid)
	check(t, loose, map[string]any{"t": json.Number("abc")}, slowValid)
	check(t, loose, map[string]any{"t": 1.5}, slowValid)

	// The library cannot read 1e-1000001 (it panics comparing it with a bound); the fast
	// path leaves every literal with an exponent to it, bound or none.
	tiny := map[string]any{"n": json.Number("1e-1000001")}
	if num.fast.valid(tiny) || !loose.fast.valid(tiny) {
		t.Error("the fast path reads 1e-1000001 against a bound, or refuses it with none")
	}
}

// TestFastCheckUnsupported: a schema using any keyword outside the subset, anywhere, gets
// no fast path, and the library still answers.
func TestFastCheckUnsupported(t *testing.T) {
	for _, schema := range []string{
		`{"$ref":"#/definitions/x","definitions":{"x":{}}}`,
		`{"properties":{"a":{"$ref":"#"}}}`,
		`{"format":"email"}`,
		`{"properties":{"a":{"format":"date-time"}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","format":"ipv4"}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{}}}`,
		`{"allOf":[{}]}`,
		`{"anyOf":[{}]}`,
		`{"oneOf":[{}]}`,
		`{"not":{}}`,
		`{"if":{},"then":{}}`,
		`{"patternProperties":{"^a":{}}}`,
		`{"propertyNames":{"maxLength":3}}`,
		`{"dependencies":{"a":["b"]}}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","dependentRequired":{"a":["b"]}}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","unevaluatedProperties":false}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","unevaluatedItems":false}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{}]}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","$dynamicRef":"#"}`,
		`{"items":[{}]}`,
		`{"contains":{}}`,
		`{"uniqueItems":true}`,
		`{"multipleOf":2}`,
		`{"enum":[[1]]}`,
		`{"enum":["a",{"b":1}]}`,
		`{"const":{"a":1}}`,
		`{"const":[]}`,
		`{"additionalProperties":{"not":{}}}`,
		`{"items":{"items":{"allOf":[{}]}}}`,
		nested(maxFastDepth + 1),
	} {
		s := compileForTest([]byte(schema))
		if s == nil {
			t.Fatalf("%s: does not compile", schema)
		}
		if s.fast != nil {
			t.Errorf("%s: has a fast path", schema)
		}
	}
	if s := compileForTest([]byte(nested(maxFastDepth))); s == nil || s.fast == nil {
		t.Errorf("a schema %d deep has no fast path", maxFastDepth)
	}
}

// nested is an object schema whose properties nest depth levels below the root.
func nested(depth int) string {
	return strings.Repeat(`{"properties":{"a":`, depth) + `{}` + strings.Repeat(`}}`, depth)
}

// TestFastFieldsKnown lists every field of the library's compiled Schema: each is either
// one the fast path handles or ignores (fastFields) or one it refuses. A field this list
// does not know means the library changed: read what the new field asserts before adding
// it here. (At run time such a field, when set, already leaves a schema without a fast
// path.)
func TestFastFieldsKnown(t *testing.T) {
	refused := map[string]bool{
		"Ref": true, "RecursiveRef": true, "DynamicRef": true,
		"Not": true, "AllOf": true, "AnyOf": true, "OneOf": true, "If": true, "Then": true, "Else": true,
		"Format": true, "PropertyNames": true, "PatternProperties": true,
		"Dependencies": true, "DependentRequired": true, "DependentSchemas": true,
		"UnevaluatedProperties": true, "UnevaluatedItems": true,
		"UniqueItems": true, "Contains": true, "MinContains": true, "MaxContains": true,
		"AdditionalItems": true, "PrefixItems": true,
		"ContentEncoding": true, "ContentMediaType": true, "ContentSchema": true,
		"MultipleOf": true, "Extensions": true,
	}
	for i := range schemaType.NumField() {
		f := schemaType.Field(i)
		if fastFields[f.Name] == refused[f.Name] {
			t.Errorf("jsonschema.Schema.%s (%s) is unknown to the fast path, or listed twice", f.Name, f.Type)
		}
	}
	for name := range fastFields {
		if _, ok := schemaType.FieldByName(name); !ok {
			t.Errorf("fastFields names %s, which jsonschema.Schema no longer has", name)
		}
	}
}

// TestFastRefusesEveryOtherField sets each exported field outside fastFields, one at a
// time, on an otherwise supported schema: each must leave it without a fast path.
func TestFastRefusesEveryOtherField(t *testing.T) {
	base := compileForTest([]byte(settingsParams))
	if base == nil || base.fast == nil {
		t.Fatal("the Settings schema has no fast path")
	}
	for i := range schemaType.NumField() {
		f := schemaType.Field(i)
		if fastFields[f.Name] || !f.IsExported() {
			continue
		}
		s := new(jsonschema.Schema)
		*s = *base.s // a shallow copy: the tree is shared, not changed
		fv := reflect.ValueOf(s).Elem().Field(i)
		switch fv.Kind() {
		case reflect.Pointer:
			fv.Set(reflect.New(f.Type.Elem()))
		case reflect.Slice:
			fv.Set(reflect.MakeSlice(f.Type, 1, 1))
		case reflect.Map:
			fv.Set(reflect.MakeMap(f.Type))
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Interface:
			fv.Set(reflect.ValueOf(true))
		default:
			t.Fatalf("%s: cannot set a %s", f.Name, f.Type)
		}
		if newFastSchema(s) != nil {
			t.Errorf("%s set: the schema still has a fast path", f.Name)
		}
	}
}

// TestFastCheckAllocs: the valid path of the Settings schema, and of plain integers,
// booleans and null, allocates nothing.
func TestFastCheckAllocs(t *testing.T) {
	s := compileForTest([]byte(settingsParams))
	v := map[string]any{"category": "display", "key": "dark_mode"}
	if n := testing.AllocsPerRun(100, func() {
		if err := s.Validate(v, "params"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
	scalars := compileForTest([]byte(`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":100},
	  "e":{"enum":[1,2,"x",null,true]},"b":{"enum":[false,true]},"z":{"type":"null","const":null}}}`))
	w := map[string]any{"n": json.Number("42"), "e": json.Number("2"), "b": true, "z": nil}
	if n := testing.AllocsPerRun(100, func() {
		if !scalars.fast.valid(w) {
			t.Fatal("not fast-valid")
		}
	}); n != 0 {
		t.Errorf("scalars: %v allocations", n)
	}
}

// TestFastCheckRandom holds the fast path against the library on schemas and instances
// drawn from the supported keywords and from values near their edges, many more of which
// compile and meet than the fuzzer's mutations of JSON text reach.
func TestFastCheckRandom(t *testing.T) {
	schemas, instances := 3000, 12
	if testing.Short() {
		schemas = 300
	}
	r := rand.New(rand.NewPCG(1, 2))
	var compiled, fastOK, libOK int
	for range schemas {
		s := compileForTest([]byte(genSchema(r, 0, true)))
		if s == nil {
			continue
		}
		compiled++
		for range instances {
			for _, v := range decodeInstance([]byte(genValue(r, 0))) {
				fast, lib := agree(t, s, v)
				if fast {
					fastOK++
				}
				if lib {
					libOK++
				}
			}
		}
	}
	t.Logf("%d schemas compiled; %d instances the library accepts, %d of them on the fast path", compiled, libOK, fastOK)
	if compiled < schemas/2 || fastOK < libOK/4 {
		t.Errorf("the generators no longer exercise the fast path")
	}
}

var (
	genDrafts = []string{"", "", "", `"$schema":"http://json-schema.org/draft-04/schema#"`,
		`"$schema":"http://json-schema.org/draft-06/schema#"`, `"$schema":"http://json-schema.org/draft-07/schema#"`,
		`"$schema":"https://json-schema.org/draft/2019-09/schema"`, `"$schema":"https://json-schema.org/draft/2020-12/schema"`}
	genTypes    = []string{`"null"`, `"boolean"`, `"number"`, `"integer"`, `"string"`, `"array"`, `"object"`}
	genNumbers  = []string{"0", "-0", "1", "2", "-1", "1.5", "-2.5", "0.1", "2.5", "1e20", "-1e20", "1e-7", "9007199254740993", "999999999999999999", "1000000000000000000"}
	genBounds   = append([]string{"true", "false"}, genNumbers...)
	genValueNum = append([]string{"1.0", "1e0", "2.50", "-0.0", "25e-1", "1E2", "1e400", "100000000000000000000", "-999999999999999999", "0.30000000000000004"}, genNumbers...)
	genStrings  = []string{`""`, `"a"`, `"A"`, `"ab"`, `"b"`, `"é"`, `"e\u0301"`, `"aaa"`, `"😀"`, `"abcd"`, `"\ud800"`, `"a\n"`}
	genNames    = []string{`"a"`, `"b"`, `"A"`, `"é"`, `"e\u0301"`}
	genPatterns = []string{`"^a"`, `"b$"`, `"^[a-z]*$"`, `"é"`, `"^.{2}$"`, `"^\\p{L}+$"`}
	genOthers   = []string{`"multipleOf":2`, `"uniqueItems":true`, `"format":"email"`, `"not":{"type":"null"}`}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// genSchema writes a random schema of supported keywords (and, rarely, one that is not).
func genSchema(r *rand.Rand, depth int, root bool) string {
	if !root && r.IntN(8) == 0 {
		return pick(r, []string{"true", "false"})
	}
	var kws []string
	if root {
		if d := pick(r, genDrafts); d != "" {
			kws = append(kws, d)
		}
	}
	add := func(oneIn int, kw func() string) {
		if r.IntN(oneIn) == 0 {
			kws = append(kws, kw())
		}
	}
	scalar := func() string {
		switch r.IntN(4) {
		case 0:
			return pick(r, []string{"null", "true", "false"})
		case 1:
			return pick(r, genStrings)
		}
		return pick(r, genNumbers)
	}
	add(2, func() string {
		if r.IntN(3) == 0 {
			return `"type":[` + pick(r, genTypes) + `,` + pick(r, genTypes) + `]`
		}
		return `"type":` + pick(r, genTypes)
	})
	add(5, func() string {
		items := []string{scalar()}
		for r.IntN(2) == 0 {
			items = append(items, scalar())
		}
		return `"enum":[` + strings.Join(items, ",") + `]`
	})
	add(10, func() string { return `"const":` + scalar() })
	add(5, func() string { return `"minLength":` + fmt.Sprint(r.IntN(4)) })
	add(5, func() string { return `"maxLength":` + fmt.Sprint(r.IntN(4)) })
	add(6, func() string { return `"pattern":` + pick(r, genPatterns) })
	add(4, func() string { return `"minimum":` + pick(r, genNumbers) })
	add(4, func() string { return `"maximum":` + pick(r, genNumbers) })
	add(5, func() string { return `"exclusiveMinimum":` + pick(r, genBounds) })
	add(5, func() string { return `"exclusiveMaximum":` + pick(r, genBounds) })
	add(6, func() string { return `"minItems":` + fmt.Sprint(r.IntN(3)) })
	add(6, func() string { return `"maxItems":` + fmt.Sprint(r.IntN(3)) })
	add(6, func() string { return `"minProperties":` + fmt.Sprint(r.IntN(3)) })
	add(6, func() string { return `"maxProperties":` + fmt.Sprint(r.IntN(3)) })
	add(20, func() string { return pick(r, genOthers) })
	if depth < 3 {
		add(2, func() string {
			var props []string
			for _, n := range genNames {
				if r.IntN(3) == 0 {
					props = append(props, n+":"+genSchema(r, depth+1, false))
				}
			}
			return `"properties":{` + strings.Join(props, ",") + `}`
		})
		add(3, func() string {
			var req []string
			for _, n := range genNames {
				if r.IntN(3) == 0 {
					req = append(req, n)
				}
			}
			return `"required":[` + strings.Join(req, ",") + `]`
		})
		add(3, func() string {
			return `"additionalProperties":` + pick(r, []string{"true", "false", genSchema(r, depth+1, false)})
		})
		add(4, func() string { return `"items":` + genSchema(r, depth+1, false) })
	}
	return "{" + strings.Join(kws, ",") + "}"
}

// genValue writes a random JSON value from values near the generated schemas' edges.
func genValue(r *rand.Rand, depth int) string {
	n := 6
	if depth >= 3 {
		n = 4
	}
	switch r.IntN(n) {
	case 0:
		return pick(r, []string{"null", "true", "false"})
	case 1:
		return pick(r, genValueNum)
	case 2, 3:
		return pick(r, genStrings)
	case 4:
		items := make([]string, r.IntN(4))
		for i := range items {
			items[i] = genValue(r, depth+1)
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	var members []string
	for _, name := range genNames {
		if r.IntN(2) == 0 {
			members = append(members, name+":"+genValue(r, depth+1))
		}
	}
	return "{" + strings.Join(members, ",") + "}"
}

// FuzzFastCheck holds the fast path against the library: for any schema that compiles and
// any instance, decoded each way the gateway decodes one, the fast path never says valid
// where the library says invalid.
func FuzzFastCheck(f *testing.F) {
	for _, tc := range fastCases {
		for _, in := range tc.in {
			f.Add(tc.schema, in.json)
		}
	}
	for _, schema := range []string{
		`{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":100},"cursor":{"type":"string","maxLength":256}},"additionalProperties":false}`,
		`{"type":"object","required":["path"],"properties":{"path":{"type":"string","minLength":1,"pattern":"^/"},"recursive":{"type":"boolean","default":false}}}`,
		`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":4}}}`,
		`{"type":"object","properties":{"ratio":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","properties":{"x":{"type":"number","minimum":-1.5,"exclusiveMinimum":true}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","items":{"enum":[0,0.5,-1e-7,12345678901234567890]}}`,
		`{"allOf":[{"type":"string"}],"minLength":1}`,
	} {
		f.Add(schema, `{"limit":10,"cursor":"abc","path":"/x","tags":["a"],"ratio":0.5,"x":-1}`)
		f.Add(schema, `[0,0.5,-1e-7,1.2345678901234567890e19,"x"]`)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		f.Add(genSchema(r, 0, true), genValue(r, 0))
	}
	f.Fuzz(func(t *testing.T, schema, instance string) {
		s := compileForTest([]byte(schema))
		if s == nil {
			return
		}
		for _, v := range decodeInstance([]byte(instance)) {
			agree(t, s, v)
		}
	})
}

// BenchmarkValidateFast validates Settings params never seen before, with the fast path
// (fast) and with the library alone (library).
func BenchmarkValidateFast(b *testing.B) {
	s := compileForTest([]byte(settingsParams))
	if s == nil || s.fast == nil {
		b.Fatal("the Settings schema has no fast path")
	}
	const n = 1 << 12
	vs := make([]any, n)
	for i := range vs {
		vs[i] = map[string]any{"category": "display", "key": fmt.Sprintf("k%d", i)}
	}
	for _, bc := range []struct {
		name string
		s    *Schema
	}{
		{"fast", s},
		{"library", &Schema{s: s.s}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := bc.s.Validate(vs[i%n], "params"); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// A number the library cannot read (it panics on 1e-1000001 against a bound) is refused as
// one that cannot be checked: params come from agents, and no value may crash a call.
func TestValidateRefusesWhatTheLibraryCannotRead(t *testing.T) {
	s := compileForTest([]byte(`{"properties":{"n":{"minimum":0}}}`))
	for _, in := range []string{`{"n":1e-1000001}`, `{"n":-1e-1000001}`} {
		err := s.ValidateJSON([]byte(in), "params")
		var ps Problems
		if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != "params" || ps[0].Rule != "cannot be checked against the schema" {
			t.Errorf("%s: %v", in, err)
		}
	}
	if err := s.ValidateJSON([]byte(`{"n":1e-5}`), "params"); err != nil {
		t.Errorf("a readable small number: %v", err)
	}
}
