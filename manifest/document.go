package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/yamljson"
)

// Document is a manifest as received: the parsed JSON (members in received order, numbers as
// written), its canonical form without the signature, and the decoded Manifest. A Document
// returned by Load is valid; one returned by Parse may not be (see Problems).
type Document struct {
	root      jcs.Value
	canonical []byte
	manifest  *Manifest
	problems  Problems
	validated sync.Once          // guards the fields below: Validate may be called concurrently
	params    map[string]*Schema // capability id → compiled parameters schema
	returns   map[string]*Schema
	events    map[string]*Schema // event type → compiled payload_schema
}

// SyntaxError is returned when data is not a manifest's JSON at all: not JSON, a duplicate
// member name, a lone surrogate, invalid UTF-8, a number that is not finite or that changes
// value as an IEEE 754 double, too deep or too large. It names where, never what.
type SyntaxError struct {
	Path   string // field path of the enclosing value, "" for the root
	Offset int    // byte offset in the JSON text
	Rule   string
	err    error
}

func (e *SyntaxError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("manifest: %s (offset %d)", e.Rule, e.Offset)
	}
	return fmt.Sprintf("manifest: %s: %s (offset %d)", e.Path, e.Rule, e.Offset)
}

// Unwrap returns the underlying parse error.
func (e *SyntaxError) Unwrap() error { return e.err }

// Problem returns e as a Problem.
func (e *SyntaxError) Problem() Problem { return Problem{Path: e.Path, Rule: e.Rule} }

// Parse reads data, a manifest's JSON text, strictly: besides JSON's own grammar, duplicate
// member names, member names that differ from a known field only by case, and numbers that do
// not read back exactly as IEEE 754 doubles are refused. It returns a *SyntaxError when data
// is not such JSON; otherwise a Document whose Problems say whether the manifest is valid.
// Parse compiles no schema and checks no signature.
func Parse(data []byte) (*Document, error) { return parse(data, nil) }

func parse(data []byte, t *Timings) (*Document, error) {
	if len(data) > MaxManifestBytes {
		return nil, &SyntaxError{Rule: fmt.Sprintf("larger than %d bytes", MaxManifestBytes), err: jcs.ErrTooLarge}
	}
	start := time.Now()
	root, err := jcs.Parse(data, &jcs.Options{ExactNumbers: true, MaxDepth: MaxDepth, MaxBytes: MaxManifestBytes})
	if err != nil {
		var se *jcs.SyntaxError
		if errors.As(err, &se) {
			return nil, &SyntaxError{Path: se.Path, Offset: se.Offset, Rule: notJSONRule(data, se.Rule), err: err}
		}
		return nil, &SyntaxError{Rule: notJSONRule(data, "not JSON"), err: err}
	}
	if root.Kind != jcs.Object {
		return nil, &SyntaxError{Rule: "must be a JSON object", err: jcs.ErrSyntax}
	}
	t.mark(stageParse, &start)
	d := &decoder{}
	m := d.decodeManifest(root)
	d.validate(m)
	m.applyDefaults()
	doc := &Document{root: root, manifest: m, problems: d.ps}
	t.mark(stageDecode, &start)
	doc.canonical, err = canonicalWithoutSignature(root)
	if err != nil {
		return nil, &SyntaxError{Rule: "has no canonical form", err: err}
	}
	t.mark(stageCanonicalize, &start)
	return doc, nil
}

// ErrYAML is returned by ReadFile for a file named like the YAML authoring form (.yaml or
// .yml, in any case). capgate reads YAML only to lint, sign and diff a manifest
// (ReadAuthoringFile); what it verifies, registers and installs is the JSON that signing writes.
var ErrYAML = errors.New("YAML is the authoring form of a manifest: sign it into JSON first (" + signFix + ")")

// signFix is the command that turns the authoring form into the JSON capgate installs.
const signFix = "capgate manifest sign -o manifest.json manifest.yaml"

// notJSONRule is the rule of a syntax error in data: rule itself, or, when data does not even
// start as a JSON object does (most likely the YAML authoring form, handed where JSON is
// needed), rule followed by the way to JSON. Only the first byte is looked at: data is never
// read as YAML here.
func notJSONRule(data []byte, rule string) string {
	rest := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\uFEFF")), " \t\r\n")
	if len(rest) > 0 && rest[0] == '{' {
		return rule
	}
	return rule + "; a YAML manifest is signed into JSON first (" + signFix + ")"
}

// ParseYAML reads data as YAML, the authoring form of a manifest, and parses the JSON
// document it denotes as Parse does. The YAML is decoded strictly (internal/yamljson):
// duplicate keys, aliases, non-string keys and tags other than the core schema's are refused,
// and numbers keep the digits written. Only authoring reads YAML (lint, sign, diff); every
// other entry point takes the JSON that Sign writes.
func ParseYAML(data []byte) (*Document, error) {
	js, err := yamljson.Convert(data)
	if err != nil {
		var ye *yamljson.Error
		if errors.As(err, &ye) {
			return nil, &SyntaxError{Path: ye.Path, Rule: fmt.Sprintf("YAML %d:%d: %s", ye.Line, ye.Column, ye.Rule), err: err}
		}
		return nil, &SyntaxError{Rule: "not YAML", err: err}
	}
	return Parse(js)
}

