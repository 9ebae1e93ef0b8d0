package lock

import (
	"bytes"
	"encoding/json"
)

// Encode validates f (see File.Validate) and returns the text Save writes: JSON indented by
// two spaces with a trailing newline, members in the order of the struct fields, plugins and
// pending widenings sorted by app id, times in UTC, no HTML escaping. The same File always
// gives the same bytes. The manifests are written indented for people reading diffs; Parse
// compacts them back to the canonical bytes.
func Encode(f *File) ([]byte, error) {
	if f == nil {
		return nil, &Error{Rule: "no lockfile"}
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	out := File{Version: f.Version, Plugins: make(map[string]Entry, len(f.Plugins)), Pending: make(map[string]Pending, len(f.Pending))}
	for k, e := range f.Plugins {
		out.Plugins[k] = normalEntry(e)
	}
	for k, p := range f.Pending {
		p.Entry = normalEntry(p.Entry)
		p.Since = p.Since.UTC()
		out.Pending[k] = p
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// HTML escaping would rewrite "<" in a manifest to \u003c, which is not its canonical form.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&out); err != nil {
		return nil, &Error{Rule: "cannot encode", Err: err}
	}
	return b.Bytes(), nil
}
