package manifest

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Param classes: what a capability's parameters schema says each string of its params is, so
// that a token's path and command constraints reach every path and command a call carries,
// wherever it sits, and not only params with conventional names.
//
// A string is classified by the "format" of a schema that applies to it:
//
//	"format": "path"           a filesystem path: allowed_paths checks it, and the provider
//	                           gets it resolved (absolute, through its symbolic links)
//	"format": "cwd"            a path that is also the folder the commands beside it (members
//	                           of the same object) run in
//	"format": "command"        a command line, split by POSIX quoting and run without a shell:
//	                           the command constraints check it, and allowed_paths checks its
//	                           words
//	"format": "command-input"  input fed to a program that is already running (a terminal's
//	                           write_input): no constraint can read it, so a token with path
//	                           or command constraints refuses a call that carries it
//	"format": "text"           neither: a name, a note, a pattern, content
//
// and a string constrained by enum or const is text. "format": "text" on a schema of objects
// or arrays (or of no type) makes everything beneath it text too, but what a schema beneath
// classifies otherwise: {"type": "object", "format": "text"} is a bag of names and notes.
// Numbers, booleans and null are never paths or commands. Everything else is unclassified: a string no applying schema classifies,
// a schema true or {} (or one without a type), an object that allows members the schema does
// not classify (no "additionalProperties": false, nor a classified additionalProperties), an
// array whose items are not classified. Object member names are names, never paths.
//
// The schema is walked as the validator walks it: properties, patternProperties,
// additionalProperties, items, prefixItems, additionalItems, $ref and $defs (any reference the
// schema compiler resolved), allOf, anyOf, oneOf, if/then/else and dependentSchemas. A string
// is classified when, however the value validates, some schema it validates against classifies
// it: a format in allOf counts, one in only some anyOf branches does not. Where several apply
// (a path in one anyOf branch, text in another) every class applies: the value is checked as
// a path. unevaluatedProperties does not close an object ("additionalProperties": false does)
// and a $dynamicRef or $recursiveRef leaves what it reaches unclassified.

// ParamClass is a set of param classes, as bits.
type ParamClass uint8

// The param classes.
const (
	ClassText ParamClass = 1 << iota
	ClassPath
	ClassCwd
	ClassCommand
	ClassCommandInput
)

// The formats of the param classes.
const (
	FormatPath         = "path"
	FormatCwd          = "cwd"
	FormatCommand      = "command"
	FormatCommandInput = "command-input"
	FormatText         = "text"
)

// classFormats maps each format of a param class to its class.
var classFormats = map[string]ParamClass{
	FormatPath: ClassPath, FormatCwd: ClassCwd, FormatCommand: ClassCommand,
	FormatCommandInput: ClassCommandInput, FormatText: ClassText,
}

// ClassOfFormat returns the param class a "format" value names, and whether it names one.
func ClassOfFormat(format string) (ParamClass, bool) {
	c, ok := classFormats[format]
	return c, ok
}

// classVocabulary is the URL of the vocabulary that reads the class formats. It is capgate's
// own and names no document: the vocabulary asserts nothing, it only keeps "format" where the
// classifier can read it whatever the dialect (2019-09 and later drop a format they do not
// assert).
const classVocabulary = "urn:capgate:param-classes"

// formatClass is the compiled class of one schema object: its "format", when that is one of
// the class formats. It validates nothing.
type formatClass ParamClass

func (formatClass) Validate(*jsonschema.ValidatorContext, any) {}

func compileClass(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
	if f, ok := obj["format"].(string); ok {
		if c, known := classFormats[f]; known {
			return formatClass(c), nil
		}
	}
	return nil, nil
}

// Classes is a capability's parameters schema compiled for classification: whether every
// string a valid value can hold is classified (Complete), and the classified values of one
// value (Find). It is built once with the schema and is safe for concurrent use.
type Classes struct {
	root     *cnode
	complete bool
	// unclassified are up to maxListedUnclassified field paths of the schema where a string
	// is not classified, for people.
	unclassified []string
}

// Complete reports whether every string of every value the schema allows is classified. A
// nil Classes is not complete.
func (c *Classes) Complete() bool { return c != nil && c.complete }

// Unclassified returns some of the field paths ("params.opts.*") at which the schema allows
// an unclassified string or member, at most a few, for a lint or an error message. It is
// empty when the schema is complete.
func (c *Classes) Unclassified() []string {
	if c == nil {
		return []string{"params"}
	}
	return slices.Clone(c.unclassified)
}

// Value is one classified string of a value: its location as a JSON pointer (RFC 6901) and
// its text.
type Value struct {
	Pointer string
	Text    string
}

