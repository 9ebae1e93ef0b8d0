package python

import (
	"fmt"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// jsonModule is go.starlark.net's json module with its recursion bounded: decode and encode
// recurse once per level of nesting, with no limit of their own, and a string of a million
// "[" costs a script one step. Each refuses input nested deeper than MaxJSONDepth.
var jsonModule = &starlarkstruct.Module{
	Name: "json",
	Members: starlark.StringDict{
		"encode":        guardValue(starjson.Module.Members["encode"]),
		"encode_indent": guardValue(starjson.Module.Members["encode_indent"]),
		"decode":        guardText(starjson.Module.Members["decode"]),
		"indent":        starjson.Module.Members["indent"], // encoding/json's scanner bounds its depth itself
	},
}

// guardText wraps a built-in whose first argument is JSON text.
func guardText(fn starlark.Value) *starlark.Builtin {
	b := fn.(*starlark.Builtin)
	return starlark.NewBuiltin(b.Name(), func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) > 0 {
			if s, ok := args[0].(starlark.String); ok && textDepth(string(s)) > MaxJSONDepth {
				return nil, fmt.Errorf("%s: JSON nested more than %d levels deep", b.Name(), MaxJSONDepth)
			}
		}
		return b.CallInternal(th, args, kwargs)
	})
}

// guardValue wraps a built-in whose first argument is a value to encode.
func guardValue(fn starlark.Value) *starlark.Builtin {
	b := fn.(*starlark.Builtin)
	return starlark.NewBuiltin(b.Name(), func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) > 0 && valueTooDeep(args[0], 0) {
			return nil, fmt.Errorf("%s: value nested more than %d levels deep (or containing itself)", b.Name(), MaxJSONDepth)
		}
		return b.CallInternal(th, args, kwargs)
	})
}

// textDepth is the deepest nesting of arrays and objects in JSON text, strings skipped. It
// reads any text; what is not JSON is left for the decoder to refuse.
func textDepth(s string) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// valueTooDeep reports whether v nests lists, tuples, dicts and sets deeper than
// MaxJSONDepth below depth. A value that contains itself is too deep. Its own recursion
// stops at MaxJSONDepth.
func valueTooDeep(v starlark.Value, depth int) bool {
	if depth > MaxJSONDepth {
		return true
	}
	each := func(it starlark.Iterable) bool {
		iter := it.Iterate()
		defer iter.Done()
		var x starlark.Value
		for iter.Next(&x) {
			if valueTooDeep(x, depth+1) {
				return true
			}
		}
		return false
	}
	switch v := v.(type) {
	case *starlark.List:
		return each(v)
	case starlark.Tuple:
		return each(v)
	case *starlark.Set:
		return each(v)
	case *starlark.Dict:
		for _, kv := range v.Items() {
			if valueTooDeep(kv[0], depth+1) || valueTooDeep(kv[1], depth+1) {
				return true
			}
		}
	}
	return false
}
