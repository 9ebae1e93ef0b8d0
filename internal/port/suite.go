package port

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// caseNamePattern is the spelling of a case name.
var caseNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// ErrSuiteNotFound is wrapped by Suite's error for a name the kit index does not list (or that
// is no suite name at all) and for a listed suite whose file does not exist.
var ErrSuiteNotFound = errors.New("conformance suite not found")

// The member names of each object of the suite format; any other is refused.
var (
	suiteFields  = []string{"suite", "cases"}
	caseFields   = []string{"name", "method", "params", "expect"}
	expectFields = []string{"error", "max_effect", "reversibility", "data_classes", "surface"}
)

// expectedErrors are the error codes a case may expect.
var expectedErrors = []sdk.Code{sdk.CodeInvalidParams, sdk.CodeExecutionFailed, sdk.CodePermissionDenied, sdk.CodeNotFound}

// Suite is a conformance suite, parsed. A suite is data, the cases the host runs against a
// provider's capability to see that it answers as its port says, never code the provider
// ships. Its file, in the host's descriptor folder, is found by its name in the kit index
// alone:
//
//	conformance/knowledge/v1/basic  →  <ports_dir>/conformance/knowledge/v1/basic.json
//
// and holds
//
//	{
//	  "suite": "conformance/knowledge/v1/basic",
//	  "cases": [
//	    {"name": "finds-a-document", "method": "search", "params": {"query": "onboarding"},
//	     "expect": {"max_effect": "read"}},
//	    {"name": "refuses-a-bad-query", "method": "search", "params": {"query": " "},
//	     "expect": {"error": "invalid_params", "max_effect": "none"}}
//	  ]
//	}
//
// Members:
//
//   - suite: the suite's own name, the one it is listed under (a file moved to another name
//     is refused rather than run under the wrong one).
//   - cases: 1 to MaxCases cases, run in order.
//   - name: the case's name, ^[a-z][a-z0-9_-]{0,63}$, unique in the suite; a failure names it.
//   - method: the port method the case calls, a method of the host's copy of the suite's
//     port; the case runs against the capability that implements it.
//   - params: the call's params, a JSON object (absent: {}); they must fit the capability's
//     parameters schema, or the suite, not the provider, is at fault.
//   - expect.error: absent, the call must succeed and its result fit the capability's returns
//     schema; else the error code it must fail with: invalid_params, execution_failed,
//     permission_denied or not_found (timeout and app_unresponsive are the host's findings,
//     not an answer a suite can ask for).
//   - expect.max_effect: none or read, the worst effect the call may report. A suite runs only
//     dry runs and calls of capabilities that read, so no case can expect more.
//   - expect.reversibility, expect.data_classes, expect.surface (optional): what the host
//     knows of the method, which the capability's declarations are held to: it may declare
//     no more reversibility than reversibility (reversible > compensable > irreversible,
//     after capgate's own reading: reversible only with an undo window); it must declare each
//     data class of data_classes (a class covers its sub-classes); and each surface
//     requirement (screen, voice, strong_auth) of surface. This is how the evaluation checks
//     a capability's declared reversibility, data classes and surface requirement.
//
// The format is strict: unknown members, duplicate member names, numbers a double cannot hold
// exactly and missing required members are refused, each problem named by its field path.
// Evolution: a new member must be optional, with a default under which every existing suite
// means what it meant.
//
// A Suite's values are the caller's to read; Registry.Suite returns a new one on each call.
type Suite struct {
	Name  string // "conformance/knowledge/v1/basic"
	Port  string // "knowledge", from the name
	Major int    // 1, from the name
	Cases []Case
}

// Case is one call of a suite and what it must come to.
type Case struct {
	Name   string
	Method string          // the port method, "search"
	Params json.RawMessage // a JSON object in canonical form (RFC 8785)
	Expect Expect
}

// Expect is what a case's call must come to.
type Expect struct {
	// Error is the code the call must fail with; empty, it must succeed.
	Error sdk.Code
	// MaxEffect is the worst effect the call may report: none or read.
	MaxEffect manifest.SideEffect
	// Reversibility, when set, is the most reversible the method really is, as the host
	// knows it: a capability that declares more (reversible where the method is compensable
	// or irreversible) fails the case.
	Reversibility manifest.Reversibility
	// DataClasses are the data classes the method reads or writes: each must be among the
	// capability's declared data_classes (a declared class covers its own sub-classes, so
	// "memory" covers "memory.entries").
	DataClasses []string
	// Surface is what the approval surface must offer for the method (screen, voice,
	// strong_auth): each must be among the capability's declared surface.
	Surface []string
}

