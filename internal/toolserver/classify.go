package toolserver

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/capgate/capgate/manifest"
)

// Param classes for a tool server's tools. A token with path or command constraints checks
// the params a capability's schema classifies (manifest.ParamClass) and refuses a capability
// whose params are not all classified. A tool server's own word is not taken for it: every
// class format ("path", "cwd", "command", "command-input", "text") in a tool's inputSchema is
// dropped from the derived manifest, so a tool's strings are unclassified until the operator
// classifies them in the overlay:
//
//	{"move_file": {"side_effects": "write", "params": {"/source": "path", "/destination": "path"}},
//	 "search":    {"side_effects": "read", "params": {"/query": "text", "/filters/*": "text"}}}
//
// Each key of "params" is a JSON pointer (RFC 6901) into the tool's arguments, in which a
// segment "*" stands for every member of an object (the properties, patternProperties and
// additionalProperties of its schema) and every item of an array; each value is one of the
// class formats. The pointer is followed through the tool's inputSchema, through local $refs
// and allOf, anyOf, oneOf, then and else, and every schema it reaches gets the class (as
// "allOf": [{"format": CLASS}], which asserts nothing, so the schema validates what it did).
// A pointer that reaches no schema, passes a $ref that is not local, or gives one schema two
// classes (a $defs entry shared by two pointers) is an error of the tool's derivation: the
// tool is left out and the problem reported. Numbers, booleans and null need no class, and a
// string the tool's schema constrains by enum or const counts as text, since the agent can
// only send a value the pinned schema lists; a path among them is checked as a path once the
// overlay says so.

// overlayClass checks one value of an overlay's params.
func overlayClass(s string) bool {
	_, ok := manifest.ClassOfFormat(s)
	return ok
}

// checkPointer checks a key of an overlay's params: a JSON pointer with at least one segment
// and only the escapes ~0 and ~1.
func checkPointer(p string) error {
	if !strings.HasPrefix(p, "/") {
		return errors.New("must be a JSON pointer starting with /")
	}
	if len(p) > MaxOverlayPointerBytes {
		return fmt.Errorf("must be at most %d bytes", MaxOverlayPointerBytes)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 >= len(p) || p[i+1] != '0' && p[i+1] != '1') {
			return errors.New("must escape ~ as ~0 and / as ~1")
		}
	}
	return nil
}

func pointerSegments(p string) []string {
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs
}

// schemaMaps, schemaLists and schemaOne are the keywords whose values are subschemas.
var (
	schemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
	schemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	schemaOne   = []string{"additionalProperties", "additionalItems", "items", "contains", "propertyNames", "not", "if", "then",
		"else", "unevaluatedProperties", "unevaluatedItems", "contentSchema"}
)

// stripClasses drops every class format from the schema s, wherever a subschema is: the
// server's word on what is a path or text is not taken.
func stripClasses(s any, depth int) {
	m, ok := s.(map[string]any)
	if !ok || depth > manifest.MaxDepth {
		return
	}
	if f, ok := m["format"].(string); ok && overlayClass(f) {
		delete(m, "format")
	}
	for _, k := range schemaOne {
		stripClasses(m[k], depth+1)
	}
	for _, k := range schemaLists {
		if l, ok := m[k].([]any); ok {
			for _, sub := range l {
				stripClasses(sub, depth+1)
			}
		}
	}
	for _, k := range schemaMaps {
		if sub, ok := m[k].(map[string]any); ok {
			for _, v := range sub {
				stripClasses(v, depth+1)
			}
		}
	}
}

// classify applies the overlay's params to the tool's parameters schema root, in place. The
// error names the pointer and the rule.
func classify(root map[string]any, params map[string]string) error {
	given := map[uintptr]string{}
	for _, ptr := range slices.Sorted(maps.Keys(params)) {
		class := params[ptr]
		nodes, err := reach(root, root, pointerSegments(ptr), map[uintptr]bool{}, 0)
		if err != nil {
			return fmt.Errorf("params[%s]: %w", strconv.Quote(ptr), err)
		}
		if len(nodes) == 0 {
			return fmt.Errorf("params[%s]: reaches no part of the tool's inputSchema", strconv.Quote(ptr))
		}
		for _, n := range nodes {
			id := reflect.ValueOf(n).Pointer()
			if prev, ok := given[id]; ok {
				if prev != class {
					return fmt.Errorf("params[%s]: gives a schema another pointer classed %s (a shared $ref) another class", strconv.Quote(ptr), prev)
				}
				continue
			}
			given[id] = class
			all, _ := n["allOf"].([]any)
			n["allOf"] = append(all, map[string]any{"format": class})
		}
	}
	return nil
}

var errRef = errors.New("passes a $ref that is not a pointer into the same schema")

