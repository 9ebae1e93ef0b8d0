package toolserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Diff returns the difference between two canonical tool definitions as lines a person
// reads: "- /path: old" for a value removed or changed, "+ /path: new" for one added or
// changed, ordered by JSON Pointer path, each value as JSON cut to MaxDiffValueBytes, at
// most MaxDiffLines lines (then one line saying how many more). Every character a terminal
// or page could misread (controls, bidirectional formatting) is escaped. old nil is a new
// tool: every value is "+".
func Diff(old, new []byte) []string {
	a, b := map[string]string{}, map[string]string{}
	flatten(decode(old), "", a)
	flatten(decode(new), "", b)
	paths := map[string]bool{}
	for p := range a {
		paths[p] = true
	}
	for p := range b {
		paths[p] = true
	}
	var lines []string
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		va, ina := a[p]
		vb, inb := b[p]
		if ina && inb && va == vb {
			continue
		}
		shown := p
		if shown == "" {
			shown = "/"
		}
		if ina {
			lines = append(lines, "- "+shown+": "+va)
		}
		if inb {
			lines = append(lines, "+ "+shown+": "+vb)
		}
	}
	if len(lines) > MaxDiffLines {
		more := len(lines) - MaxDiffLines
		lines = append(lines[:MaxDiffLines], fmt.Sprintf("... and %d more lines", more))
	}
	return lines
}

func decode(data []byte) any {
	if data == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

// flatten records every leaf of v (scalars, empty objects and arrays) by its JSON Pointer.
func flatten(v any, path string, out map[string]string) {
	switch x := v.(type) {
	case nil:
		if path != "" {
			out[path] = "null"
		}
	case map[string]any:
		if len(x) == 0 {
			out[path] = "{}"
		}
		for k, e := range x {
			flatten(e, path+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), out)
		}
	case []any:
		if len(x) == 0 {
			out[path] = "[]"
		}
		for i, e := range x {
			flatten(e, path+"/"+strconv.Itoa(i), out)
		}
	default:
		b, _ := json.Marshal(x)
		out[path] = shownJSON(string(b))
	}
}

// shownJSON escapes what a person's screen could misread and cuts s to MaxDiffValueBytes.
func shownJSON(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c < 0x20 || (c >= 0x7f && c < 0xa0) || c == 0x061c || c == 0x200e || c == 0x200f ||
			(c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0xfeff:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
	}
	out := b.String()
	if len(out) > MaxDiffValueBytes {
		out = clipText(out, MaxDiffValueBytes) + "…"
	}
	return out
}
