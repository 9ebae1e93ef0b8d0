package definition

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/yamljson"
	"github.com/capgate/capgate/manifest"
)

// Root is capgate's own root for definition names: the reverse-DNS form of capgate.org,
// chosen once and kept stable. A host may configure another root for its own definitions.
const Root = "org.capgate"

// Languages are the languages every definition describes itself in and gives examples in.
var Languages = []string{"en", "tr"}

// Path is how a provider carries out a definition's actions, in the order in which paths are
// preferred: a lower one is chosen only when every higher one is missing or not working.
type Path string

// The paths, best first. PathAPI and PathToolServer share the first rank.
const (
	PathAPI        Path = "api"
	PathToolServer Path = "tool_server"
	PathOSIntent   Path = "os_intent"
	PathBrowser    Path = "browser"
	PathHandoff    Path = "handoff"
)

// Paths lists every Path, best first.
var Paths = []Path{PathAPI, PathToolServer, PathOSIntent, PathBrowser, PathHandoff}

// Rank is the path's place in the order, 1 for the best; 0 for no path.
func (p Path) Rank() int {
	switch p {
	case PathAPI, PathToolServer:
		return 1
	case PathOSIntent:
		return 2
	case PathBrowser:
		return 3
	case PathHandoff:
		return 4
	}
	return 0
}

// Surfaces are the surface capabilities a definition may require of the approval surface.
var Surfaces = []string{"screen", "voice", "strong_auth"}

// Definition is one definition record, as read from its file.
type Definition struct {
	Name    string
	Version manifest.MinorVersion
	// Extends is the definition this one extends, or nil.
	Extends *manifest.DefinitionRef
	// Description is the short description by language (Languages).
	Description map[string]string
	Actions     []Action
	// Input and Output are JSON Schema 2020-12 objects, in canonical form.
	Input, Output json.RawMessage
	Examples      []Example
	Authority     Authority
	// AutonomyCeiling is the highest behaviour the definition permits; a mandate may narrow it.
	AutonomyCeiling manifest.Autonomy
	// Reversibility is what the definition declares, irreversible when it declares nothing
	// (ReversibilityDeclared false). The evaluation gate checks it.
	Reversibility         manifest.Reversibility
	ReversibilityDeclared bool
	DataClasses           DataClasses
	Surface               Surface
	Providers             []Provider
	// TestStatus is what the file says of its last evaluation: shown, never taken as a
	// measurement (capgate's own evaluation decides what is working).
	TestStatus *TestStatus
	// Signature is the file's signature text, "" for an unsigned file.
	Signature string

	root      jcs.Value // the document as received
	canonical []byte    // its RFC 8785 form without the signature member: what is signed
}

// Action is one of a definition's actions and the permission (the access reference) that
// authorizes it.
type Action struct {
	Name   string `json:"name"`
	Access string `json:"access"`
}

// Example is a usage example in one language: a first-class input to choosing capabilities.
type Example struct {
	Lang string `json:"lang"`
	Text string `json:"text"`
}

// Authority is what a caller must hold: the grant scope and the consequence tier.
type Authority struct {
	Scope string        `json:"scope"`
	Tier  manifest.Risk `json:"tier"`
}

// DataClasses are the data classes a definition reads and writes.
type DataClasses struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// Surface is what the approval surface must offer for the definition's actions, and the
// highest autonomy that may be approved there.
type Surface struct {
	Requires        []string          `json:"requires,omitempty"`
	ApprovalCeiling manifest.Autonomy `json:"approval_ceiling,omitempty"`
}

// Provider is a provider the definition's author names, with its path.
type Provider struct {
	ID   string `json:"id"`
	Path Path   `json:"path"`
}

// TestStatus is a declared evaluation: when, and whether it passed.
type TestStatus struct {
	At     time.Time `json:"at"`
	Result string    `json:"result"` // pass or fail
}

// Ref is the definition's name@major.minor.
func (d *Definition) Ref() string { return d.Name + "@" + d.Version.String() }

// Namespace is the name's first two labels: whose definition it is, and whose key signs it.
func (d *Definition) Namespace() string { return Namespace(d.Name) }

// Namespace returns the first two labels of a dotted name.
func Namespace(name string) string {
	first, rest, _ := strings.Cut(name, ".")
	second, _, _ := strings.Cut(rest, ".")
	return first + "." + second
}

// Under reports whether name lies under root: root itself followed by at least one label.
func Under(name, root string) bool {
	return strings.HasPrefix(name, root+".") && len(name) > len(root)+1
}

// Canonical returns the bytes the signature covers: the RFC 8785 form of the document as
// received, its signature member removed.
func (d *Definition) Canonical() []byte { return d.canonical }

