package manifest

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// fastSchemaLayout is every field of the library's compiled jsonschema.Schema, in order, with
// its type, as of fastLibraryVersion: what the fast path reads by reflection (onlyFastFields)
// and by name (buildFast).
const fastSchemaLayout = `up jsonschema.urlPtr
resource *jsonschema.Schema
dynamicAnchors map[string]*jsonschema.Schema
allPropsEvaluated bool
allItemsEvaluated bool
numItemsEvaluated int
DraftVersion int
Location string
Bool *bool
ID string
Ref *jsonschema.Schema
Anchor string
RecursiveRef *jsonschema.Schema
RecursiveAnchor bool
DynamicRef *jsonschema.DynamicRef
DynamicAnchor string
Types *jsonschema.Types
Enum *jsonschema.Enum
Const *interface {}
Not *jsonschema.Schema
AllOf []*jsonschema.Schema
AnyOf []*jsonschema.Schema
OneOf []*jsonschema.Schema
If *jsonschema.Schema
Then *jsonschema.Schema
Else *jsonschema.Schema
Format *jsonschema.Format
MaxProperties *int
MinProperties *int
Required []string
PropertyNames *jsonschema.Schema
Properties map[string]*jsonschema.Schema
PatternProperties map[jsonschema.Regexp]*jsonschema.Schema
AdditionalProperties interface {}
Dependencies map[string]interface {}
DependentRequired map[string][]string
DependentSchemas map[string]*jsonschema.Schema
UnevaluatedProperties *jsonschema.Schema
MinItems *int
MaxItems *int
UniqueItems bool
Contains *jsonschema.Schema
MinContains *int
MaxContains *int
Items interface {}
AdditionalItems interface {}
PrefixItems []*jsonschema.Schema
Items2020 *jsonschema.Schema
UnevaluatedItems *jsonschema.Schema
MinLength *int
MaxLength *int
Pattern jsonschema.Regexp
ContentEncoding *jsonschema.Decoder
ContentMediaType *jsonschema.MediaType
ContentSchema *jsonschema.Schema
Maximum *big.Rat
Minimum *big.Rat
ExclusiveMaximum *big.Rat
ExclusiveMinimum *big.Rat
MultipleOf *big.Rat
Extensions []jsonschema.SchemaExt
Title string
Description string
Default *interface {}
Comment string
ReadOnly bool
WriteOnly bool
Examples []interface {}
Deprecated bool
`

// TestFastPathPinned holds the fast path to the library it was written against: go.mod must
// require exactly fastLibraryVersion of it and not replace it, and the compiled Schema must
// have exactly the fields (names, types, order) the fast path was read against. Either
// failing means the library changed under the fast path: read the new version's validator
// against fastcheck.go, rule by rule, before moving fastLibraryVersion and
// fastSchemaLayout.
func TestFastPathPinned(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	version, replaced := goModRequire(string(gomod), fastLibraryPath)
	if version != fastLibraryVersion {
		t.Errorf("go.mod requires %s %q; the fast path was written against %s", fastLibraryPath, version, fastLibraryVersion)
	}
	if replaced {
		t.Errorf("go.mod replaces %s; the fast path was written against its release %s", fastLibraryPath, fastLibraryVersion)
	}

	var b strings.Builder
	for i := range schemaType.NumField() {
		f := schemaType.Field(i)
		fmt.Fprintf(&b, "%s %s\n", f.Name, f.Type)
	}
	if got := b.String(); got != fastSchemaLayout {
		t.Errorf("jsonschema.Schema's fields changed:\n%s\nthe fast path was read against:\n%s", got, fastSchemaLayout)
	}

	// The binary this test runs in is built from go.mod, so the fast path is on.
	if !fastPathOn {
		t.Error("the fast path is off in a build of go.mod")
	}
}

// goModRequire returns the version go.mod requires of module path, in a require block or a
// single require line, and whether a replace directive names it.
func goModRequire(gomod, path string) (version string, replaced bool) {
	block := ""
	for _, line := range strings.Split(gomod, "\n") {
		line, _, _ = strings.Cut(line, "//")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case fields[0] == ")":
			block = ""
			continue
		case len(fields) == 2 && fields[1] == "(":
			block = fields[0]
			continue
		}
		directive := block
		if block == "" {
			directive, fields = fields[0], fields[1:]
		}
		if len(fields) == 0 || fields[0] != path {
			continue
		}
		switch directive {
		case "require":
			if len(fields) >= 2 {
				version = fields[1]
			}
		case "replace":
			replaced = true
		}
	}
	return version, replaced
}