// surfaces are the surface requirements a case may name, as definitions do.
var surfaces = []string{"screen", "voice", "strong_auth"}

// SplitSuite splits a suite name such as "conformance/knowledge/v1/basic" into its port,
// major and suite part. It reports false for anything that is not a suite name.
func SplitSuite(name string) (port string, major int, suite string, ok bool) {
	if !conformancePattern.MatchString(name) {
		return "", 0, "", false
	}
	parts := strings.Split(name, "/") // conformance, port, v<major>, suite
	n, err := strconv.Atoi(parts[2][1:])
	if err != nil {
		return "", 0, "", false
	}
	return parts[1], n, parts[3], true
}

// SuiteFile is where the suite name lives inside the descriptor folder, a slash-separated
// relative path: "conformance/knowledge/v1/basic.json". It reports false for anything that is
// not a suite name, so no path it returns can leave the folder.
func SuiteFile(name string) (string, bool) {
	if _, _, _, ok := SplitSuite(name); !ok {
		return "", false
	}
	return name + ".json", true
}

// ParseSuite reads one suite file strictly (see the format above). An error is a *FileError,
// or several joined, each wrapping ErrInvalidDescriptor, with File empty; Registry.Suite fills
// it in. ParseSuite checks the file alone: that its methods are the port's and that its name is
// the one it was looked up under is Registry.Suite's work.
func ParseSuite(data []byte) (*Suite, error) {
	s, errs := parseSuite(data)
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return s, nil
}

func parseSuite(data []byte) (*Suite, []*FileError) {
	if len(data) > MaxSuiteBytes {
		return nil, []*FileError{{Rule: fmt.Sprintf("larger than %d bytes", MaxSuiteBytes), err: jcs.ErrTooLarge}}
	}
	root, err := jcs.Parse(data, &jcs.Options{ExactNumbers: true, MaxDepth: MaxSuiteDepth, MaxBytes: MaxSuiteBytes})
	if err != nil {
		var se *jcs.SyntaxError
		if errors.As(err, &se) {
			return nil, []*FileError{{Path: se.Path, Rule: se.Rule, err: err}}
		}
		return nil, []*FileError{{Rule: "not JSON", err: err}}
	}
	d := &decoder{}
	s := d.suite(root)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return s, nil
}

func (d *decoder) suite(root jcs.Value) *Suite {
	if !d.object(root, "", suiteFields) {
		return nil
	}
	s := &Suite{}
	if name, ok := d.str(root, "", "suite", true); ok {
		p, major, _, ok := SplitSuite(name)
		if !ok {
			d.add("suite", "must be conformance/<port>/v<major>/<suite>")
		}
		s.Name, s.Port, s.Major = name, p, major
	}
	cv, ok := root.Get("cases")
	switch {
	case !ok:
		d.add("cases", "required")
		return s
	case cv.Kind != jcs.Array:
		d.add("cases", "must be an array")
		return s
	case len(cv.Items) == 0:
		d.add("cases", "must list at least one case")
		return s
	case len(cv.Items) > MaxCases:
		d.add("cases", fmt.Sprintf("more than %d cases", MaxCases))
		return s
	}
	names := map[string]int{}
	for i, item := range cv.Items {
		p := index("cases", i)
		c := d.suiteCase(item, p)
		if c.Name != "" {
			if first, dup := names[c.Name]; dup {
				d.add(field(p, "name"), "duplicate case name (first at "+index("cases", first)+")")
			} else {
				names[c.Name] = i
			}
		}
		s.Cases = append(s.Cases, c)
	}
	return s
}

