package manifest

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Schema is a compiled JSON Schema of a capability's parameters, returns or an event payload.
// It is safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
	// fast answers "valid" for the common subset of keywords without the library; nil when
	// the schema uses anything outside that subset (see fastcheck.go).
	fast *fastSchema
	// classes is the schema compiled for classification (classes.go), built on first use.
	classesOnce sync.Once
	classes     *Classes
}

// Classes returns the schema compiled for classifying params (see ParamClass), built once
// on first use and shared. A nil Schema has nil Classes, which are not complete.
func (s *Schema) Classes() *Classes {
	if s == nil {
		return nil
	}
	s.classesOnce.Do(func() { s.classes = newClasses(s.s) })
	return s.classes
}

// errRemoteRef is what the loader says to every reference outside the schema itself: a
// manifest's schemas are compiled from what was signed, never from what a server answers.
var errRemoteRef = errors.New("references outside the schema are never fetched")

type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) { return nil, errRemoteRef }

// dialects are the $schema values capgate compiles; any other names a dialect it would have to
// fetch, and is refused.
var dialects = map[string]bool{}

func init() {
	for _, d := range []string{
		"json-schema.org/draft-04/schema", "json-schema.org/draft-06/schema",
		"json-schema.org/draft-07/schema", "json-schema.org/draft/2019-09/schema",
		"json-schema.org/draft/2020-12/schema",
	} {
		for _, scheme := range []string{"http://", "https://"} {
			dialects[scheme+d] = true
			dialects[scheme+d+"#"] = true
		}
	}
}

// schemaCompiler compiles the schemas of one manifest. Draft-07 is the default dialect.
type schemaCompiler struct {
	c *jsonschema.Compiler
	n int
}

func newSchemaCompiler() *schemaCompiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.UseLoader(refuseLoader{})
	// The param classes' formats are read by a vocabulary of capgate's own, asserted in every
	// dialect so that 2019-09 and 2020-12 schemas keep them too; it validates nothing.
	c.RegisterVocabulary(&jsonschema.Vocabulary{URL: classVocabulary, Compile: compileClass})
	c.AssertVocabs()
	return &schemaCompiler{c: c}
}

// compile compiles raw, a JSON object in canonical form, reporting problems under path.
func (sc *schemaCompiler) compile(raw json.RawMessage, path string, d *decoder) *Schema {
	key := sha256.Sum256(raw)
	if s := cachedSchema(key); s != nil {
		return s
	}
	v, err := jcs.Parse(raw, nil)
	if err != nil {
		d.add(path, "must be a JSON Schema object")
		return nil
	}
	doc := toAny(v)
	if obj, ok := doc.(map[string]any); ok {
		if v, ok := obj["$schema"]; ok {
			s, isString := v.(string)
			if !isString || !dialects[s] {
				d.add(field(path, "$schema"), "names a JSON Schema dialect capgate does not support (draft-04, -06, -07, 2019-09, 2020-12)")
				return nil
			}
		}
	}
	sc.n++
	url := "mem://capgate/schema/" + strconv.Itoa(sc.n) + ".json"
	if err := sc.c.AddResource(url, doc); err != nil {
		d.add(path, "does not compile as a JSON Schema")
		return nil
	}
	s, err := sc.c.Compile(url)
	if err != nil {
		d.add(schemaErrorPath(err, path), schemaErrorRule(err))
		return nil
	}
	compiled := &Schema{s: s, fast: newFastSchema(s)}
	cacheSchema(key, compiled)
	return compiled
}

// The compiled-schema cache. A schema is compiled from its canonical bytes alone (no loader
// reaches outside it), so the same bytes always compile to the same schema, in any manifest.
// Only schemas that compiled are kept; when the cache is full it is emptied, which is simple
// and bounds memory, at the cost of recompiling.
var schemaCache struct {
	sync.Mutex
	m map[[sha256.Size]byte]*Schema
}

func cachedSchema(key [sha256.Size]byte) *Schema {
	schemaCache.Lock()
	defer schemaCache.Unlock()
	return schemaCache.m[key]
}

func cacheSchema(key [sha256.Size]byte, s *Schema) {
	schemaCache.Lock()
	defer schemaCache.Unlock()
	if schemaCache.m == nil || len(schemaCache.m) >= MaxCachedSchemas {
		schemaCache.m = make(map[[sha256.Size]byte]*Schema)
	}
	schemaCache.m[key] = s
}

// ResetSchemaCache empties the compiled-schema cache, so that the next load compiles every
// schema: for measuring cold loads.
func ResetSchemaCache() {
	schemaCache.Lock()
	defer schemaCache.Unlock()
	schemaCache.m = nil
}

func schemaErrorRule(err error) string {
	var (
		ve    *jsonschema.SchemaValidationError
		regex *jsonschema.InvalidRegexError
		draft *jsonschema.UnsupportedDraftError
		ptr   *jsonschema.JSONPointerNotFoundError
		anc   *jsonschema.AnchorNotFoundError
		load  *jsonschema.LoadURLError
	)
	switch {
	case errors.Is(err, errRemoteRef), errors.As(err, &load) && errors.Is(load.Err, errRemoteRef):
		return "refers to a schema outside itself, which is never fetched"
	case errors.As(err, &regex):
		return "holds a pattern that is not a valid regular expression"
	case errors.As(err, &draft):
		return "names a JSON Schema dialect capgate does not support"
	case errors.As(err, &ptr), errors.As(err, &anc):
		return "has a $ref that points to nothing in this schema"
	case errors.As(err, &ve):
		var inner *jsonschema.ValidationError
		if errors.As(ve.Err, &inner) {
			leaf := deepestCause(inner)
			if f, ok := leaf.ErrorKind.(*kind.Format); ok && f.Want == "regex" {
				return "holds a pattern that is not a valid regular expression"
			}
			return "is not a valid JSON Schema: breaks the meta-schema's " + keyword(leaf.ErrorKind) + " rule"
		}
	}
	return "does not compile as a JSON Schema"
}

