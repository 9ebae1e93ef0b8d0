package manifest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func classesForTest(t testing.TB, schema string) *Classes {
	t.Helper()
	s := compileForTest([]byte(schema))
	if s == nil {
		t.Fatalf("schema does not compile: %s", schema)
	}
	return s.Classes()
}

// Which schemas classify every string a value can hold, and which leave one unclassified.
func TestClassesComplete(t *testing.T) {
	const d2020 = `"$schema": "https://json-schema.org/draft/2020-12/schema", `
	cases := []struct {
		name   string
		schema string
		want   bool
	}{
		{"closed object of classified strings", `{"type":"object","additionalProperties":false,"properties":{"p":{"type":"string","format":"path"},"c":{"type":"string","format":"command"},"t":{"type":"string","format":"text"},"i":{"type":"string","format":"command-input"},"d":{"type":"string","format":"cwd"}}}`, true},
		{"numbers, booleans, null", `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integer"},"b":{"type":"boolean"},"z":{"type":"null"},"x":{"type":["number","boolean"]}}}`, true},
		{"enum and const are text", `{"type":"object","additionalProperties":false,"properties":{"e":{"enum":["a","b"]},"k":{"const":"x"},"any":{"enum":[{"path":"/etc"}]}}}`, true},
		{"no properties at all", `{"type":"object","additionalProperties":false,"properties":{}}`, true},
		{"the schema false", `{"type":"object","additionalProperties":false,"properties":{"x":false}}`, true},
		{"an unformatted string", `{"type":"object","additionalProperties":false,"properties":{"file":{"type":"string"}}}`, false},
		{"a string format that is not a class", `{"type":"object","additionalProperties":false,"properties":{"u":{"type":"string","format":"uri"}}}`, false},
		{"open object", `{"type":"object","properties":{"p":{"type":"string","format":"path"}}}`, false},
		{"additionalProperties true", `{"type":"object","additionalProperties":true,"properties":{}}`, false},
		{"additionalProperties classified", `{"type":"object","additionalProperties":{"type":"string","format":"text"}}`, true},
		{"additionalProperties unclassified", `{"type":"object","additionalProperties":{"type":"string"}}`, false},
		{"the schema true", `{"type":"object","additionalProperties":false,"properties":{"x":true}}`, false},
		{"the empty schema", `{}`, false},
		{"a member without a type", `{"type":"object","additionalProperties":false,"properties":{"x":{"format":"path"}}}`, false},
		{"a member that is {}", `{"type":"object","additionalProperties":false,"properties":{"x":{}}}`, false},
		{"nested, classified", `{"type":"object","additionalProperties":false,"properties":{"opts":{"type":"object","additionalProperties":false,"properties":{"path":{"type":"string","format":"path"}}}}}`, true},
		{"nested, unclassified", `{"type":"object","additionalProperties":false,"properties":{"opts":{"type":"object","additionalProperties":false,"properties":{"path":{"type":"string"}}}}}`, false},
		{"nested, open", `{"type":"object","additionalProperties":false,"properties":{"opts":{"type":"object"}}}`, false},
		{"array of paths", `{"type":"object","additionalProperties":false,"properties":{"paths":{"type":"array","items":{"type":"string","format":"path"}}}}`, true},
		{"array of anything", `{"type":"object","additionalProperties":false,"properties":{"paths":{"type":"array"}}}`, false},
		{"array of unformatted strings", `{"type":"object","additionalProperties":false,"properties":{"paths":{"type":"array","items":{"type":"string"}}}}`, false},
		{"draft-07 tuple without additionalItems", `{"type":"array","items":[{"type":"string","format":"path"}]}`, false},
		{"draft-07 tuple closed", `{"type":"array","items":[{"type":"string","format":"path"}],"additionalItems":false}`, true},
		{"2020 prefixItems without items", `{` + d2020 + `"type":"array","prefixItems":[{"type":"string","format":"path"}]}`, false},
		{"2020 prefixItems closed", `{` + d2020 + `"type":"array","prefixItems":[{"type":"string","format":"path"}],"items":false}`, true},
		{"2020 keeps its formats", `{` + d2020 + `"type":"object","additionalProperties":false,"properties":{"p":{"type":"string","format":"path"}}}`, true},
		{"draft-07 $ref to definitions", `{"type":"object","additionalProperties":false,"properties":{"p":{"$ref":"#/definitions/p"}},"definitions":{"p":{"type":"string","format":"path"}}}`, true},
		// The schema compiler keeps a $ref's siblings in draft-07 too; the classes follow
		// what it compiled.
		{"draft-07 $ref with a sibling format", `{"type":"object","additionalProperties":false,"properties":{"p":{"$ref":"#/definitions/p","format":"text"}},"definitions":{"p":{"type":"string"}}}`, true},
		{"draft-07 $ref to an unclassified string", `{"type":"object","additionalProperties":false,"properties":{"p":{"$ref":"#/definitions/p"}},"definitions":{"p":{"type":"string"}}}`, false},
		{"2020 $ref to $defs", `{` + d2020 + `"type":"object","additionalProperties":false,"properties":{"p":{"$ref":"#/$defs/p"}},"$defs":{"p":{"type":"string","format":"path"}}}`, true},
		{"2020 $ref with a sibling format", `{` + d2020 + `"type":"object","additionalProperties":false,"properties":{"p":{"$ref":"#/$defs/p","format":"text"}},"$defs":{"p":{"type":"string"}}}`, true},
		{"anyOf, every branch classified", `{"type":"object","additionalProperties":false,"properties":{"p":{"anyOf":[{"type":"string","format":"path"},{"type":"array","items":{"type":"string","format":"path"}}]}}}`, true},
		{"anyOf, one branch unclassified", `{"type":"object","additionalProperties":false,"properties":{"p":{"anyOf":[{"type":"string","format":"text"},{"type":"string"}]}}}`, false},
		{"anyOf, a branch of another type", `{"type":"object","additionalProperties":false,"properties":{"p":{"anyOf":[{"type":"string","format":"path"},{"type":"integer"}]}}}`, true},
		{"oneOf, every branch classified", `{"type":"object","additionalProperties":false,"properties":{"p":{"oneOf":[{"type":"string","format":"path"},{"type":"null"}]}}}`, true},
		{"allOf, one member classifies", `{"type":"object","additionalProperties":false,"properties":{"p":{"allOf":[{"type":"string"},{"format":"path"}]}}}`, true},
		{"allOf closes an object", `{"allOf":[{"type":"object","additionalProperties":false,"properties":{"p":{"type":"string","format":"path"}}},{"required":["p"]}]}`, true},
		{"allOf, neither classifies", `{"type":"object","additionalProperties":false,"properties":{"p":{"allOf":[{"type":"string"},{"minLength":1}]}}}`, false},
		{"if/then/else both classify", `{"type":"object","additionalProperties":false,"properties":{"p":{"type":"string","if":{"maxLength":3},"then":{"format":"text"},"else":{"format":"path"}}}}`, true},
		{"if/then without else", `{"type":"object","additionalProperties":false,"properties":{"p":{"type":"string","if":{"maxLength":3},"then":{"format":"text"}}}}`, false},
		{"not classifies nothing", `{"type":"object","additionalProperties":false,"properties":{"p":{"type":"string","not":{"format":"text"}}}}`, false},
		{"a tree through $ref", `{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string","format":"text"},"kids":{"type":"array","items":{"$ref":"#"}}}}`, true},
		{"a tree with an unclassified leaf", `{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#"}}}}`, false},
		{"recursion in place proves nothing", `{"allOf":[{"$ref":"#"}]}`, false},
		{"anyOf recursion in place", `{"anyOf":[{"$ref":"#"},{"type":"string","format":"path"}]}`, false},
		{"patternProperties with additionalProperties false", `{"type":"object","additionalProperties":false,"patternProperties":{"^p_":{"type":"string","format":"path"}}}`, true},
		{"patternProperties, others open", `{"type":"object","patternProperties":{"^p_":{"type":"string","format":"path"}}}`, false},
		{"patternProperties, others unclassified", `{"type":"object","additionalProperties":{"type":"string"},"patternProperties":{"^p_":{"type":"string","format":"path"}}}`, false},
		{"unevaluatedProperties does not close", `{` + d2020 + `"type":"object","unevaluatedProperties":false,"properties":{"p":{"type":"string","format":"path"}}}`, false},
		{"string or object, object open", `{"type":["string","object"],"format":"path"}`, false},
		{"string or object, both classified", `{"type":["string","object"],"format":"path","additionalProperties":false}`, true},
		{"typed through allOf", `{"allOf":[{"type":"string"}],"format":"path"}`, true},
		{"text on an object is text beneath", `{"type":"object","additionalProperties":false,"properties":{"meta":{"type":"object","format":"text"}}}`, true},
		{"text without a type", `{"type":"object","additionalProperties":false,"properties":{"meta":{"format":"text"}}}`, true},
		{"text through allOf on an open object", `{"type":"object","allOf":[{"format":"text"}]}`, true},
		{"path on an object is not a path beneath", `{"type":"object","additionalProperties":false,"properties":{"meta":{"type":"object","format":"path"}}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := classesForTest(t, c.schema)
			if got := cl.Complete(); got != c.want {
				t.Fatalf("Complete() = %v, want %v (unclassified %v)", got, c.want, cl.Unclassified())
			}
			if !c.want && len(cl.Unclassified()) == 0 {
				t.Error("incomplete, but no place named")
			}
			if c.want && len(cl.Unclassified()) != 0 {
				t.Errorf("complete, but names %v", cl.Unclassified())
			}
		})
	}
	var nilClasses *Classes
	if nilClasses.Complete() {
		t.Error("nil Classes are complete")
	}
}

func decodeForTest(t *testing.T, data string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Find reaches every path and command wherever it sits, by its schema, and names the place.
func TestClassesFind(t *testing.T) {
	const schema = `{"type":"object","additionalProperties":false,"properties":{
	  "source":{"type":"string","format":"path"},
	  "destination":{"$ref":"#/definitions/p"},
	  "opts":{"type":"object","additionalProperties":false,"properties":{"path":{"type":"string","format":"path"},"note":{"type":"string","format":"text"}}},
	  "paths":{"type":"array","items":{"type":"string","format":"path"}},
	  "either":{"anyOf":[{"type":"string","format":"path"},{"type":"array","items":{"type":"string","format":"path"}}]},
	  "job":{"type":"object","additionalProperties":false,"properties":{"command":{"type":"string","format":"command"},"cwd":{"type":"string","format":"cwd"},"stdin":{"type":"string","format":"text"}}},
	  "input":{"type":"string","format":"command-input"},
	  "env":{"type":"object","additionalProperties":{"type":"string","format":"text"}},
	  "a/b~":{"type":"string","format":"path"},
	  "n":{"type":"integer"}},
	  "definitions":{"p":{"type":"string","format":"path"}}}`
	cl := classesForTest(t, schema)
	if !cl.Complete() {
		t.Fatalf("not complete: %v", cl.Unclassified())
	}
	got := cl.Find(decodeForTest(t, `{"source":"/etc/passwd","destination":"/etc/shadow","opts":{"path":"/etc/x","note":"hi"},
	  "paths":["/a","/b"],"either":["/c"],"job":{"command":"ls -l","cwd":"sub","stdin":"data"},"input":"rm -rf /\n",
	  "env":{"PATH":"/x"},"a/b~":"/d","n":3}`))
	wantPaths := []Value{{"/a~1b~0", "/d"}, {"/destination", "/etc/shadow"}, {"/either/0", "/c"}, {"/job/cwd", "sub"},
		{"/opts/path", "/etc/x"}, {"/paths/0", "/a"}, {"/paths/1", "/b"}, {"/source", "/etc/passwd"}}
	if !reflect.DeepEqual(got.Paths, wantPaths) {
		t.Errorf("paths %v\nwant %v", got.Paths, wantPaths)
	}
	if len(got.Commands) != 1 || got.Commands[0].Value != (Value{"/job/command", "ls -l"}) ||
		got.Commands[0].Cwd == nil || *got.Commands[0].Cwd != (Value{"/job/cwd", "sub"}) {
		t.Errorf("commands %+v", got.Commands)
	}
	if !reflect.DeepEqual(got.Inputs, []Value{{"/input", "rm -rf /\n"}}) {
		t.Errorf("inputs %v", got.Inputs)
	}
	if len(got.Unclassified) != 0 {
		t.Errorf("unclassified %v", got.Unclassified)
	}

	// A command with two cwds beside it is ambiguous; one with none has no cwd.
	two := classesForTest(t, `{"type":"object","additionalProperties":false,"properties":{"c":{"type":"string","format":"command"},"d1":{"type":"string","format":"cwd"},"d2":{"type":"string","format":"cwd"}}}`)
	f := two.Find(decodeForTest(t, `{"c":"ls","d1":"a","d2":"b"}`))
	if !reflect.DeepEqual(f.Ambiguous, []string{"/c"}) || f.Commands[0].Cwd != nil {
		t.Errorf("two cwds: %+v", f)
	}
	if f = two.Find(decodeForTest(t, `{"c":"ls"}`)); len(f.Commands) != 1 || f.Commands[0].Cwd != nil || len(f.Unclassified) != 0 {
		t.Errorf("no cwd: %+v", f)
	}

	// Strings no schema classifies are named, never guessed.
	open := classesForTest(t, `{"type":"object","properties":{"path":{"type":"string","format":"path"}}}`)
	f = open.Find(decodeForTest(t, `{"path":"/a","file":"/etc/passwd","opts":{"path":"/etc/passwd"},"n":1}`))
	if !reflect.DeepEqual(f.Unclassified, []string{"/file", "/opts/path"}) || len(f.Paths) != 1 {
		t.Errorf("open schema: %+v", f)
	}
	var nilClasses *Classes
	if f := nilClasses.Find(decodeForTest(t, `{"a":"x"}`)); !reflect.DeepEqual(f.Unclassified, []string{"/a"}) {
		t.Errorf("nil classes: %+v", f)
	}
}

// Beneath a text schema everything is text, but a path a schema beneath declares stays a
// path.
func TestClassesDeepText(t *testing.T) {
	cl := classesForTest(t, `{"type":"object","format":"text","properties":{"p":{"type":"string","format":"path"}}}`)
	if !cl.Complete() {
		t.Fatal("not complete")
	}
	f := cl.Find(decodeForTest(t, `{"p":"/x","q":{"r":["/y"]}}`))
	if !reflect.DeepEqual(f.Paths, []Value{{"/p", "/x"}}) || len(f.Unclassified) != 0 {
		t.Errorf("%+v", f)
	}
}

// Every class any applying schema gives is taken: a path in one anyOf branch and text in
// another is checked as a path; a dependencies (dependentSchemas) entry applies when its member
// is there.
func TestClassesFindUnion(t *testing.T) {
	cl := classesForTest(t, `{"type":"object","additionalProperties":false,
	  "properties":{"p":{"anyOf":[{"type":"string","format":"text","maxLength":3},{"type":"string","format":"path"}]},
	    "mode":{"enum":["copy","move"]},"to":{"type":"string","format":"text"}},
	  "dependencies":{"mode":{"properties":{"to":{"format":"path"}}}}}`)
	f := cl.Find(decodeForTest(t, `{"p":"ab","to":"/x"}`))
	if !reflect.DeepEqual(f.Paths, []Value{{"/p", "ab"}}) {
		t.Errorf("without mode: %v", f.Paths)
	}
	f = cl.Find(decodeForTest(t, `{"p":"ab","to":"/x","mode":"copy"}`))
	if !reflect.DeepEqual(f.Paths, []Value{{"/p", "ab"}, {"/to", "/x"}}) {
		t.Errorf("with mode: %v", f.Paths)
	}
}

// The classes' formats assert nothing and leave the fast path in place.
func TestClassesKeepFastPath(t *testing.T) {
	s := compileForTest([]byte(`{"type":"object","additionalProperties":false,"properties":{"p":{"type":"string","format":"path"},"c":{"type":"string","format":"command"}}}`))
	if s.fast == nil {
		t.Fatal("a schema with class formats lost its fast path")
	}
	if err := s.Validate(map[string]any{"p": "", "c": "\x01"}, "params"); err != nil {
		t.Errorf("a class format asserted something: %v", err)
	}
}

func TestClassesUnclassifiedNamesPlaces(t *testing.T) {
	cl := classesForTest(t, `{"type":"object","additionalProperties":false,"properties":{"opts":{"type":"object","additionalProperties":false,"properties":{"file":{"type":"string"}}},"ok":{"type":"string","format":"text"}}}`)
	if got := strings.Join(cl.Unclassified(), ","); got != "params.opts.file" {
		t.Errorf("Unclassified() = %q", got)
	}
}

// FuzzClasses: classifying any schema and finding in any value never panics, and whatever a
// complete schema validates has no unclassified string.
func FuzzClasses(f *testing.F) {
	f.Add(`{"type":"object","additionalProperties":false,"properties":{"p":{"type":"string","format":"path"}}}`, `{"p":"/x"}`)
	f.Add(`{"anyOf":[{"$ref":"#"},{"type":"array","items":{"type":"string","format":"command"}}]}`, `[["ls"]]`)
	f.Add(`{"type":"object","patternProperties":{"^a":{"format":"cwd"}},"additionalProperties":{"enum":[1]}}`, `{"ab":"x","c":1}`)
	f.Add(`{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"type":"string","format":"path"}],"items":false}`, `["/a"]`)
	f.Fuzz(func(t *testing.T, schema, value string) {
		s := compileForTest([]byte(schema))
		if s == nil {
			return
		}
		cl := s.Classes()
		var v any
		if json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		found := cl.Find(v)
		if cl.Complete() && s.Validate(v, "params") == nil && len(found.Unclassified) > 0 {
			t.Fatalf("complete schema, valid value, unclassified %v", found.Unclassified)
		}
	})
}
