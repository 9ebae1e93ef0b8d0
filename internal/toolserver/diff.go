package toolserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/capgate/capgate/internal/consent"
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
		shown := escapeShown(p)
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
		// JSON as written, not as encoding/json escapes it for HTML: a person reads
		// "<b>", never "\u003cb\u003e" (the page and the terminal show it as text).
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(x)
		out[path] = shownJSON(strings.TrimSuffix(b.String(), "\n"))
	}
}

// shownJSON escapes what a person's screen could misread and cuts s to MaxDiffValueBytes.
func shownJSON(s string) string {
	out := escapeShown(s)
	if len(out) > MaxDiffValueBytes {
		out = clipText(out, MaxDiffValueBytes) + "…"
	}
	return out
}

// escapeShown writes as \uXXXX every character a terminal or page could misread: controls,
// and what consent.Invisible names (bidirectional formatting, zero-width characters, the
// byte-order mark, ...).
func escapeShown(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c > 0xffff && consent.Invisible(c):
			fmt.Fprintf(&b, `\U%08x`, c)
		case c < 0x20 || (c >= 0x7f && c < 0xa0) || consent.Invisible(c):
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}