func schemaErrorPath(err error, base string) string {
	var ve *jsonschema.SchemaValidationError
	if errors.As(err, &ve) {
		var inner *jsonschema.ValidationError
		if errors.As(ve.Err, &inner) {
			return joinLocation(base, deepestCause(inner).InstanceLocation)
		}
	}
	return base
}

func deepestCause(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	return e
}

func keyword(k jsonschema.ErrorKind) string {
	if k == nil {
		return "schema"
	}
	kp := k.KeywordPath()
	if len(kp) == 0 {
		return "schema"
	}
	return kp[len(kp)-1]
}

// joinLocation appends a JSON Schema instance location to a field path: array indices as
// [n], member names as .name.
func joinLocation(base string, loc []string) string {
	p := base
	for _, tok := range loc {
		if _, err := strconv.ParseUint(tok, 10, 32); err == nil {
			p += "[" + tok + "]"
		} else {
			p = field(p, tok)
		}
	}
	return p
}

// libraryValidate is the library's check of v. The library panics on some values it cannot
// read (a number such as 1e-1000001 against a minimum: math/big refuses exponents that
// large), and a value comes from an agent: such a value is refused as one that cannot be
// checked, never a crash.
func (s *Schema) libraryValidate(v any, base string) (err error) {
	defer func() {
		if recover() != nil {
			err = Problems{{Path: base, Rule: "cannot be checked against the schema"}}
		}
	}()
	return s.s.Validate(v)
}

// Validate checks v, a value decoded from JSON (as by encoding/json with UseNumber, or
// jsonschema.UnmarshalJSON), against s. It returns nil or Problems, each naming the path
// below base and the rule broken, never the value.
//
// A value the fast path (fastcheck.go) finds valid is not shown to the library; every other
// value is, so every error is the library's.
func (s *Schema) Validate(v any, base string) error {
	if s.fast != nil && s.fast.valid(v) {
		return nil
	}
	err := s.libraryValidate(v, base)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return Problems{{Path: base, Rule: "cannot be checked against the schema"}}
	}
	var ps Problems
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			// A missing member is named by its own path: the name is the schema's, not the
			// value's, so an agent learns which field it left out.
			if r, ok := e.ErrorKind.(*kind.Required); ok {
				for _, m := range r.Missing {
					ps = append(ps, Problem{Path: joinLocation(base, append(slices.Clone(e.InstanceLocation), m)), Rule: "is required"})
				}
				return
			}
			ps = append(ps, Problem{Path: joinLocation(base, e.InstanceLocation), Rule: violation(e.ErrorKind)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return ps
}

// ValidateJSON checks the JSON text data against s, as Validate does. The text is parsed
// strictly (duplicate member names, invalid UTF-8 and lone surrogates are refused), so that
// what the schema checked is what every later reader of the same text sees.
func (s *Schema) ValidateJSON(data []byte, base string) error {
	v, err := jcs.Parse(data, &jcs.Options{MaxDepth: MaxDepth, MaxBytes: MaxManifestBytes})
	if err != nil {
		rule := "must be JSON"
		var se *jcs.SyntaxError
		if errors.As(err, &se) {
			return Problems{{Path: joinPath(base, se.Path), Rule: se.Rule}}
		}
		return Problems{{Path: base, Rule: rule}}
	}
	return s.Validate(toAny(v), base)
}

func joinPath(base, p string) string {
	switch {
	case p == "" || p == "$":
		return base
	case base == "":
		return p
	case p[0] == '[':
		return base + p
	}
	return base + "." + p
}

// toAny converts a parsed value to the form the schema validator takes: maps, slices,
// json.Number for numbers.
func toAny(v jcs.Value) any { return v.Interface() }

// violation says which rule of a schema a value broke, without the value.
func violation(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Required:
		return "missing required member " + strings.Join(quoteAll(k.Missing), ", ")
	case *kind.Type:
		return "must be of type " + strings.Join(k.Want, " or ")
	case *kind.Enum:
		return "must be one of the schema's enumerated values"
	case *kind.Const:
		return "must equal the schema's constant"
	case *kind.AdditionalProperties:
		return "has a member the schema does not allow"
	case *kind.Pattern:
		return "does not match the schema's pattern"
	case *kind.MinLength:
		return fmt.Sprintf("shorter than %d characters", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("longer than %d characters", k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("fewer than %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("more than %d items", k.Want)
	case *kind.Minimum:
		return "below the schema's minimum " + k.Want.RatString()
	case *kind.Maximum:
		return "above the schema's maximum " + k.Want.RatString()
	case *kind.FalseSchema:
		return "is not allowed here"
	}
	return "breaks the schema's " + keyword(k) + " rule"
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// CompileSchema compiles raw, a JSON Schema given outside a manifest (a trigger's typed
// reply), under the rules a manifest's schemas follow: draft 7 unless it names another, no
// remote $ref ever fetched. A schema that does not compile is Problems under path.
func CompileSchema(raw json.RawMessage, path string) (*Schema, error) {
	canon, err := jcs.Canonicalize(raw)
	if err != nil {
		return nil, Problems{{Path: path, Rule: "must be a JSON Schema object"}}
	}
	d := &decoder{}
	s := newSchemaCompiler().compile(canon, path, d)
	if len(d.ps) > 0 {
		return nil, d.ps
	}
	if s == nil {
		return nil, Problems{{Path: path, Rule: "must be a JSON Schema object"}}
	}
	return s, nil
}