var (
	actionPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	classPattern  = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,127}$`)
)

// Parse reads data, a definition's JSON, strictly (the jcs package's rules, exact numbers)
// and decodes it against every rule of the format that needs no other file: it returns the
// definition with every problem found, or nil and the one problem when data is not JSON. A
// definition with problems must not be used. root is the host's root for definitions (""
// for Root).
func Parse(data []byte, root string) (*Definition, manifest.Problems) {
	if len(data) > MaxFileBytes {
		return nil, manifest.Problems{{Rule: fmt.Sprintf("larger than %d bytes", MaxFileBytes)}}
	}
	v, err := jcs.Parse(data, &jcs.Options{ExactNumbers: true, MaxBytes: MaxFileBytes})
	if err != nil {
		return nil, manifest.Problems{{Rule: "not strict JSON: " + syntaxRule(err)}}
	}
	if root == "" {
		root = Root
	}
	d := &decoder{root: root}
	def := d.definition(v)
	if def == nil {
		return nil, d.ps
	}
	return def, d.ps
}

// ParseYAML reads the YAML authoring form: converted to JSON (internal/yamljson), then Parse.
func ParseYAML(data []byte, root string) (*Definition, manifest.Problems) {
	js, err := yamljson.Convert(data)
	if err != nil {
		return nil, manifest.Problems{{Rule: "not YAML this reader takes: " + err.Error()}}
	}
	return Parse(js, root)
}

// syntaxRule is a jcs error as a rule: where and what, never the input itself.
func syntaxRule(err error) string {
	if se, ok := err.(*jcs.SyntaxError); ok {
		if se.Path != "" {
			return fmt.Sprintf("%s at byte %d (%s)", se.Rule, se.Offset, se.Path)
		}
		return fmt.Sprintf("%s at byte %d", se.Rule, se.Offset)
	}
	return "unreadable"
}

// decoder gathers problems while reading one definition.
type decoder struct {
	root string
	ps   manifest.Problems
}

func (d *decoder) add(path, rule string) {
	d.ps = append(d.ps, manifest.Problem{Path: path, Rule: rule})
}

func field(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// object returns v's members by name, reporting a value that is not an object and any member
// not among known (a misspelt field would otherwise be read as absent).
func (d *decoder) object(v jcs.Value, path string, known ...string) (map[string]jcs.Value, bool) {
	if v.Kind != jcs.Object {
		d.add(path, "must be an object")
		return nil, false
	}
	m := make(map[string]jcs.Value, len(v.Members))
	for _, mem := range v.Members {
		if !slices.Contains(known, mem.Name) {
			d.add(field(path, pathName(mem.Name)), "not a field of a definition here (known: "+strings.Join(known, ", ")+")")
			continue
		}
		m[mem.Name] = mem.Value
	}
	return m, true
}

// str reads a string member; required ones must be present and not empty.
func (d *decoder) str(m map[string]jcs.Value, path, name string, required bool, maxBytes int) string {
	v, ok := m[name]
	if !ok || v.Kind == jcs.Null {
		if required {
			d.add(field(path, name), "required")
		}
		return ""
	}
	if v.Kind != jcs.String {
		d.add(field(path, name), "must be a string")
		return ""
	}
	switch {
	case required && v.Str == "":
		d.add(field(path, name), "must not be empty")
	case len(v.Str) > maxBytes:
		d.add(field(path, name), fmt.Sprintf("longer than %d bytes", maxBytes))
	case hasControl(v.Str):
		d.add(field(path, name), "must not hold control characters")
	}
	return v.Str
}

// hasControl reports a C0 control other than tab and newline, DEL, or a C1 control: text a
// terminal would act on rather than show.
func hasControl(s string) bool {
	for _, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r < 0xa0) {
			return true
		}
	}
	return false
}

// list calls each for every element of an array member, at most maxItems.
func (d *decoder) list(m map[string]jcs.Value, path, name string, required bool, maxItems int, each func(v jcs.Value, path string)) {
	v, ok := m[name]
	if !ok || v.Kind == jcs.Null {
		if required {
			d.add(field(path, name), "required")
		}
		return
	}
	p := field(path, name)
	if v.Kind != jcs.Array {
		d.add(p, "must be an array")
		return
	}
	if required && len(v.Items) == 0 {
		d.add(p, "must not be empty")
	}
	if len(v.Items) > maxItems {
		d.add(p, fmt.Sprintf("more than %d items", maxItems))
		return
	}
	for i, e := range v.Items {
		each(e, index(p, i))
	}
}

// names reads an array of distinct strings, each matching pattern or among allowed.
func (d *decoder) names(m map[string]jcs.Value, path, name string, ok func(string) bool, rule string) []string {
	var out []string
	d.list(m, path, name, false, MaxListItems, func(v jcs.Value, p string) {
		switch {
		case v.Kind != jcs.String:
			d.add(p, "must be a string")
		case !ok(v.Str):
			d.add(p, rule)
		case slices.Contains(out, v.Str):
			d.add(p, "listed twice")
		default:
			out = append(out, v.Str)
		}
	})
	return out
}

func enum[T ~string](d *decoder, m map[string]jcs.Value, path, name string, required bool, values []T) T {
	s := d.str(m, path, name, required, 64)
	if s == "" {
		return ""
	}
	if !slices.Contains(values, T(s)) {
		words := make([]string, len(values))
		for i, v := range values {
			words[i] = string(v)
		}
		d.add(field(path, name), "must be one of "+strings.Join(words, ", "))
		return ""
	}
	return T(s)
}

var fields = []string{"name", "version", "extends", "description", "actions", "input", "output", "examples",
	"authority", "autonomy_ceiling", "reversibility", "data_classes", "surface", "providers", "test_status", "signature"}

func (d *decoder) definition(v jcs.Value) *Definition {
	m, ok := d.object(v, "", fields...)
	if !ok {
		return nil
	}
	def := &Definition{root: v, Description: map[string]string{}}

	def.Name = d.str(m, "", "name", true, MaxNameBytes)
	if def.Name != "" {
		switch _, err := manifest.ParsePermission(def.Name); {
		case err != nil || strings.Count(def.Name, ".") < 2:
			d.add("name", "must be a reverse-DNS name of at least three labels, each matching [a-z]([a-z0-9_-]*[a-z0-9_])?")
		case !Under(def.Name, d.root) && m["extends"].Kind == jcs.Null:
			// Not under the root: a third party's extension, in its own namespace, of another
			// definition. (A missing member reads as the zero Value, whose Kind is Null.)
			d.add("extends", "required: a definition outside the root "+d.root+" is an extension of another")
		}
	}
	if s := d.str(m, "", "version", true, 32); s != "" {
		mv, err := manifest.ParseMinorVersion(s)
		if err != nil {
			d.add("version", "must be major.minor")
		}
		def.Version = mv
	}
	if s := d.str(m, "", "extends", false, MaxNameBytes+32); s != "" {
		ref, err := manifest.ParseDefinitionRef(s)
		switch {
		case err != nil:
			d.add("extends", "must be a definition name and @major.minor")
		case ref.Name() == def.Name:
			d.add("extends", "must name another definition")
		default:
			def.Extends = &ref
		}
	}
	if dv, ok := m["description"]; ok {
		if dm, ok := d.object(dv, "description", Languages...); ok {
			for _, lang := range Languages {
				def.Description[lang] = d.str(dm, "description", lang, true, MaxDescriptionBytes)
			}
		}
	} else {
		d.add("description", "required")
	}

	d.list(m, "", "actions", true, MaxActions, func(v jcs.Value, p string) {
		am, ok := d.object(v, p, "name", "access")
		if !ok {
			return
		}
		a := Action{Name: d.str(am, p, "name", true, 64), Access: d.str(am, p, "access", true, manifest.MaxCapabilityIDBytes)}
		if a.Name != "" && !actionPattern.MatchString(a.Name) {
			d.add(field(p, "name"), "must match ^[a-z][a-z0-9_]{0,63}$")
		}
		if slices.ContainsFunc(def.Actions, func(b Action) bool { return b.Name == a.Name }) {
			d.add(field(p, "name"), "another action has this name")
		}
		if a.Access != "" {
			if _, err := manifest.ParsePermission(a.Access); err != nil {
				d.add(field(p, "access"), "must be a permission (dot-separated segments)")
			}
		}
		def.Actions = append(def.Actions, a)
	})

	def.Input = d.schema(m, "input")
	def.Output = d.schema(m, "output")

	counts := map[string]int{}
	d.list(m, "", "examples", true, MaxExamples, func(v jcs.Value, p string) {
		em, ok := d.object(v, p, "lang", "text")
		if !ok {
			return
		}
		e := Example{Lang: string(enum(d, em, p, "lang", true, Languages)), Text: d.str(em, p, "text", true, MaxExampleBytes)}
		counts[e.Lang]++
		def.Examples = append(def.Examples, e)
	})
	if _, ok := m["examples"]; ok {
		for _, lang := range Languages {
			if counts[lang] == 0 {
				d.add("examples", "needs at least one example in "+lang)
			}
		}
	}

	if av, ok := m["authority"]; ok {
		if am, ok := d.object(av, "authority", "scope", "tier"); ok {
			def.Authority.Scope = d.str(am, "authority", "scope", true, manifest.MaxCapabilityIDBytes)
			if def.Authority.Scope != "" {
				if _, err := manifest.ParsePermission(def.Authority.Scope); err != nil {
					d.add("authority.scope", "must be a permission (dot-separated segments)")
				}
			}
			def.Authority.Tier = enum(d, am, "authority", "tier", true, manifest.Risks)
		}
	} else {
		d.add("authority", "required")
	}
	def.AutonomyCeiling = enum(d, m, "", "autonomy_ceiling", true, manifest.Autonomies)
	def.Reversibility = enum(d, m, "", "reversibility", false, manifest.Reversibilities)
	def.ReversibilityDeclared = def.Reversibility != ""
	if !def.ReversibilityDeclared {
		def.Reversibility = manifest.Irreversible
	}

	if cv, ok := m["data_classes"]; ok {
		if cm, ok := d.object(cv, "data_classes", "read", "write"); ok {
			isClass := classPattern.MatchString
			def.DataClasses.Read = d.names(cm, "data_classes", "read", isClass, "must match ^[a-z][a-z0-9._-]{0,127}$")
			def.DataClasses.Write = d.names(cm, "data_classes", "write", isClass, "must match ^[a-z][a-z0-9._-]{0,127}$")
		}
	}
	if sv, ok := m["surface"]; ok {
		if sm, ok := d.object(sv, "surface", "requires", "approval_ceiling"); ok {
			def.Surface.Requires = d.names(sm, "surface", "requires", func(s string) bool { return slices.Contains(Surfaces, s) },
				"must be one of "+strings.Join(Surfaces, ", "))
			def.Surface.ApprovalCeiling = enum(d, sm, "surface", "approval_ceiling", false, manifest.Autonomies)
		}
	}
	d.list(m, "", "providers", false, MaxProviders, func(v jcs.Value, p string) {
		pm, ok := d.object(v, p, "id", "path")
		if !ok {
			return
		}
		pr := Provider{ID: d.str(pm, p, "id", true, MaxNameBytes), Path: enum(d, pm, p, "path", true, Paths)}
		if pr.ID != "" {
			if _, err := manifest.ParseAppID(pr.ID); err != nil {
				d.add(field(p, "id"), "must be an app id (reverse-DNS)")
			}
		}
		if slices.ContainsFunc(def.Providers, func(q Provider) bool { return q.ID == pr.ID && q.Path == pr.Path }) {
			d.add(p, "listed twice")
		}
		def.Providers = append(def.Providers, pr)
	})
	if tv, ok := m["test_status"]; ok {
		if tm, ok := d.object(tv, "test_status", "at", "result"); ok {
			ts := &TestStatus{Result: string(enum(d, tm, "test_status", "result", true, []string{"pass", "fail"}))}
			if s := d.str(tm, "test_status", "at", true, 64); s != "" {
				at, err := time.Parse(time.RFC3339, s)
				if err != nil {
					d.add("test_status.at", "must be an RFC 3339 time")
				}
				ts.At = at
			}
			def.TestStatus = ts
		}
	}
	if s := d.str(m, "", "signature", false, 256); s != "" {
		if _, err := manifest.ParseSignature(s); err != nil {
			d.add("signature", `must be "ed25519:" and the standard padded base64 of 64 bytes`)
		}
		def.Signature = s
	}

	unsigned := jcs.Value{Kind: jcs.Object}
	for _, mem := range v.Members {
		if mem.Name != "signature" {
			unsigned.Members = append(unsigned.Members, mem)
		}
	}
	canon, err := unsigned.AppendCanonical(nil)
	if err != nil {
		d.add("", "has no canonical form")
	}
	def.canonical = canon
	return def
}

// schema reads a JSON Schema 2020-12 member, compiles it (nothing outside it is fetched) and
// runs the secret-field lint on it.
func (d *decoder) schema(m map[string]jcs.Value, name string) json.RawMessage {
	v, ok := m[name]
	if !ok || v.Kind == jcs.Null {
		d.add(name, "required")
		return nil
	}
	if v.Kind != jcs.Object && v.Kind != jcs.Bool {
		d.add(name, "must be a JSON Schema (an object or a boolean)")
		return nil
	}
	raw, err := v.AppendCanonical(nil)
	if err != nil {
		d.add(name, "has no canonical form")
		return nil
	}
	if rule := compileSchema(v.Interface()); rule != "" {
		d.add(name, rule)
	}
	d.ps = append(d.ps, SecretFields(v.Interface(), name)...)
	return raw
}

// CheckRoot returns an error when root cannot be a root of definition names: a reverse-DNS
// name of at least two labels ("" is Root, and valid).
func CheckRoot(root string) error {
	if root == "" {
		return nil
	}
	if _, err := manifest.ParsePermission(root); err != nil {
		return fmt.Errorf("definitions root: must be a reverse-DNS name of at least two labels, each matching [a-z]([a-z0-9_-]*[a-z0-9_])?")
	}
	return nil
}