// Command is a command-line value and the cwd value beside it, if any.
type Command struct {
	Value
	Cwd *Value
}

// Found is what Find found in a value.
type Found struct {
	// Paths are the path and cwd values, in the order of the value (members by name).
	Paths []Value
	// Commands are the command values.
	Commands []Command
	// Inputs are the command-input values.
	Inputs []Value
	// Unclassified are the pointers of the strings no schema classifies.
	Unclassified []string
	// Ambiguous are the pointers of commands with more than one cwd beside them, which
	// cannot say where they run.
	Ambiguous []string
}

// Find returns the classified strings of v, a value decoded from JSON (as by encoding/json,
// with or without UseNumber) that the schema validated. Which schemas apply at each place is
// read from the value itself, as the validator reads it (a member's name picks its property;
// a dependentSchemas entry applies when its member is present); every class of every schema
// that applies is taken. A nil Classes finds every string unclassified.
func (c *Classes) Find(v any) Found {
	var f Found
	var start []*cnode
	if c != nil && c.root != nil {
		start = []*cnode{c.root}
	}
	find(v, "", start, &f)
	return f
}

func find(v any, ptr string, set []*cnode, f *Found) {
	exp := closure(set, v)
	switch v := v.(type) {
	case string:
		var cls ParamClass
		for _, n := range exp {
			cls |= n.class
		}
		if cls == 0 {
			f.Unclassified = append(f.Unclassified, ptr)
			return
		}
		if cls&(ClassPath|ClassCwd) != 0 {
			f.Paths = append(f.Paths, Value{ptr, v})
		}
		if cls&ClassCommand != 0 {
			f.Commands = append(f.Commands, Command{Value: Value{ptr, v}})
		}
		if cls&ClassCommandInput != 0 {
			f.Inputs = append(f.Inputs, Value{ptr, v})
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		firstCmd := len(f.Commands)
		var cwds []Value
		for _, k := range keys {
			child := ptr + "/" + escapePointer(k)
			var next []*cnode
			for _, n := range exp {
				next = n.member(k, next)
			}
			nPaths := len(f.Paths)
			find(v[k], child, next, f)
			// A cwd is a member of this object itself, not something deeper.
			for _, p := range f.Paths[nPaths:] {
				if p.Pointer == child && isCwd(v[k], next) {
					cwds = append(cwds, p)
				}
			}
		}
		// The commands that are members of this object run in its cwd.
		for i := firstCmd; i < len(f.Commands); i++ {
			cmd := &f.Commands[i]
			if parentPointer(cmd.Pointer) != ptr {
				continue
			}
			switch len(cwds) {
			case 0:
			case 1:
				cwd := cwds[0]
				cmd.Cwd = &cwd
			default:
				f.Ambiguous = append(f.Ambiguous, cmd.Pointer)
			}
		}
	case []any:
		for i, item := range v {
			var next []*cnode
			for _, n := range exp {
				next = n.item(i, next)
			}
			find(item, ptr+"/"+strconv.Itoa(i), next, f)
		}
	}
}

// isCwd reports whether a string member's schemas class it cwd.
func isCwd(v any, set []*cnode) bool {
	if _, ok := v.(string); !ok {
		return false
	}
	for _, n := range closure(set, v) {
		if n.class&ClassCwd != 0 {
			return true
		}
	}
	return false
}

// parentPointer is the pointer of the object or array holding the value at p.
func parentPointer(p string) string {
	return p[:strings.LastIndexByte(p, '/')]
}

// escapePointer escapes a member name as a JSON pointer token.
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// cnode is one compiled schema object, as the classifier reads it.
type cnode struct {
	never bool       // the schema false
	class ParamClass // its format's class; ClassText for enum or const
	fixed bool       // enum or const
	deep  bool       // "format": "text": everything beneath is text too
	types jtypes     // its "type", 0 when it has none

	// object
	props    map[string]*cnode
	patterns []patternNode
	addl     *cnode // additionalProperties; nil with addlSet is false
	addlSet  bool
	uneval   *cnode // unevaluatedProperties, applied where addl is not set (finding only)
	depends  map[string]*cnode

	// array
	prefix   []*cnode
	items    *cnode // items after prefix; nil with itemsSet is false
	itemsSet bool
	unevalIt *cnode

	// in-place applicators: all apply ($ref, allOf), one of any, exactly one of one, then or
	// els after an if (nil: true), dynamic ($dynamicRef, $recursiveRef) at the target the
	// compiler resolved, which may not be where evaluation goes.
	all, any, one []*cnode
	hasIf         bool
	then, els     *cnode
	dynamic       []*cnode
}

type patternNode struct {
	re jsonschema.Regexp
	n  *cnode
}

// deepText is what applies beneath a "format": "text": text, all the way down.
var deepText = &cnode{class: ClassText, deep: true}

// member returns next with the schemas that apply to member k of an object added.
func (n *cnode) member(k string, next []*cnode) []*cnode {
	if n.deep {
		next = append(next, deepText)
	}
	matched := false
	if p, ok := n.props[k]; ok {
		next, matched = append(next, p), true
	}
	for _, pp := range n.patterns {
		if pp.re.MatchString(k) {
			next, matched = append(next, pp.n), true
		}
	}
	if !matched {
		switch {
		case n.addlSet:
			if n.addl != nil {
				next = append(next, n.addl)
			}
		case n.uneval != nil:
			next = append(next, n.uneval)
		}
	}
	return next
}

// item returns next with the schemas that apply to item i of an array added.
func (n *cnode) item(i int, next []*cnode) []*cnode {
	if n.deep {
		next = append(next, deepText)
	}
	switch {
	case i < len(n.prefix):
		return append(next, n.prefix[i])
	case n.itemsSet:
		if n.items != nil {
			next = append(next, n.items)
		}
	case n.unevalIt != nil:
		next = append(next, n.unevalIt)
	}
	return next
}

// closure returns the schemas that apply to v in place: set and, transitively, their
// applicators, each once.
func closure(set []*cnode, v any) []*cnode {
	if len(set) == 0 {
		return nil
	}
	seen := make(map[*cnode]bool, len(set))
	var out []*cnode
	var add func(n *cnode)
	add = func(n *cnode) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		out = append(out, n)
		for _, m := range n.all {
			add(m)
		}
		for _, m := range n.any {
			add(m)
		}
		for _, m := range n.one {
			add(m)
		}
		add(n.then)
		add(n.els)
		for _, m := range n.dynamic {
			add(m)
		}
		if obj, ok := v.(map[string]any); ok {
			for k, m := range n.depends {
				if _, present := obj[k]; present {
					add(m)
				}
			}
		}
	}
	for _, n := range set {
		add(n)
	}
	return out
}

