package manifest

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"runtime/debug"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path of Schema.Validate.
//
// The schema library answers a small schema in a microsecond or more and several hundred
// bytes of garbage, most of it building the error report a valid value never needs. A
// fastSchema is a precompiled checker for schemas made only of a common subset of keywords
// that can say one thing: "valid". When it cannot say that (a value it does not know, a
// rule that fails, a number it will not compute), Validate asks the library as before, so
// every rejection and every error report is still the library's. The one way the fast path
// can be wrong is a false accept; each rule below is the library's own test (v6.0.3,
// validator.go), run on the compiled schema the library built, and FuzzFastCheck holds the
// two side by side.
//
// What is supported, per schema node: boolean schemas; type; enum and const of null,
// boolean, string and number values; properties, required, additionalProperties (a boolean
// or a supported schema), minProperties, maxProperties; minItems, maxItems and items as one
// schema; minLength, maxLength, pattern; minimum, maximum, exclusiveMinimum,
// exclusiveMaximum; and the annotations, which assert nothing. Any other field of the
// compiled jsonschema.Schema that is set, anywhere in the tree, leaves the whole schema
// without a fast path (see fastFields): $ref, the combinators, format, patternProperties,
// uniqueItems, multipleOf, the unevaluated keywords, vocabulary extensions, and any field a
// later version of the library adds. Its bounds are in limits.go.
//
// Kept, and pinned to the library's version (measured 2026-12-01, docs/performance.md): a
// decision with params never seen before (BenchmarkDecisionCachedToken/new-params) takes
// 1.7-2.2 µs and 7 allocations with it, 2.4-3.0 µs and 20 without, beside 1.4-1.6 µs for the
// same decision with the params' check remembered, its floor: it takes the schema check from
// about 1.1 µs over that floor to 0.4, and keeps the decision within the gateway's goal of
// 2 µs. The check alone is 0.19 µs and no allocation against 0.86-0.94 µs and 12. The price is
// that it reads the library's compiled Schema, unexported bookkeeping included, by reflection,
// and follows the meaning of its fields, which no API promises. So it is held to the one
// version it was written and fuzzed against: TestFastPathPinned fails when go.mod names
// another version of the library or replaces it, and when the Schema struct's fields (names
// and types, in order) differ from the ones read here; and a binary built with any other
// version (a program that imports this package and selects a newer library) runs without the
// fast path (fastPathOn), which costs only speed. Upgrading the library means reading its
// validator again, rule by rule, against the code below, then moving both pins.

// The schema library the fast path was written against: its module path and version.
const (
	fastLibraryPath    = "github.com/santhosh-tekuri/jsonschema/v6"
	fastLibraryVersion = "v6.0.3"
)

// fastPathOn is whether this binary may use the fast path: only when it was built with the
// library version the fast path was written against (fastLibraryIn).
var fastPathOn = fastLibraryIn(debug.ReadBuildInfo())

// fastLibraryIn reports whether the build bi records fastLibraryVersion of the library,
// unreplaced. A build without build information cannot say, and is refused. A build that
// records no dependency at all is a test binary (go test stamps none): there go.mod decides
// which version is built, and TestFastPathPinned holds go.mod to fastLibraryVersion.
func fastLibraryIn(bi *debug.BuildInfo, ok bool) bool {
	if !ok || bi == nil {
		return false
	}
	if len(bi.Deps) == 0 {
		return true
	}
	for _, d := range bi.Deps {
		if d != nil && d.Path == fastLibraryPath {
			return d.Version == fastLibraryVersion && d.Replace == nil
		}
	}
	return false
}

const (
	// smallIntDigits is the most digits of a plain integer literal read as an int64: every
	// such literal lies strictly between -1e18 and 1e18.
	smallIntDigits = 18
	smallIntLimit  = int64(1e18)
)