func (d *decoder) suiteCase(v jcs.Value, path string) Case {
	var c Case
	if !d.object(v, path, caseFields) {
		return c
	}
	if s, ok := d.str(v, path, "name", true); ok {
		if caseNamePattern.MatchString(s) {
			c.Name = s
		} else {
			d.add(field(path, "name"), "must match ^[a-z][a-z0-9_-]{0,63}$")
		}
	}
	if s, ok := d.str(v, path, "method", true); ok {
		if methodPattern.MatchString(s) {
			c.Method = s
		} else {
			d.add(field(path, "method"), "must be a method name matching ^[a-z][a-z0-9_]{0,63}$")
		}
	}
	c.Params = json.RawMessage("{}")
	if pv, ok := v.Get("params"); ok {
		if pv.Kind != jcs.Object {
			d.add(field(path, "params"), "must be an object")
		} else if raw, err := pv.AppendCanonical(nil); err != nil {
			d.add(field(path, "params"), "cannot be written in canonical form")
		} else {
			c.Params = raw
		}
	}
	ev, ok := v.Get("expect")
	ep := field(path, "expect")
	if !ok {
		d.add(ep, "required")
		return c
	}
	if !d.object(ev, ep, expectFields) {
		return c
	}
	if s, ok := d.str(ev, ep, "error", false); ok {
		if code := sdk.Code(s); slices.Contains(expectedErrors, code) {
			c.Expect.Error = code
		} else {
			d.add(field(ep, "error"), "must be one of invalid_params, execution_failed, permission_denied, not_found")
		}
	}
	if s, ok := d.str(ev, ep, "max_effect", true); ok {
		switch se := manifest.SideEffect(s); se {
		case manifest.SideEffectNone, manifest.SideEffectRead:
			c.Expect.MaxEffect = se
		default:
			d.add(field(ep, "max_effect"), "must be none or read: a suite runs only dry runs and reads")
		}
	}
	if s, ok := d.str(ev, ep, "reversibility", false); ok {
		if r := manifest.Reversibility(s); r.Valid() {
			c.Expect.Reversibility = r
		} else {
			d.add(field(ep, "reversibility"), "must be reversible, compensable or irreversible")
		}
	}
	c.Expect.DataClasses = d.names(ev, ep, "data_classes", dataClassPattern, "must match ^[a-z][a-z0-9._-]{0,127}$")
	c.Expect.Surface = d.names(ev, ep, "surface", nil, "must be screen, voice or strong_auth")
	return c
}

