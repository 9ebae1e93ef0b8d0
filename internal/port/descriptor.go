package port

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/yamljson"
	"github.com/capgate/capgate/manifest"
)

var (
	// portPattern is the manifest's spelling of a port and major (manifest/decode.go).
	portPattern = regexp.MustCompile(`^[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)*\.v[1-9][0-9]{0,8}$`)
	// methodPattern is the method part of a capability name <port>.<snake_case_method>.
	methodPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	// evidencePattern is the manifest's spelling of an evidence record type.
	evidencePattern = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,127}$`)
	// conformancePattern is the manifest's spelling of a conformance suite (manifest/decode.go).
	// It admits no "..", no empty segment, no leading slash and no backslash, so a name that
	// matches it cannot be read as a path outside the kit index even by mistake.
	conformancePattern = regexp.MustCompile(`^conformance/[a-z][a-z0-9]*/v[1-9][0-9]{0,8}/[a-z][a-z0-9_-]{0,63}$`)
)

// ErrInvalidDescriptor is wrapped by every *FileError that LoadDir or ParseDescriptor returns
// for a descriptor or kit index that breaks the format.
var ErrInvalidDescriptor = errors.New("invalid port descriptor")

// FileError is one way a file of the descriptor folder breaks the format: which file, which
// field (a path such as methods.purge.compensating_action, empty for the document) and which
// rule. Like manifest problems it never holds the offending value.
type FileError struct {
	File string // the file's name inside the folder
	Path string
	Rule string
	err  error // a cause beside ErrInvalidDescriptor, such as a jcs or yamljson error
}

// Error returns "port: FILE: PATH: RULE".
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString("port: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Rule)
	return b.String()
}

// Unwrap returns ErrInvalidDescriptor and, for a file that is not JSON or YAML at all, the
// parser's error.
func (e *FileError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrInvalidDescriptor}
	}
	return []error{ErrInvalidDescriptor, e.err}
}

// Method is the host's copy of one method of a port: the floors it puts on a capability that
// implements it.
type Method struct {
	Risk        manifest.Risk       `json:"risk"`         // a capability's risk is at least this
	SideEffects manifest.SideEffect `json:"side_effects"` // a capability's side effect is at least this
	Idempotent  bool                `json:"idempotent"`   // false: a capability's idempotency must be none
	DryRun      bool                `json:"dry_run"`      // false: a capability may not claim a dry run
	// Evidence lists the evidence record types every implementing capability declares.
	Evidence []string `json:"evidence,omitempty"`
	// CompensatingAction is another method of the same port that undoes this one; empty for
	// none. A capability implementing this method names, in compensation, a capability of its
	// manifest that implements it.
	CompensatingAction string `json:"compensating_action,omitempty"`
}

// Port is the host's copy of one major of a port.
type Port struct {
	Name    string            // "knowledge"; dotted names such as "acme.billing" are allowed
	Major   int               // 1 for knowledge.v1
	Methods map[string]Method // method name → floors
	// Definitions are the definitions (by meaning) the port is the set of, each
	// name@major.minor, in the descriptor's order: the host loads them from its ports
	// folder's definitions, and a port naming one it does not load is reported.
	Definitions []string
}

// String returns the port's manifest spelling, such as "knowledge.v1".
func (p *Port) String() string { return p.Name + ".v" + strconv.Itoa(p.Major) }

// MarshalJSON writes p as a descriptor file: {"port": ..., "methods": {...}}, methods in name
// order. ParseDescriptor reads it back as an equal Port.
func (p *Port) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Port        string            `json:"port"`
		Methods     map[string]Method `json:"methods"`
		Definitions []string          `json:"definitions,omitempty"`
	}{p.String(), p.Methods, p.Definitions})
}

// SplitPort splits a port's manifest spelling such as "knowledge.v1" into its name and major.
// It reports false for anything that is not a port name and major.
func SplitPort(s string) (name string, major int, ok bool) {
	if !portPattern.MatchString(s) {
		return "", 0, false
	}
	i := strings.LastIndex(s, ".v")
	n, err := strconv.Atoi(s[i+2:])
	if err != nil {
		return "", 0, false
	}
	return s[:i], n, true
}

// The member names of each object of the descriptor format; any other is refused.
var (
	descriptorFields = []string{"port", "methods", "definitions"}
	methodFields     = []string{"risk", "side_effects", "idempotent", "dry_run", "evidence", "compensating_action"}
	kitFields        = []string{"suites"}
)

// ParseDescriptor reads one descriptor, JSON or (when yaml is set) the YAML authoring form,
// strictly: unknown members, duplicate member names and missing required members are refused.
// risk, side_effects, idempotent and dry_run are required in every method, so that no floor of
// the host's copy is left to a default. An error is a *FileError, or several joined, with File
// empty; LoadDir fills it in.
func ParseDescriptor(data []byte, yaml bool) (*Port, error) {
	p, errs := parseDescriptor(data, yaml)
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return p, nil
}

func parseDescriptor(data []byte, yaml bool) (*Port, []*FileError) {
	root, err := parseDocument(data, yaml)
	if err != nil {
		return nil, []*FileError{err}
	}
	d := &decoder{}
	p := d.descriptor(root)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return p, nil
}

// joinErrors returns the one error of errs, or all of them joined.
func joinErrors(errs []*FileError) error {
	if len(errs) == 1 {
		return errs[0]
	}
	es := make([]error, len(errs))
	for i, e := range errs {
		es[i] = e
	}
	return errors.Join(es...)
}

// parseDocument parses data as strict JSON, or as YAML converted to JSON first.
func parseDocument(data []byte, yaml bool) (jcs.Value, *FileError) {
	if len(data) > MaxDescriptorBytes {
		return jcs.Value{}, &FileError{Rule: fmt.Sprintf("larger than %d bytes", MaxDescriptorBytes), err: jcs.ErrTooLarge}
	}
	if yaml {
		js, err := yamljson.Convert(data)
		if err != nil {
			var ye *yamljson.Error
			if errors.As(err, &ye) {
				return jcs.Value{}, &FileError{Path: ye.Path, Rule: fmt.Sprintf("YAML %d:%d: %s", ye.Line, ye.Column, ye.Rule), err: err}
			}
			return jcs.Value{}, &FileError{Rule: "not YAML", err: err}
		}
		data = js
	}
	v, err := jcs.Parse(data, &jcs.Options{ExactNumbers: true, MaxDepth: MaxDescriptorDepth, MaxBytes: MaxDescriptorBytes})
	if err != nil {
		var se *jcs.SyntaxError
		if errors.As(err, &se) {
			return jcs.Value{}, &FileError{Path: se.Path, Rule: se.Rule, err: err}
		}
		return jcs.Value{}, &FileError{Rule: "not JSON", err: err}
	}
	return v, nil
}

// decoder collects every problem of one file rather than stopping at the first.
type decoder struct{ errs []*FileError }

func (d *decoder) add(path, rule string) {
	d.errs = append(d.errs, &FileError{Path: path, Rule: rule})
}

// object checks that v is an object with only known members.
func (d *decoder) object(v jcs.Value, path string, known []string) bool {
	if v.Kind != jcs.Object {
		d.add(path, "must be an object")
		return false
	}
	for _, m := range v.Members {
		if !slices.Contains(known, m.Name) {
			d.add(path, "unknown member (known: "+strings.Join(known, ", ")+")")
		}
	}
	return true
}

func (d *decoder) str(o jcs.Value, path, name string, required bool) (string, bool) {
	v, ok := o.Get(name)
	p := join(path, name)
	switch {
	case !ok && required:
		d.add(p, "required")
	case !ok:
	case v.Kind != jcs.String:
		d.add(p, "must be a string")
	case v.Str == "":
		d.add(p, "must not be empty")
	default:
		return v.Str, true
	}
	return "", false
}

func (d *decoder) boolean(o jcs.Value, path, name string) bool {
	v, ok := o.Get(name)
	p := join(path, name)
	switch {
	case !ok:
		d.add(p, "required")
	case v.Kind != jcs.Bool:
		d.add(p, "must be a boolean")
	default:
		return v.Bool
	}
	return false
}

func (d *decoder) descriptor(root jcs.Value) *Port {
	if !d.object(root, "", descriptorFields) {
		return nil
	}
	p := &Port{Methods: map[string]Method{}}
	if s, ok := d.str(root, "", "port", true); ok {
		name, major, ok := SplitPort(s)
		if !ok {
			d.add("port", `must be a port name and major such as "knowledge.v1"`)
		}
		p.Name, p.Major = name, major
	}
	mv, ok := root.Get("methods")
	switch {
	case !ok:
		d.add("methods", "required")
		return p
	case mv.Kind != jcs.Object:
		d.add("methods", "must be an object")
		return p
	case len(mv.Members) == 0:
		d.add("methods", "must list at least one method")
		return p
	case len(mv.Members) > MaxMethods:
		d.add("methods", fmt.Sprintf("more than %d methods", MaxMethods))
		return p
	}
	for _, m := range mv.Members {
		if !methodPattern.MatchString(m.Name) {
			d.add("methods", "method names must match ^[a-z][a-z0-9_]{0,63}$")
			continue
		}
		p.Methods[m.Name] = d.method(m.Value, "methods."+m.Name)
	}
	for _, m := range mv.Members {
		ca := p.Methods[m.Name].CompensatingAction
		if ca == "" {
			continue
		}
		if _, ok := p.Methods[ca]; !ok || ca == m.Name {
			d.add("methods."+m.Name+".compensating_action", "must name another method of this port")
		}
	}
	if dv, ok := root.Get("definitions"); ok {
		switch {
		case dv.Kind != jcs.Array:
			d.add("definitions", "must be an array of name@major.minor")
		case len(dv.Items) > MaxMethods:
			d.add("definitions", fmt.Sprintf("more than %d definitions", MaxMethods))
		default:
			for i, item := range dv.Items {
				at := "definitions[" + strconv.Itoa(i) + "]"
				if item.Kind != jcs.String {
					d.add(at, "must be a string")
					continue
				}
				ref, err := manifest.ParseDefinitionRef(item.Str)
				switch {
				case err != nil:
					d.add(at, "must be a definition's name@major.minor")
				case slices.Contains(p.Definitions, ref.String()):
					d.add(at, "listed twice")
				default:
					p.Definitions = append(p.Definitions, ref.String())
				}
			}
		}
	}
	return p
}

func (d *decoder) method(v jcs.Value, path string) Method {
	var m Method
	if !d.object(v, path, methodFields) {
		return m
	}
	if s, ok := d.str(v, path, "risk", true); ok {
		if r := manifest.Risk(s); r.Valid() {
			m.Risk = r
		} else {
			d.add(join(path, "risk"), "must be one of low, medium, high")
		}
	}
	if s, ok := d.str(v, path, "side_effects", true); ok {
		if se := manifest.SideEffect(s); se.Valid() {
			m.SideEffects = se
		} else {
			d.add(join(path, "side_effects"), "must be one of none, read, write, network, destructive, system")
		}
	}
	m.Idempotent = d.boolean(v, path, "idempotent")
	m.DryRun = d.boolean(v, path, "dry_run")
	if ev, ok := v.Get("evidence"); ok {
		ep := join(path, "evidence")
		switch {
		case ev.Kind != jcs.Array:
			d.add(ep, "must be an array")
		case len(ev.Items) > MaxEvidence:
			d.add(ep, fmt.Sprintf("more than %d entries", MaxEvidence))
		default:
			for i, e := range ev.Items {
				ip := ep + "[" + strconv.Itoa(i) + "]"
				switch {
				case e.Kind != jcs.String || !evidencePattern.MatchString(e.Str):
					d.add(ip, "must be a record type matching ^[a-z][a-z0-9._-]{0,127}$")
				case slices.Contains(m.Evidence, e.Str):
					d.add(ip, "duplicate evidence record")
				default:
					m.Evidence = append(m.Evidence, e.Str)
				}
			}
		}
	}
	if s, ok := d.str(v, path, "compensating_action", false); ok {
		if methodPattern.MatchString(s) {
			m.CompensatingAction = s
		} else {
			d.add(join(path, "compensating_action"), "must name another method of this port")
		}
	}
	return m
}

// parseKits reads the kit index: {"suites": [...]}, each entry a conformance suite name,
// without duplicates.
func parseKits(data []byte) (map[string]bool, []*FileError) {
	root, err := parseDocument(data, false)
	if err != nil {
		return nil, []*FileError{err}
	}
	d := &decoder{}
	suites := map[string]bool{}
	if d.object(root, "", kitFields) {
		sv, ok := root.Get("suites")
		switch {
		case !ok:
			d.add("suites", "required")
		case sv.Kind != jcs.Array:
			d.add("suites", "must be an array")
		case len(sv.Items) > MaxSuites:
			d.add("suites", fmt.Sprintf("more than %d entries", MaxSuites))
		default:
			for i, e := range sv.Items {
				ip := "suites[" + strconv.Itoa(i) + "]"
				switch {
				case e.Kind != jcs.String || !conformancePattern.MatchString(e.Str):
					d.add(ip, "must be conformance/<port>/v<major>/<suite>")
				case suites[e.Str]:
					d.add(ip, "duplicate suite")
				default:
					suites[e.Str] = true
				}
			}
		}
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return suites, nil
}

// join joins a member name to a path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
