package lock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/manifest"
)

// Parse reads data, a lockfile's text, strictly and validates the result (see
// File.Validate). Besides JSON's own grammar it refuses invalid UTF-8, lone surrogates,
// duplicate member names, unknown members, members that differ from a known one only by
// case, null in place of a value, and an unknown lockfile_version, which it checks before
// anything else. Every error is an *Error, or several joined, naming where and never what.
//
// The returned File has non-nil maps, times in UTC, and Manifest and Changes compact.
func Parse(data []byte) (*File, error) {
	if len(data) > MaxFileBytes {
		return nil, &Error{Rule: fmt.Sprintf("larger than %d bytes", MaxFileBytes), Err: jcs.ErrTooLarge}
	}
	root, err := jcs.Parse(data, &jcs.Options{MaxDepth: maxDepth, MaxBytes: MaxFileBytes})
	if err != nil {
		var se *jcs.SyntaxError
		if errors.As(err, &se) {
			return nil, &Error{Field: se.Path, Rule: fmt.Sprintf("%s (offset %d)", se.Rule, se.Offset), Err: err}
		}
		return nil, &Error{Rule: "not JSON", Err: err}
	}
	if root.Kind != jcs.Object {
		return nil, &Error{Rule: "must be a JSON object"}
	}
	// The version first: another version may have another shape, and naming its first
	// unknown member would hide the real reason.
	if v, ok := root.Get("lockfile_version"); !ok || v.Kind != jcs.Number || v.Num != strconv.Itoa(FormatVersion) {
		return nil, &Error{Field: "lockfile_version", Rule: "must be " + strconv.Itoa(FormatVersion), Err: ErrVersion}
	}
	if err := checkShape(root); err != nil {
		return nil, err
	}

	// checkShape has made sure encoding/json reads exactly what jcs read: no unknown or
	// case-folded names, no null, every value of the field's type.
	f := new(File)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		// Not reached for a file checkShape accepts; the error's text may quote the
		// input, so it is not kept.
		return nil, &Error{Rule: "does not decode"}
	}
	if f.Pending == nil {
		f.Pending = map[string]Pending{}
	}
	for k, e := range f.Plugins {
		f.Plugins[k] = normalEntry(e)
	}
	for k, p := range f.Pending {
		p.Entry = normalEntry(p.Entry)
		p.Changes = compact(p.Changes)
		p.Since = p.Since.UTC()
		f.Pending[k] = p
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// normalEntry returns e with its manifest compact and its time in UTC, as Save writes and
// Load returns them.
func normalEntry(e Entry) Entry {
	e.Manifest = compact(e.Manifest)
	e.InstalledAt = e.InstalledAt.UTC()
	return e
}

// compact removes the whitespace the lockfile's indentation put into a raw value. Strings
// are left as they are, so a canonical value indented and compacted is the same bytes.
func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw // Validate reports it
	}
	return b.Bytes()
}

// A shape is the members encoding/json reads into a struct type: name, Go type and whether
// the member is required (its tag has no omitempty).
type shape map[string]shapeField

type shapeField struct {
	typ      reflect.Type
	required bool
}

var (
	shapes    sync.Map // reflect.Type → shape
	timeType  = reflect.TypeFor[time.Time]()
	rawType   = reflect.TypeFor[json.RawMessage]()
	entryType = reflect.TypeFor[Entry]()
)

// shapeOf reads the shape from the struct tags, so that the check and the types cannot drift.
func shapeOf(t reflect.Type) shape {
	if s, ok := shapes.Load(t); ok {
		return s.(shape)
	}
	s := shape{}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		s[name] = shapeField{typ: f.Type, required: !slices.Contains(strings.Split(opts, ","), "omitempty")}
	}
	shapes.Store(t, s)
	return s
}

// checkShape checks the parsed file against File's shape, entry by entry.
func checkShape(root jcs.Value) error {
	var ps problems
	file := &where{ps: &ps}
	checkStruct(root, reflect.TypeFor[File](), func(field, rule string) { file.add(field, rule, nil) }, func(name string, v jcs.Value) bool {
		if name != "plugins" && name != "pending" {
			return false
		}
		if v.Kind != jcs.Object {
			file.add(name, "must be an object", nil)
			return true
		}
		names := make([]string, len(v.Members))
		for i, m := range v.Members {
			names[i] = m.Name
		}
		slices.Sort(names)
		for _, m := range v.Members {
			i, _ := slices.BinarySearch(names, m.Name)
			at := &where{ps: &ps, section: name, name: m.Name}
			if _, err := manifest.ParseAppID(m.Name); err != nil {
				at.name = "#" + strconv.Itoa(i)
			}
			t := entryType
			if name == "pending" {
				t = reflect.TypeFor[Pending]()
			}
			checkStruct(m.Value, t, func(field, rule string) { at.add(field, rule, nil) }, nil)
		}
		return true
	})
	return ps.err()
}

// checkStruct checks that v is an object with the members of struct type t, each of its
// type, calling bad for each problem. custom, when not nil, may take over a member's check
// by returning true.
func checkStruct(v jcs.Value, t reflect.Type, bad func(field, rule string), custom func(string, jcs.Value) bool) {
	if v.Kind != jcs.Object {
		bad("", "must be an object")
		return
	}
	s := shapeOf(t)
	for _, m := range v.Members {
		f, ok := s[m.Name]
		if !ok {
			bad(memberName(m.Name), "unknown member")
			continue
		}
		if custom != nil && custom(m.Name, m.Value) {
			continue
		}
		checkValue(m.Value, f.typ, func(field, rule string) { bad(joinField(m.Name, field), rule) })
	}
	for _, name := range slices.Sorted(maps.Keys(s)) {
		if _, ok := v.Get(name); !ok && s[name].required {
			bad(name, "missing")
		}
	}
}

func checkValue(v jcs.Value, t reflect.Type, bad func(field, rule string)) {
	switch {
	case t == rawType:
		// Any JSON value; Validate judges it.
	case t == timeType:
		if v.Kind != jcs.String {
			bad("", "must be a string")
		} else if _, err := time.Parse(time.RFC3339Nano, v.Str); err != nil {
			bad("", "must be an RFC 3339 time")
		}
	case t.Kind() == reflect.String:
		if v.Kind != jcs.String {
			bad("", "must be a string")
		}
	case t.Kind() == reflect.Int:
		if _, err := strconv.ParseInt(v.Num, 10, 32); v.Kind != jcs.Number || err != nil {
			bad("", "must be an integer")
		}
	case t.Kind() == reflect.Struct:
		checkStruct(v, t, bad, nil)
	default:
		bad("", "has no JSON form") // a type this package does not use
	}
}

// memberName returns an unknown member's name for an error when it is short and plain,
// else "": a name is where, not what, but one from a damaged file could be anything.
func memberName(name string) string {
	if len(name) == 0 || len(name) > 64 {
		return ""
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return ""
		}
	}
	return name
}