// jtypes is a set of the JSON types the classifier tells apart.
type jtypes uint8

const (
	cString jtypes = 1 << iota
	cObject
	cArray
	cOther // number, integer, boolean, null
	cAll   = cString | cObject | cArray | cOther
)

func typesOf(t *jsonschema.Types) jtypes {
	if t == nil || t.IsEmpty() {
		return 0
	}
	var out jtypes
	for _, name := range t.ToStrings() {
		switch name {
		case "string":
			out |= cString
		case "object":
			out |= cObject
		case "array":
			out |= cArray
		default:
			out |= cOther
		}
	}
	return out
}

// newClasses compiles the classification of s. A schema beyond the classifier's bounds
// (MaxClassNodes, MaxClassSteps) is not complete.
func newClasses(s *jsonschema.Schema) *Classes {
	b := &classBuilder{nodes: map[*jsonschema.Schema]*cnode{}}
	root := b.node(s)
	c := &Classes{root: root}
	if b.tooBig {
		c.unclassified = []string{"params"}
		return c
	}
	a := newAnalysis(b.list)
	c.complete = a.run(root)
	if !c.complete {
		c.unclassified = a.where(root)
	}
	return c
}

type classBuilder struct {
	nodes  map[*jsonschema.Schema]*cnode
	list   []*cnode
	tooBig bool
}