// IsYAML reports whether a file name names the YAML authoring form (.yaml or .yml, in any
// case).
func IsYAML(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// ReadFile reads and parses the manifest's JSON in the file at path, as Parse does. A file
// named like the YAML authoring form (IsYAML) is refused with an error wrapping ErrYAML,
// before it is read. Files larger than MaxManifestBytes are refused without being read whole.
func ReadFile(path string) (*Document, error) {
	if IsYAML(path) {
		return nil, fmt.Errorf("manifest: %s: %w", path, ErrYAML)
	}
	data, err := readLimited(path, MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// ReadAuthoringFile reads a manifest as its author wrote it, for linting, signing and
// diffing: YAML when IsYAML(path), else JSON as ReadFile does.
func ReadAuthoringFile(path string) (*Document, error) {
	if !IsYAML(path) {
		return ReadFile(path)
	}
	data, err := readLimited(path, yamljson.MaxInputBytes)
	if err != nil {
		return nil, err
	}
	return ParseYAML(data)
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, &SyntaxError{Rule: fmt.Sprintf("larger than %d bytes", limit), err: jcs.ErrTooLarge}
	}
	return data, nil
}

// Load parses data as Parse does and validates it fully, compiling every schema. It returns
// Problems when the manifest breaks any rule.
func Load(data []byte) (*Document, error) {
	doc, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if ps := doc.Validate(); len(ps) > 0 {
		return nil, ps
	}
	return doc, nil
}

// Manifest returns the decoded manifest, defaults filled in. Its fields hold what could be
// decoded even when the document is invalid: check Validate first.
func (doc *Document) Manifest() *Manifest { return doc.manifest }

// Canonical returns the bytes a signature covers: the RFC 8785 canonical form of the document
// as received, with the top-level signature member removed. The caller must not modify them.
func (doc *Document) Canonical() []byte { return doc.canonical }

// Signature returns the signature member's text and whether it is present as a string.
func (doc *Document) Signature() (string, bool) {
	v, ok := doc.root.Get("signature")
	if !ok || v.Kind != jcs.String {
		return "", false
	}
	return v.Str, true
}

// Validate compiles every schema and returns every problem of the manifest, in document order
// of their discovery; none means valid. It compiles once: calling it again, from any
// goroutine, returns the same problems.
func (doc *Document) Validate() Problems {
	doc.validated.Do(doc.compileSchemas)
	return doc.problems
}

func (doc *Document) compileSchemas() {
	d := &decoder{ps: doc.problems}
	sc := newSchemaCompiler()
	doc.params = map[string]*Schema{}
	doc.returns = map[string]*Schema{}
	for i, c := range doc.manifest.Capabilities {
		p := index("capabilities", i)
		if c.Parameters != nil {
			if s := sc.compile(c.Parameters, field(p, "parameters"), d); s != nil {
				doc.params[c.ID] = s
			}
		}
		if c.Returns != nil {
			if s := sc.compile(c.Returns, field(p, "returns"), d); s != nil {
				doc.returns[c.ID] = s
			}
		}
	}
	doc.events = map[string]*Schema{}
	for i, e := range doc.manifest.Events {
		if e.PayloadSchema != nil {
			if s := sc.compile(e.PayloadSchema, field(index("events", i), "payload_schema"), d); s != nil {
				doc.events[e.EventType] = s
			}
		}
	}
	doc.problems = d.ps
}

// ParametersSchema returns the compiled parameters schema of a capability, or nil when the
// document has no such capability or its schema does not compile. It validates the document
// first if that has not been done.
func (doc *Document) ParametersSchema(capabilityID string) *Schema {
	doc.Validate()
	return doc.params[capabilityID]
}

// EventSchema returns the compiled payload_schema of an event type, as ParametersSchema:
// nil when the document declares no such event, or it declares no payload_schema.
func (doc *Document) EventSchema(eventType string) *Schema {
	doc.Validate()
	return doc.events[eventType]
}

// ReturnsSchema returns the compiled returns schema of a capability, as ParametersSchema.
func (doc *Document) ReturnsSchema(capabilityID string) *Schema {
	doc.Validate()
	return doc.returns[capabilityID]
}

// JSON returns the document as received, indented, members in received order and numbers as
// written.
func (doc *Document) JSON() []byte { return doc.root.AppendIndent(nil) }

// canonicalWithoutSignature canonicalizes root with its top-level signature member removed.
func canonicalWithoutSignature(root jcs.Value) ([]byte, error) {
	stripped := root
	stripped.Members = make([]jcs.Member, 0, len(root.Members))
	for _, m := range root.Members {
		if m.Name != "signature" {
			stripped.Members = append(stripped.Members, m)
		}
	}
	return stripped.AppendCanonical(nil)
}

// CapabilityCanonical returns the RFC 8785 canonical form of the capability with the given id
// as received, unknown members included, or nil when there is none. Permission deltas compare
// capabilities in this form.
func (doc *Document) CapabilityCanonical(id string) []byte {
	caps, ok := doc.root.Get("capabilities")
	if !ok || caps.Kind != jcs.Array {
		return nil
	}
	for _, c := range caps.Items {
		if v, ok := c.Get("id"); ok && v.Kind == jcs.String && v.Str == id {
			b, err := c.AppendCanonical(nil)
			if err != nil {
				return nil
			}
			return b
		}
	}
	return nil
}

// Raw returns the whole document as received, in canonical form, signature included: what a
// lockfile records and what runtime equality compares.
func (doc *Document) Raw() []byte {
	b, _ := doc.root.AppendCanonical(nil)
	return b
}