// reach returns the schemas the segments lead to from the schema s.
func reach(root, s map[string]any, segs []string, seen map[uintptr]bool, depth int) ([]map[string]any, error) {
	if depth > 4*manifest.MaxDepth {
		return nil, errors.New("is nested too deeply")
	}
	var out []map[string]any
	for _, n := range inPlace(root, s, seen) {
		if n == nil {
			return nil, errRef
		}
		if len(segs) == 0 {
			out = append(out, n)
			continue
		}
		next := children(n, segs[0])
		for _, c := range next {
			got, err := reach(root, c, segs[1:], map[uintptr]bool{}, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, got...)
		}
	}
	return out, nil
}

// inPlace returns s and the schemas that apply in place with it: $ref (local), allOf, anyOf,
// oneOf, then, else. A nil entry marks a $ref that cannot be followed.
func inPlace(root, s map[string]any, seen map[uintptr]bool) []map[string]any {
	id := reflect.ValueOf(s).Pointer()
	if seen[id] {
		return nil
	}
	seen[id] = true
	out := []map[string]any{s}
	if ref, ok := s["$ref"].(string); ok {
		target := resolveRef(root, ref)
		if target == nil {
			return append(out, nil)
		}
		out = append(out, inPlace(root, target, seen)...)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if l, ok := s[k].([]any); ok {
			for _, sub := range l {
				if m, ok := sub.(map[string]any); ok {
					out = append(out, inPlace(root, m, seen)...)
				}
			}
		}
	}
	for _, k := range []string{"then", "else"} {
		if m, ok := s[k].(map[string]any); ok {
			out = append(out, inPlace(root, m, seen)...)
		}
	}
	return out
}

// resolveRef resolves a reference into the schema root: "#" or "#/..." with a JSON pointer.
func resolveRef(root map[string]any, ref string) map[string]any {
	if ref == "#" {
		return root
	}
	if !strings.HasPrefix(ref, "#/") || checkPointer(ref[1:]) != nil {
		return nil
	}
	var cur any = root
	for _, seg := range pointerSegments(ref[1:]) {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	m, _ := cur.(map[string]any)
	return m
}

// children returns the schemas of schema n that apply to the member or item seg ("*" for
// every one). An additionalProperties or additionalItems that is true or absent, reached by
// "*", is made the schema {} so that it can take a class.
func children(n map[string]any, seg string) []map[string]any {
	var out []map[string]any
	add := func(v any) {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	props, _ := n["properties"].(map[string]any)
	pats, _ := n["patternProperties"].(map[string]any)
	if seg == "*" {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			add(props[k])
		}
		for _, k := range slices.Sorted(maps.Keys(pats)) {
			add(pats[k])
		}
		out = append(out, openSchema(n, "additionalProperties")...)
	} else {
		matched := false
		if p, ok := props[seg]; ok {
			add(p)
			matched = true
		}
		for _, k := range slices.Sorted(maps.Keys(pats)) {
			if re, err := regexp.Compile(k); err == nil && re.MatchString(seg) {
				add(pats[k])
				matched = true
			}
		}
		if !matched {
			if a, ok := n["additionalProperties"].(map[string]any); ok {
				add(a)
			}
		}
	}
	// Arrays.
	index := -1
	if seg != "*" {
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || strconv.Itoa(i) != seg {
			return out
		}
		index = i
	}
	prefix, _ := n["prefixItems"].([]any)
	if tuple, ok := n["items"].([]any); ok {
		prefix = tuple
		for i, p := range prefix {
			if index < 0 || index == i {
				add(p)
			}
		}
		if index < 0 || index >= len(prefix) {
			out = append(out, openSchema(n, "additionalItems")...)
		}
		return out
	}
	for i, p := range prefix {
		if index < 0 || index == i {
			add(p)
		}
	}
	if index < 0 || index >= len(prefix) {
		out = append(out, openSchema(n, "items")...)
	}
	return out
}

// openSchema returns n[key] when it is a schema, or makes it one ({}) when it is true or
// absent and n's type says it is an object (additionalProperties) or an array (items,
// additionalItems); false gives nothing. {} allows what true and absence allow, but where an
// unevaluated keyword is in the schema, which an explicit {} would change, nothing is made.
func openSchema(n map[string]any, key string) []map[string]any {
	switch v := n[key].(type) {
	case map[string]any:
		return []map[string]any{v}
	case bool:
		if !v {
			return nil
		}
	case nil:
	default:
		return nil
	}
	want := "array"
	if key == "additionalProperties" {
		want = "object"
	}
	_, unevalProps := n["unevaluatedProperties"]
	_, unevalItems := n["unevaluatedItems"]
	if !admits(n["type"], want) || unevalProps || unevalItems {
		return nil
	}
	m := map[string]any{}
	n[key] = m
	return []map[string]any{m}
}

func admits(t any, want string) bool {
	switch t := t.(type) {
	case string:
		return t == want
	case []any:
		for _, x := range t {
			if x == want {
				return true
			}
		}
	}
	return false
}