func (b *classBuilder) node(s *jsonschema.Schema) *cnode {
	if s == nil {
		return nil
	}
	if n, ok := b.nodes[s]; ok {
		return n
	}
	n := &cnode{}
	b.nodes[s] = n
	b.list = append(b.list, n)
	if len(b.list) > MaxClassNodes {
		b.tooBig = true
		return n
	}
	if s.Bool != nil {
		n.never = !*s.Bool
		return n
	}
	for _, e := range s.Extensions {
		if fc, ok := e.(formatClass); ok {
			n.class |= ParamClass(fc)
			n.deep = n.deep || ParamClass(fc) == ClassText
		}
	}
	if s.Enum != nil || s.Const != nil {
		n.fixed = true
		n.class |= ClassText
	}
	n.types = typesOf(s.Types)

	if len(s.Properties) > 0 {
		n.props = make(map[string]*cnode, len(s.Properties))
		for k, sub := range s.Properties {
			n.props[k] = b.node(sub)
		}
	}
	// Patterns in a stable order, so that two builds of one schema are the same.
	pats := make([]jsonschema.Regexp, 0, len(s.PatternProperties))
	for re := range s.PatternProperties {
		pats = append(pats, re)
	}
	slices.SortFunc(pats, func(a, b jsonschema.Regexp) int { return strings.Compare(a.String(), b.String()) })
	for _, re := range pats {
		n.patterns = append(n.patterns, patternNode{re, b.node(s.PatternProperties[re])})
	}
	switch a := s.AdditionalProperties.(type) {
	case bool:
		n.addlSet = true
		if a {
			n.addl = b.node(trueSchema)
		}
	case *jsonschema.Schema:
		n.addlSet, n.addl = true, b.node(a)
	}
	n.uneval = b.node(s.UnevaluatedProperties)
	for k, sub := range s.DependentSchemas {
		if n.depends == nil {
			n.depends = map[string]*cnode{}
		}
		n.depends[k] = b.node(sub)
	}
	for k, d := range s.Dependencies {
		if sub, ok := d.(*jsonschema.Schema); ok {
			if n.depends == nil {
				n.depends = map[string]*cnode{}
			}
			n.depends[k] = b.node(sub)
		}
	}

	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		n.itemsSet, n.items = true, b.node(it)
	case []*jsonschema.Schema:
		for _, sub := range it {
			n.prefix = append(n.prefix, b.node(sub))
		}
		switch ai := s.AdditionalItems.(type) {
		case bool:
			n.itemsSet = true
			if ai {
				n.items = b.node(trueSchema)
			}
		case *jsonschema.Schema:
			n.itemsSet, n.items = true, b.node(ai)
		}
	}
	for _, sub := range s.PrefixItems {
		n.prefix = append(n.prefix, b.node(sub))
	}
	if s.Items2020 != nil {
		n.itemsSet, n.items = true, b.node(s.Items2020)
	}
	n.unevalIt = b.node(s.UnevaluatedItems)

	if s.Ref != nil {
		n.all = append(n.all, b.node(s.Ref))
	}
	for _, sub := range s.AllOf {
		n.all = append(n.all, b.node(sub))
	}
	for _, sub := range s.AnyOf {
		n.any = append(n.any, b.node(sub))
	}
	for _, sub := range s.OneOf {
		n.one = append(n.one, b.node(sub))
	}
	if s.If != nil {
		n.hasIf = true
		n.then, n.els = b.node(s.Then), b.node(s.Else)
	}
	if s.DynamicRef != nil && s.DynamicRef.Ref != nil {
		n.dynamic = append(n.dynamic, b.node(s.DynamicRef.Ref))
	}
	if s.RecursiveRef != nil {
		n.dynamic = append(n.dynamic, b.node(s.RecursiveRef))
	}
	return n
}

// trueSchema stands for additionalProperties (or additionalItems) true: a schema that
// allows anything and classifies nothing.
var trueSchema = func() *jsonschema.Schema {
	t := true
	return &jsonschema.Schema{Bool: &t}
}()

// analysis decides completeness as the greatest fixed point of "every string a value of this
// schema can hold is classified": every node starts complete, and a node whose rule fails
// given the others is marked incomplete until nothing changes. Recursion through containers
// (a tree of objects) is thus complete when every level is, which is right for the finite
// values calls carry; recursion in place (allOf: [{"$ref": "#"}]) proves nothing.
type analysis struct {
	nodes    []*cnode
	complete map[*cnode]bool
	types    map[*cnode]jtypes
	steps    int
}

func newAnalysis(nodes []*cnode) *analysis {
	a := &analysis{nodes: nodes, complete: make(map[*cnode]bool, len(nodes)), types: make(map[*cnode]jtypes, len(nodes))}
	for _, n := range nodes {
		a.complete[n] = true
	}
	return a
}

// run computes the fixed point and reports whether root is complete; false when the work
// bound is reached.
func (a *analysis) run(root *cnode) bool {
	for changed := true; changed; {
		changed = false
		for _, n := range a.nodes {
			if !a.complete[n] {
				continue
			}
			if !a.holds(n) {
				a.complete[n] = false
				changed = true
			}
			if a.steps > MaxClassSteps {
				return false
			}
		}
	}
	return a.complete[root]
}

// holds reports whether n's rule holds for strings, objects and arrays.
func (a *analysis) holds(n *cnode) bool {
	return a.witness(n, cString, nil) && a.witness(n, cObject, nil) && a.witness(n, cArray, nil)
}