func TestGoModRequire(t *testing.T) {
	const p = "example.com/lib/v6"
	for _, tc := range []struct {
		gomod    string
		version  string
		replaced bool
	}{
		{"module m\n\nrequire (\n\texample.com/other v1.0.0\n\t" + p + " v6.0.3\n)\n", "v6.0.3", false},
		{"module m\nrequire " + p + " v6.1.0 // indirect\n", "v6.1.0", false},
		{"module m\nrequire (\n\t" + p + "x v6.0.3\n)\n", "", false},
		{"module m\nrequire " + p + " v6.0.3\nreplace " + p + " => ../fork\n", "v6.0.3", true},
		{"module m\nrequire " + p + " v6.0.3\nreplace (\n\t" + p + " v6.0.3 => example.com/fork v6.0.3\n)\n", "v6.0.3", true},
		{"module m\n// require " + p + " v6.0.3\n", "", false},
	} {
		v, r := goModRequire(tc.gomod, p)
		if v != tc.version || r != tc.replaced {
			t.Errorf("goModRequire(%q) = %q, %v; want %q, %v", tc.gomod, v, r, tc.version, tc.replaced)
		}
	}
}

// A binary built with another version of the library, or a replaced one, runs without the
// fast path, as does one with no build information; a test binary records no dependency
// and is held by go.mod instead.
func TestFastLibraryIn(t *testing.T) {
	lib := func(version string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: fastLibraryPath, Version: version, Replace: replace}
	}
	other := &debug.Module{Path: "example.com/other", Version: "v1.0.0"}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want bool
	}{
		{"the pinned version", &debug.BuildInfo{Deps: []*debug.Module{other, lib(fastLibraryVersion, nil)}}, true, true},
		{"a newer patch", &debug.BuildInfo{Deps: []*debug.Module{lib("v6.0.4", nil)}}, true, false},
		{"a newer minor", &debug.BuildInfo{Deps: []*debug.Module{lib("v6.1.0", nil)}}, true, false},
		{"an older one", &debug.BuildInfo{Deps: []*debug.Module{lib("v6.0.2", nil)}}, true, false},
		{"a pseudo-version", &debug.BuildInfo{Deps: []*debug.Module{lib("v6.0.4-0.20260101000000-abcdefabcdef", nil)}}, true, false},
		{"replaced by a fork", &debug.BuildInfo{Deps: []*debug.Module{lib(fastLibraryVersion, &debug.Module{Path: "example.com/fork", Version: fastLibraryVersion})}}, true, false},
		{"replaced by a folder", &debug.BuildInfo{Deps: []*debug.Module{lib(fastLibraryVersion, &debug.Module{Path: "../jsonschema"})}}, true, false},
		{"not among the dependencies", &debug.BuildInfo{Deps: []*debug.Module{other}}, true, false},
		{"no build information", nil, false, false},
		{"a test binary", &debug.BuildInfo{}, true, true},
	} {
		if got := fastLibraryIn(tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: fastLibraryIn = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// With the fast path off, Validate gives the library's answers alone: a schema gets no fast
// path, and valid and invalid params are still told apart.
func TestFastPathOff(t *testing.T) {
	defer func(on bool) { fastPathOn = on }(fastPathOn)
	fastPathOn = false
	// A title of its own, so that the compiled-schema cache has not seen it.
	s := compileForTest([]byte(strings.Replace(settingsParams, `{"type": "object",`, `{"title": "fast path off", "type": "object",`, 1)))
	if s == nil || s.fast != nil {
		t.Fatalf("compiled %v with the fast path off", s)
	}
	if err := s.Validate(map[string]any{"category": "display", "key": "dark_mode"}, "params"); err != nil {
		t.Errorf("valid params: %v", err)
	}
	if err := s.Validate(map[string]any{"category": "display", "key": "Dark Mode"}, "params"); err == nil {
		t.Error("invalid params passed")
	}
}