// fastFields names every field of jsonschema.Schema the fast path may leave set: the fields
// it checks (fastSchema follows each), the annotations and identifiers (which assert
// nothing while no $ref, $dynamicRef or $recursiveRef is in the tree, and none may be), and
// the library's own bookkeeping. Every other field, including any added by a later version
// of the library, must hold its zero value, or the schema has no fast path.
var fastFields = map[string]bool{
	// checked
	"Bool": true, "Types": true, "Enum": true, "Const": true,
	"Properties": true, "Required": true, "AdditionalProperties": true,
	"MinProperties": true, "MaxProperties": true,
	"MinItems": true, "MaxItems": true, "Items": true, "Items2020": true,
	"MinLength": true, "MaxLength": true, "Pattern": true,
	"Minimum": true, "Maximum": true, "ExclusiveMinimum": true, "ExclusiveMaximum": true,
	// annotations and identifiers
	"DraftVersion": true, "Location": true, "ID": true, "Anchor": true,
	"DynamicAnchor": true, "RecursiveAnchor": true,
	"Title": true, "Description": true, "Default": true, "Comment": true,
	"ReadOnly": true, "WriteOnly": true, "Examples": true, "Deprecated": true,
	// bookkeeping: the schema's own location and resource, the anchors $dynamicRef
	// resolves (none in the tree), and what unevaluated* may skip (none in the tree).
	"up": true, "resource": true, "dynamicAnchors": true,
	"allPropsEvaluated": true, "allItemsEvaluated": true, "numItemsEvaluated": true,
}

var schemaType = reflect.TypeFor[jsonschema.Schema]()

// onlyFastFields reports whether every field of s outside fastFields is zero. Extensions
// may hold the param classes (classes.go), which assert nothing; any other extension leaves
// the schema without a fast path.
func onlyFastFields(s *jsonschema.Schema) bool {
	rv := reflect.ValueOf(s).Elem()
	for i := range schemaType.NumField() {
		name := schemaType.Field(i).Name
		if name == "Extensions" && onlyClassExtensions(s.Extensions) {
			continue
		}
		if !fastFields[name] && !rv.Field(i).IsZero() {
			return false
		}
	}
	return true
}

func onlyClassExtensions(exts []jsonschema.SchemaExt) bool {
	for _, e := range exts {
		if _, ok := e.(formatClass); !ok {
			return false
		}
	}
	return true
}

// JSON types, as bits of fastSchema.types.
const (
	tNull uint8 = 1 << iota
	tBoolean
	tNumber
	tInteger
	tString
	tArray
	tObject
)

var typeBits = map[string]uint8{
	"null": tNull, "boolean": tBoolean, "number": tNumber, "integer": tInteger,
	"string": tString, "array": tArray, "object": tObject,
}

// additional is what a fastSchema says of members outside its properties.
type additional uint8

const (
	addAny    additional = iota // absent or true
	addNone                     // false
	addSchema                   // a subschema
)

// fastSchema is one precompiled schema node. It is immutable once built and safe for
// concurrent use. A negative bound means none.
type fastSchema struct {
	never  bool  // the false schema
	always bool  // the true schema
	types  uint8 // 0: any type

	hasConst bool
	konst    fastConst
	hasEnum  bool
	enum     []fastConst

	props                    map[string]*fastSchema
	required                 []string
	add                      additional
	addSchema                *fastSchema
	minProps, maxProps       int
	items                    *fastSchema
	minItems, maxItems       int
	minLen, maxLen           int
	pattern                  jsonschema.Regexp
	minimum, maximum         *big.Rat
	exclMinimum, exclMaximum *big.Rat
	// lo and hi are the bounds as integers: a plain integer literal x (|x| < 1e18) meets
	// them all exactly when lo <= x <= hi.
	lo, hi int64
	// numeric: checking a number needs more than its type: the "integer" type without
	// "number", a bound, a const or an enum.
	numeric bool
}

// fastConst is one value of an enum or const: null, a boolean, a string or a number.
type fastConst struct {
	t   uint8 // tNull, tBoolean, tString or tNumber
	b   bool
	s   string
	r   *big.Rat // a number, as the library reads it
	i   int64    // a number that is an integer of |i| < 1e18
	isI bool
}

// newFastSchema builds the fast path of s, or returns nil when s uses anything it does not
// support.
func newFastSchema(s *jsonschema.Schema) *fastSchema {
	if !fastPathOn {
		return nil
	}
	n := 0
	f, ok := buildFast(s, 0, &n)
	if !ok {
		return nil
	}
	return f
}