// witness reports whether every value of kind k that validates against n is classified by
// some schema it validates against: n itself, one of its allOf, every anyOf or oneOf branch
// that admits k, or both then and else.
func (a *analysis) witness(n *cnode, k jtypes, visiting map[*cnode]bool) bool {
	a.steps++
	if n == nil || a.steps > MaxClassSteps {
		return false // an absent then or else is the schema true
	}
	if n.never || n.fixed || a.typesOf(n, nil)&k == 0 || a.own(n, k) {
		return true
	}
	if visiting[n] {
		return false
	}
	if visiting == nil {
		visiting = map[*cnode]bool{}
	}
	visiting[n] = true
	defer delete(visiting, n)
	for _, m := range n.all {
		if a.witness(m, k, visiting) {
			return true
		}
	}
	every := func(bs []*cnode) bool {
		if len(bs) == 0 {
			return false
		}
		for _, b := range bs {
			if !a.witness(b, k, visiting) {
				return false
			}
		}
		return true
	}
	if every(n.any) || every(n.one) {
		return true
	}
	return n.hasIf && a.witness(n.then, k, visiting) && a.witness(n.els, k, visiting)
}

// own reports whether n's own keywords classify every value of kind k.
func (a *analysis) own(n *cnode, k jtypes) bool {
	if n.deep {
		return true
	}
	switch k {
	case cString:
		return n.class != 0
	case cObject:
		if !n.addlSet || n.addl != nil && !a.complete[n.addl] {
			return false
		}
		for _, p := range n.props {
			if !a.complete[p] {
				return false
			}
		}
		for _, p := range n.patterns {
			if !a.complete[p.n] {
				return false
			}
		}
		return true
	case cArray:
		if !n.itemsSet || n.items != nil && !a.complete[n.items] {
			return false
		}
		for _, p := range n.prefix {
			if !a.complete[p] {
				return false
			}
		}
		return true
	}
	return true
}

// typesOf returns the JSON types a value validating against n can have, or more: its own
// type, narrowed by its allOf, by the union of its anyOf and of its oneOf, and by then or
// else.
func (a *analysis) typesOf(n *cnode, visiting map[*cnode]bool) jtypes {
	if n == nil {
		return cAll
	}
	if t, ok := a.types[n]; ok {
		return t
	}
	if n.never {
		return 0
	}
	if visiting[n] {
		return cAll
	}
	if visiting == nil {
		visiting = map[*cnode]bool{}
	}
	visiting[n] = true
	defer delete(visiting, n)
	a.steps++
	t := cAll
	if n.types != 0 {
		t &= n.types
	}
	for _, m := range n.all {
		t &= a.typesOf(m, visiting)
	}
	union := func(bs []*cnode) jtypes {
		if len(bs) == 0 {
			return cAll
		}
		var u jtypes
		for _, b := range bs {
			u |= a.typesOf(b, visiting)
		}
		return u
	}
	t &= union(n.any) & union(n.one)
	if n.hasIf {
		t &= a.typesOf(n.then, visiting) | a.typesOf(n.els, visiting)
	}
	// A result that assumed all types for a node in progress is still a superset of the
	// truth, which is all the analysis needs.
	a.types[n] = t
	return t
}

// maxListedUnclassified is how many unclassified places Classes.Unclassified names.
const maxListedUnclassified = 8

// where names some places below root where the rule fails, as field paths.
func (a *analysis) where(root *cnode) []string {
	var out []string
	seen := map[*cnode]bool{}
	var walk func(n *cnode, path string)
	walk = func(n *cnode, path string) {
		if len(out) >= maxListedUnclassified || n == nil || seen[n] {
			return
		}
		seen[n] = true
		before := len(out)
		for _, m := range closure([]*cnode{n}, nil) {
			for _, k := range slices.Sorted(maps.Keys(m.props)) {
				if !a.complete[m.props[k]] {
					walk(m.props[k], field(path, k))
				}
			}
			for _, p := range m.patterns {
				if !a.complete[p.n] {
					walk(p.n, path+".*")
				}
			}
			if m.addl != nil && !a.complete[m.addl] {
				walk(m.addl, path+".*")
			}
			for i, p := range m.prefix {
				if !a.complete[p] {
					walk(p, path+"["+strconv.Itoa(i)+"]")
				}
			}
			if m.items != nil && !a.complete[m.items] {
				walk(m.items, path+"[*]")
			}
		}
		if len(out) == before && len(out) < maxListedUnclassified {
			if !a.witness(n, cObject, nil) && a.typesOf(n, nil)&cObject != 0 {
				out = append(out, path+".*")
			} else {
				out = append(out, path)
			}
		}
	}
	walk(root, "params")
	return out
}
