package jcs

import (
	"encoding/json"
	"strconv"
)

// Kind is the JSON type of a Value. The zero Kind is Null, so the zero Value
// is JSON null.
type Kind uint8

// The JSON types, in the order RFC 8259 lists them.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// String returns the JSON name of the type: "null", "boolean", "number",
// "string", "array" or "object"; an undefined Kind gives "Kind(n)".
func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one parsed JSON value. Only the fields of its Kind are set.
// Objects keep their members in the order received, because AppendIndent
// writes a document back for people in the order its author chose; the
// canonical order is made only by AppendCanonical.
//
// The strings of a parsed Value share one copy of the input, so keeping any
// of them keeps that copy alive; clone a string (strings.Clone) to keep it
// beyond a large document.
//
// A Value built by hand is valid for AppendCanonical when its strings are
// valid UTF-8, its numbers finite and its member names distinct.
type Value struct {
	Kind Kind
	// Bool is the value of a Bool.
	Bool bool
	// Str is the decoded value of a String: valid UTF-8, escapes resolved.
	Str string
	// Num is the literal of a Number exactly as received, kept so that a
	// document can be shown back as its author wrote it. AppendCanonical
	// ignores it and writes Float.
	Num string
	// Float is the literal of a Number read as an IEEE 754 double, rounded
	// to nearest even: the number as RFC 8785 and every JavaScript reader
	// sees it.
	Float float64
	// Items are the elements of an Array.
	Items []Value
	// Members are the members of an Object, in the order received.
	Members []Member
}

// Member is one name and value of a JSON object.
type Member struct {
	// Name is the decoded member name.
	Name  string
	Value Value
}

// Get returns the value of the object member whose name is exactly name, and
// whether there is one. It returns false for a Value that is not an Object.
// It scans the members in order, which is as fast as a map for the small
// objects of signed documents and needs no index kept beside them.
func (v Value) Get(name string) (Value, bool) {
	if v.Kind != Object {
		return Value{}, false
	}
	for i := range v.Members {
		if v.Members[i].Name == name {
			return v.Members[i].Value, true
		}
	}
	return Value{}, false
}

// Interface returns v as encoding/json with UseNumber decodes it: map[string]any, []any,
// json.Number (the literal as received), string, bool or nil.
func (v Value) Interface() any {
	switch v.Kind {
	case Bool:
		return v.Bool
	case Number:
		return json.Number(v.Num)
	case String:
		return v.Str
	case Array:
		out := make([]any, len(v.Items))
		for i, it := range v.Items {
			out[i] = it.Interface()
		}
		return out
	case Object:
		out := make(map[string]any, len(v.Members))
		for _, m := range v.Members {
			out[m.Name] = m.Value.Interface()
		}
		return out
	}
	return nil
}