func buildFast(s *jsonschema.Schema, depth int, n *int) (*fastSchema, bool) {
	*n++
	if s == nil || depth > maxFastDepth || *n > maxFastNodes || !onlyFastFields(s) {
		return nil, false
	}
	f := &fastSchema{minProps: -1, maxProps: -1, minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	if s.Bool != nil {
		// The library looks at nothing else of a boolean schema.
		f.always, f.never = *s.Bool, !*s.Bool
		return f, true
	}
	if s.Types != nil && !s.Types.IsEmpty() {
		for _, name := range s.Types.ToStrings() {
			bit, ok := typeBits[name]
			if !ok {
				return nil, false
			}
			f.types |= bit
		}
		f.numeric = f.types&tInteger != 0 && f.types&tNumber == 0
	}
	if s.Const != nil {
		c, ok := newFastConst(*s.Const)
		if !ok {
			return nil, false
		}
		f.hasConst, f.konst, f.numeric = true, c, true
	}
	if s.Enum != nil {
		f.hasEnum, f.numeric = true, true
		for _, v := range s.Enum.Values {
			c, ok := newFastConst(v)
			if !ok {
				return nil, false
			}
			f.enum = append(f.enum, c)
		}
	}

	// object
	if len(s.Properties) > 0 {
		f.props = make(map[string]*fastSchema, len(s.Properties))
		for name, sub := range s.Properties {
			c, ok := buildFast(sub, depth+1, n)
			if !ok {
				return nil, false
			}
			f.props[name] = c
		}
	}
	f.required = s.Required
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		if !a {
			f.add = addNone
		}
	case *jsonschema.Schema:
		c, ok := buildFast(a, depth+1, n)
		if !ok {
			return nil, false
		}
		f.add, f.addSchema = addSchema, c
	default:
		return nil, false
	}
	f.minProps, f.maxProps = intOr(s.MinProperties), intOr(s.MaxProperties)

	// array: the library reads items (as Items) before draft 2020 and (as Items2020) from it.
	var items *jsonschema.Schema
	if s.DraftVersion < 2020 {
		if s.Items2020 != nil {
			return nil, false
		}
		switch it := s.Items.(type) {
		case nil:
		case *jsonschema.Schema:
			items = it
		default: // a tuple
			return nil, false
		}
	} else {
		if s.Items != nil {
			return nil, false
		}
		items = s.Items2020
	}
	if items != nil {
		c, ok := buildFast(items, depth+1, n)
		if !ok {
			return nil, false
		}
		f.items = c
	}
	f.minItems, f.maxItems = intOr(s.MinItems), intOr(s.MaxItems)

	// string
	f.minLen, f.maxLen = intOr(s.MinLength), intOr(s.MaxLength)
	f.pattern = s.Pattern

	// number
	f.minimum, f.maximum = s.Minimum, s.Maximum
	f.exclMinimum, f.exclMaximum = s.ExclusiveMinimum, s.ExclusiveMaximum
	f.numeric = f.numeric || f.minimum != nil || f.maximum != nil || f.exclMinimum != nil || f.exclMaximum != nil
	f.lo, f.hi = intBounds(s)
	return f, true
}