// dataClassPattern is the spelling of a data class, as manifests have it.
var dataClassPattern = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,127}$`)

// names reads the optional list of distinct strings o.name: each matching pattern, or, with
// pattern nil, one of surfaces; at most MaxCaseNames.
func (d *decoder) names(o jcs.Value, path, name string, pattern *regexp.Regexp, rule string) []string {
	v, ok := o.Get(name)
	if !ok {
		return nil
	}
	p := field(path, name)
	if v.Kind != jcs.Array {
		d.add(p, "must be an array of strings")
		return nil
	}
	if len(v.Items) > MaxCaseNames {
		d.add(p, fmt.Sprintf("more than %d entries", MaxCaseNames))
		return nil
	}
	var out []string
	for i, item := range v.Items {
		ip := index(p, i)
		switch {
		case item.Kind != jcs.String:
			d.add(ip, "must be a string")
		case pattern != nil && !pattern.MatchString(item.Str), pattern == nil && !slices.Contains(surfaces, item.Str):
			d.add(ip, rule)
		case slices.Contains(out, item.Str):
			d.add(ip, "listed twice")
		default:
			out = append(out, item.Str)
		}
	}
	return out
}

// Suite loads the conformance suite name from the descriptor folder the registry was loaded
// from (LoadDir). The name is first looked up in the kit index, as a string: a name the index
// does not list, or that is not of the form conformance/<port>/v<major>/<suite>, is refused
// with ErrSuiteNotFound before anything is opened, so no name, however spelled, reaches a file
// the index does not list. The file is then SuiteFile(name) inside the folder, read through an
// os.Root; it, and each folder on the way to it, must not be a symbolic link (an operator's
// suite is a file of the folder, not a pointer elsewhere that could change under it), and it
// must be a regular file of at most MaxSuiteBytes. The suite it holds must carry the same
// name, and its port and every case's method must be in the registry's copy of the ports.
//
// The file is read on each call, not at LoadDir: the kit index may list a suite before its
// file is written, and a host of many suites keeps none in memory. A listed suite without a
// file is ErrSuiteNotFound; any other problem is a *FileError (or several joined) naming the
// file and the field, wrapping ErrInvalidDescriptor. A registry built by New, or a nil one,
// has no folder: every suite is ErrSuiteNotFound.
func (r *Registry) Suite(name string) (*Suite, error) {
	if !r.HasSuite(name) || !conformancePattern.MatchString(name) {
		// The name is not echoed: it comes from a manifest, and may be anything.
		return nil, fmt.Errorf("port: conformance suite: not in the host's kit index: %w", ErrSuiteNotFound)
	}
	rel, _ := SuiteFile(name)
	if r.dir == "" {
		return nil, fmt.Errorf("port: %s: the registry has no folder to read suites from: %w", rel, ErrSuiteNotFound)
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, fmt.Errorf("port: %w", err)
	}
	defer root.Close()
	data, err := readSuiteFile(root, rel)
	if err != nil {
		return nil, err
	}
	s, errs := parseSuite(data)
	if len(errs) == 0 {
		errs = r.checkSuite(s, name)
	}
	if len(errs) > 0 {
		for _, e := range errs {
			e.File = rel
		}
		return nil, joinErrors(errs)
	}
	return s, nil
}

// checkSuite holds a parsed suite to the registry: its name and its port's methods.
func (r *Registry) checkSuite(s *Suite, name string) []*FileError {
	if s.Name != name {
		return []*FileError{{Path: "suite", Rule: "must be the name the suite is listed under in the kit index"}}
	}
	p := r.lookup(s.Port, s.Major)
	if p == nil {
		return []*FileError{{Path: "suite", Rule: "names a port and major the host does not support"}}
	}
	var errs []*FileError
	for i, c := range s.Cases {
		if _, ok := p.Methods[c.Method]; !ok {
			errs = append(errs, &FileError{Path: field(index("cases", i), "method"), Rule: "not a method of the host's copy of " + p.String()})
		}
	}
	return errs
}

// readSuiteFile reads the suite file rel of root, refusing a symbolic link anywhere on its way
// and anything but a regular file of at most MaxSuiteBytes.
func readSuiteFile(root *os.Root, rel string) ([]byte, error) {
	// Each folder on the way, then the file itself, by Lstat: a link is refused, even one that
	// stays inside the folder (os.Root would refuse one that leaves it in any case).
	var fileInfo os.FileInfo
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := path.Join(parts[:i+1]...)
		st, err := root.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("port: %s: listed in the kit index but has no file: %w", rel, ErrSuiteNotFound)
		}
		if err != nil {
			return nil, &FileError{File: rel, Rule: "cannot be read", err: err}
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return nil, &FileError{File: rel, Rule: p + " must not be a symbolic link"}
		}
		last := i == len(parts)-1
		switch {
		case !last && !st.IsDir():
			return nil, &FileError{File: rel, Rule: p + " must be a folder"}
		case last && !st.Mode().IsRegular():
			return nil, &FileError{File: rel, Rule: "must be a regular file"}
		}
		fileInfo = st
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, &FileError{File: rel, Rule: "cannot be opened", err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &FileError{File: rel, Rule: "cannot be read", err: err}
	}
	// The file opened is the one checked: a link put in its place between the two is refused.
	if !os.SameFile(st, fileInfo) || !st.Mode().IsRegular() {
		return nil, &FileError{File: rel, Rule: "changed while it was read"}
	}
	if st.Size() > MaxSuiteBytes {
		return nil, &FileError{File: rel, Rule: fmt.Sprintf("larger than %d bytes", MaxSuiteBytes), err: jcs.ErrTooLarge}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSuiteBytes+1))
	if err != nil {
		return nil, &FileError{File: rel, Rule: "cannot be read", err: err}
	}
	if len(data) > MaxSuiteBytes {
		return nil, &FileError{File: rel, Rule: fmt.Sprintf("larger than %d bytes", MaxSuiteBytes), err: jcs.ErrTooLarge}
	}
	return data, nil
}

// MarshalJSON writes s as a suite file, which ParseSuite reads back as an equal Suite.
func (s *Suite) MarshalJSON() ([]byte, error) {
	type expect struct {
		Error         sdk.Code               `json:"error,omitempty"`
		MaxEffect     manifest.SideEffect    `json:"max_effect"`
		Reversibility manifest.Reversibility `json:"reversibility,omitempty"`
		DataClasses   []string               `json:"data_classes,omitempty"`
		Surface       []string               `json:"surface,omitempty"`
	}
	type kase struct {
		Name   string          `json:"name"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Expect expect          `json:"expect"`
	}
	cases := make([]kase, len(s.Cases))
	for i, c := range s.Cases {
		params := c.Params
		if len(params) == 0 {
			params = json.RawMessage("{}")
		}
		cases[i] = kase{c.Name, c.Method, params, expect(c.Expect)}
	}
	return json.Marshal(struct {
		Suite string `json:"suite"`
		Cases []kase `json:"cases"`
	}{s.Name, cases})
}
