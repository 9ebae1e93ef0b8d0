package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/capgate/capgate/internal/token"
)

// withResolved returns params with each path the token's allowed_paths checked replaced by
// the resolved path it matched, so that what was checked is what the provider opens: a link
// swapped in after the check, or a relative path the provider would read against another
// folder, cannot lead elsewhere. Numbers keep their text. The audit record keeps the hash of
// the params as the agent sent them.
func withResolved(params json.RawMessage, resolved []token.Value) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	for _, r := range resolved {
		var err error
		if v, err = setPointer(v, r.Pointer, r.Text); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

var errPointer = errors.New("broker: a resolved path's location is not in the params")

// setPointer sets the string at the JSON pointer ptr (RFC 6901) in v, which must already
// hold a string there, and returns v.
func setPointer(v any, ptr string, s string) (any, error) {
	if ptr == "" {
		if _, ok := v.(string); !ok {
			return nil, errPointer
		}
		return s, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, errPointer
	}
	head, rest, deeper := strings.Cut(ptr[1:], "/")
	if deeper {
		rest = "/" + rest
	}
	key := strings.ReplaceAll(strings.ReplaceAll(head, "~1", "/"), "~0", "~")
	switch c := v.(type) {
	case map[string]any:
		child, ok := c[key]
		if !ok {
			return nil, errPointer
		}
		nv, err := setPointer(child, rest, s)
		if err != nil {
			return nil, err
		}
		c[key] = nv
		return c, nil
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(c) || strconv.Itoa(i) != key {
			return nil, errPointer
		}
		nv, err := setPointer(c[i], rest, s)
		if err != nil {
			return nil, err
		}
		c[i] = nv
		return c, nil
	}
	return nil, errPointer
}