func intOr(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// newFastConst reads an enumerated or constant value of the compiled schema (decoded by
// toAny, so a number is a json.Number). Arrays and objects are not supported.
func newFastConst(v any) (fastConst, bool) {
	switch v := v.(type) {
	case nil:
		return fastConst{t: tNull}, true
	case bool:
		return fastConst{t: tBoolean, b: v}, true
	case string:
		return fastConst{t: tString, s: v}, true
	case json.Number:
		// As the library's equals reads it, once.
		r, ok := new(big.Rat).SetString(fmt.Sprint(v))
		if !ok {
			return fastConst{}, false
		}
		c := fastConst{t: tNumber, r: r}
		if r.IsInt() && r.Num().IsInt64() {
			if i := r.Num().Int64(); -smallIntLimit < i && i < smallIntLimit {
				c.i, c.isI = i, true
			}
		}
		return c, true
	}
	return fastConst{}, false
}

// intBounds turns the numeric bounds of s into lo and hi such that an integer x with
// |x| < 1e18 meets every bound exactly when lo <= x <= hi: x >= m is x >= ceil(m),
// x > m is x >= floor(m)+1, x <= m is x <= floor(m), x < m is x <= ceil(m)-1. Bounds past
// ±1e18 are clamped there, which changes no answer for such an x.
func intBounds(s *jsonschema.Schema) (lo, hi int64) {
	limit := big.NewInt(smallIntLimit)
	l, h := new(big.Int).Neg(limit), new(big.Int).Set(limit)
	one := big.NewInt(1)
	raise := func(b *big.Int) {
		if b.Cmp(l) > 0 {
			l.Set(b)
		}
	}
	lower := func(b *big.Int) {
		if b.Cmp(h) < 0 {
			h.Set(b)
		}
	}
	if s.Minimum != nil {
		raise(ceilRat(s.Minimum))
	}
	if s.ExclusiveMinimum != nil {
		raise(new(big.Int).Add(floorRat(s.ExclusiveMinimum), one))
	}
	if s.Maximum != nil {
		lower(floorRat(s.Maximum))
	}
	if s.ExclusiveMaximum != nil {
		lower(new(big.Int).Sub(ceilRat(s.ExclusiveMaximum), one))
	}
	if l.Cmp(limit) > 0 {
		l.Set(limit)
	}
	if h.Cmp(new(big.Int).Neg(limit)) < 0 {
		h.Neg(limit)
	}
	return l.Int64(), h.Int64()
}

// floorRat is the greatest integer at most r. big.Int's Div is Euclidean, which for the
// positive denominator of a Rat is the floor.
func floorRat(r *big.Rat) *big.Int {
	return new(big.Int).Div(r.Num(), r.Denom())
}

// ceilRat is the least integer at least r.
func ceilRat(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// valid reports whether v is certainly valid against the schema f was built from. false
// means "ask the library", not "invalid". v is taken as toAny and jcs.Value.Interface
// produce it (and encoding/json with UseNumber): map[string]any, []any, string, bool, nil
// and json.Number holding a JSON number literal; any other type, or a json.Number that is
// not such a literal, is false.
func (f *fastSchema) valid(v any) bool {
	if f.never {
		return false
	}
	switch v := v.(type) {
	case nil:
		return f.always || f.scalarValid(tNull, func(c *fastConst) bool { return c.t == tNull })
	case bool:
		return f.always || f.scalarValid(tBoolean, func(c *fastConst) bool { return c.t == tBoolean && c.b == v })
	case string:
		return f.always || f.stringValid(v)
	case json.Number:
		lit, ok := scanNumber(string(v))
		return ok && (f.always || f.numberValid(v, lit))
	case map[string]any:
		return f.always || f.objectValid(v)
	case []any:
		return f.always || f.arrayValid(v)
	}
	return false
}

// scalarValid checks the type, const and enum of a null or boolean against eq.
func (f *fastSchema) scalarValid(t uint8, eq func(*fastConst) bool) bool {
	if f.types != 0 && f.types&t == 0 {
		return false
	}
	if f.hasConst && !eq(&f.konst) {
		return false
	}
	return !f.hasEnum || f.inEnum(eq)
}

func (f *fastSchema) inEnum(eq func(*fastConst) bool) bool {
	for i := range f.enum {
		if eq(&f.enum[i]) {
			return true
		}
	}
	return false
}

func (f *fastSchema) stringValid(s string) bool {
	if f.types != 0 && f.types&tString == 0 {
		return false
	}
	if f.hasConst && (f.konst.t != tString || f.konst.s != s) {
		return false
	}
	if f.hasEnum {
		found := false
		for i := range f.enum {
			if f.enum[i].t == tString && f.enum[i].s == s {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if f.minLen >= 0 || f.maxLen >= 0 {
		// The library counts utf8.RuneCount([]byte(s)): code points, each invalid byte one.
		n := utf8.RuneCountInString(s)
		if (f.minLen >= 0 && n < f.minLen) || (f.maxLen >= 0 && n > f.maxLen) {
			return false
		}
	}
	return f.pattern == nil || f.pattern.MatchString(s)
}

// numLit is what scanNumber learnt of a number literal.
type numLit struct {
	small bool  // a plain integer of at most smallIntDigits digits
	i     int64 // its value
	exp   bool  // has an exponent
}

// skipDigits returns the index after the run of ASCII digits of s that starts at i.
func skipDigits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// scanNumber reads s as a JSON number literal (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?
// ([eE][+-]?[0-9]+)?) and reports whether it is one.
func scanNumber(s string) (numLit, bool) {
	var lit numLit
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	start := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return lit, false
	}
	digits := i - start
	plain := true
	if i < len(s) && s[i] == '.' {
		plain = false
		j := i + 1
		if i = skipDigits(s, j); i == j {
			return lit, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		plain, lit.exp = false, true
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		if i = skipDigits(s, j); i == j {
			return lit, false
		}
	}
	if i != len(s) {
		return lit, false
	}
	if plain && digits <= smallIntDigits {
		var x int64
		for _, c := range s[start:] {
			x = x*10 + int64(c-'0')
		}
		if neg {
			x = -x
		}
		lit.small, lit.i = true, x
	}
	return lit, true
}

func (f *fastSchema) numberValid(v json.Number, lit numLit) bool {
	if f.types != 0 && f.types&(tNumber|tInteger) == 0 {
		return false
	}
	if !f.numeric {
		return true
	}
	// The value as the library reads it, when the literal is not a plain integer.
	var r *big.Rat
	if !lit.small {
		if lit.exp || len(v) > maxFastRatBytes {
			return false
		}
		var ok bool
		if r, ok = new(big.Rat).SetString(fmt.Sprint(v)); !ok {
			return false
		}
	}
	if f.types != 0 && f.types&tNumber == 0 && !lit.small && !r.IsInt() {
		return false // the library's "integer" is a number whose value is an integer
	}
	eq := func(c *fastConst) bool {
		if c.t != tNumber {
			return false
		}
		if lit.small {
			return c.isI && c.i == lit.i
		}
		return r.Cmp(c.r) == 0
	}
	if f.hasConst && !eq(&f.konst) {
		return false
	}
	if f.hasEnum && !f.inEnum(eq) {
		return false
	}
	if lit.small {
		return f.lo <= lit.i && lit.i <= f.hi
	}
	return (f.minimum == nil || r.Cmp(f.minimum) >= 0) &&
		(f.maximum == nil || r.Cmp(f.maximum) <= 0) &&
		(f.exclMinimum == nil || r.Cmp(f.exclMinimum) > 0) &&
		(f.exclMaximum == nil || r.Cmp(f.exclMaximum) < 0)
}

func (f *fastSchema) objectValid(obj map[string]any) bool {
	if f.types != 0 && f.types&tObject == 0 {
		return false
	}
	if f.hasConst || f.hasEnum {
		return false // only scalars are enumerated
	}
	if (f.minProps >= 0 && len(obj) < f.minProps) || (f.maxProps >= 0 && len(obj) > f.maxProps) {
		return false
	}
	for _, name := range f.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	if f.props == nil && f.add == addAny {
		return true
	}
	for name, v := range obj {
		if sub, ok := f.props[name]; ok {
			if !sub.valid(v) {
				return false
			}
			continue
		}
		switch f.add {
		case addNone:
			return false
		case addSchema:
			if !f.addSchema.valid(v) {
				return false
			}
		}
	}
	return true
}

func (f *fastSchema) arrayValid(arr []any) bool {
	if f.types != 0 && f.types&tArray == 0 {
		return false
	}
	if f.hasConst || f.hasEnum {
		return false
	}
	if (f.minItems >= 0 && len(arr) < f.minItems) || (f.maxItems >= 0 && len(arr) > f.maxItems) {
		return false
	}
	if f.items != nil {
		for _, v := range arr {
			if !f.items.valid(v) {
				return false
			}
		}
	}
	return true
}
