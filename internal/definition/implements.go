package definition

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/capgate/capgate/manifest"
)

// CheckImplements returns a problem, at the capability's field path, for every capability of
// m that implements a definition s knows and is not compatible with it:
//
//   - the definition is loaded at the major of implements and a minor at least as high;
//   - the capability's parameters accept every call the definition's input allows: each
//     property of the input is one the parameters take, with every type the input allows for
//     it, and the parameters require nothing the input does not;
//   - the capability's returns deliver what the definition's output promises: every property
//     the output requires is required by the returns, and each property both declare has no
//     type the output does not allow; when the output admits no other property, the returns
//     declare none.
//
// The check is structural (type, properties, required, additionalProperties, at every level
// of properties both schemas declare), not a proof that one schema contains another; what it
// cannot follow ($ref, combinators) it leaves to the evaluation gate. A capability whose
// implements names no definition of s (a port's method, or a definition this host does not
// have) is not its business.
func CheckImplements(m *manifest.Manifest, s *Set) manifest.Problems {
	if m == nil || s == nil {
		return nil
	}
	var ps manifest.Problems
	for i := range m.Capabilities {
		c := &m.Capabilities[i]
		if c.Implements == "" {
			continue
		}
		ref, err := manifest.ParseDefinitionRef(c.Implements)
		if err != nil || !s.knows(ref.Name()) {
			continue
		}
		at := fmt.Sprintf("capabilities[%d]", i)
		def := s.Find(ref.Name(), ref.Version().Major, ref.Version().Minor)
		if def == nil {
			ps = append(ps, manifest.Problem{Path: at + ".implements",
				Rule: fmt.Sprintf("this host has %s at %s, not %s or a later minor", ref.Name(), s.versions(ref.Name()), ref.Version())})
			continue
		}
		var in, out, params, returns any
		_ = json.Unmarshal(def.Input, &in)
		_ = json.Unmarshal(def.Output, &out)
		_ = json.Unmarshal(c.Parameters, &params)
		_ = json.Unmarshal(c.Returns, &returns)
		accepts(params, in, at+".parameters", def.Ref(), &ps, 0)
		delivers(returns, out, at+".returns", def.Ref(), &ps, 0)
	}
	return ps
}

// schemaView is what the structural check reads of a schema.
type schemaView struct {
	types         []string // nil: any type
	props         map[string]any
	required      []string
	closed        bool // additionalProperties false: no other property
	opaque        bool // $ref or a combinator: not followed
	unsatisfiable bool // the schema false
}

func view(s any) schemaView {
	switch v := s.(type) {
	case bool:
		return schemaView{unsatisfiable: !v}
	case map[string]any:
		var sv schemaView
		switch t := v["type"].(type) {
		case string:
			sv.types = []string{t}
		case []any:
			for _, x := range t {
				if str, ok := x.(string); ok {
					sv.types = append(sv.types, str)
				}
			}
		}
		if p, ok := v["properties"].(map[string]any); ok {
			sv.props = p
		}
		if r, ok := v["required"].([]any); ok {
			for _, x := range r {
				if str, ok := x.(string); ok {
					sv.required = append(sv.required, str)
				}
			}
		}
		if ap, ok := v["additionalProperties"].(bool); ok && !ap {
			sv.closed = true
		}
		for _, k := range []string{"$ref", "allOf", "anyOf", "oneOf", "not", "if", "$dynamicRef"} {
			if _, ok := v[k]; ok {
				sv.opaque = true
			}
		}
		return sv
	}
	return schemaView{}
}

// allows reports whether a schema of types admits type t ("integer" is a "number").
func allows(types []string, t string) bool {
	if types == nil {
		return true
	}
	return slices.Contains(types, t) || t == "integer" && slices.Contains(types, "number")
}

// accepts checks that the capability's params schema takes every value the definition's in
// schema allows, structurally.
func accepts(params, in any, path, ref string, ps *manifest.Problems, depth int) {
	p, d := view(params), view(in)
	if depth > MaxSchemaDepth || p.opaque || d.opaque || d.unsatisfiable {
		return
	}
	add := func(at, rule string) {
		*ps = append(*ps, manifest.Problem{Path: at, Rule: rule + " (implements " + ref + ")"})
	}
	if p.unsatisfiable {
		add(path, "accepts nothing, and the definition's input allows calls")
		return
	}
	dtypes := d.types
	if dtypes == nil {
		dtypes = []string{"null", "boolean", "number", "string", "array", "object"}
	}
	var missing []string
	for _, t := range dtypes {
		if !allows(p.types, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		add(path, "does not accept the type(s) "+strings.Join(missing, ", ")+" the definition's input allows here")
	}
	for _, name := range p.required {
		if !slices.Contains(d.required, name) {
			add(field(field(path, "required"), pathName(name)), "required here, and the definition's input does not require it")
		}
	}
	for _, name := range sortedKeys(d.props) {
		sub, ok := p.props[name]
		switch {
		case !ok && p.closed:
			add(field(field(path, "properties"), pathName(name)), "missing: the definition's input has this property, and these parameters admit no other")
		case ok:
			accepts(sub, d.props[name], field(field(path, "properties"), pathName(name)), ref, ps, depth+1)
		}
	}
}

// delivers checks that the capability's returns schema keeps every promise of the
// definition's out schema, structurally.
func delivers(returns, out any, path, ref string, ps *manifest.Problems, depth int) {
	r, d := view(returns), view(out)
	if depth > MaxSchemaDepth || r.opaque || d.opaque || r.unsatisfiable {
		return
	}
	add := func(at, rule string) {
		*ps = append(*ps, manifest.Problem{Path: at, Rule: rule + " (implements " + ref + ")"})
	}
	if d.unsatisfiable {
		add(path, "returns a result, and the definition's output allows none")
		return
	}
	rtypes := r.types
	if rtypes == nil && d.types != nil {
		add(path, "may return any type; the definition's output allows only "+strings.Join(d.types, ", "))
	}
	var extra []string
	for _, t := range rtypes {
		if !allows(d.types, t) {
			extra = append(extra, t)
		}
	}
	if len(extra) > 0 {
		add(path, "may return the type(s) "+strings.Join(extra, ", ")+", which the definition's output does not allow here")
	}
	for _, name := range d.required {
		if !slices.Contains(r.required, name) {
			add(field(field(path, "required"), pathName(name)), "the definition's output requires this property, and these returns do not")
		}
	}
	for _, name := range sortedKeys(r.props) {
		sub, ok := d.props[name]
		switch {
		case !ok && d.closed:
			add(field(field(path, "properties"), pathName(name)), "not in the definition's output, which admits no other property")
		case ok:
			delivers(r.props[name], sub, field(field(path, "properties"), pathName(name)), ref, ps, depth+1)
		}
	}
}
