package editor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// params are a call's params, each nil when absent.
type params struct {
	Path    *string
	Content *string
	Cursor  *Cursor
}

func problem(path, rule string) error {
	return sdk.InvalidParams(manifest.Problems{{Path: path, Rule: rule}})
}

// decodeParams reads raw, a JSON object whose members are among allowed. Member names match
// exactly: encoding/json's case-insensitive matching would let "PATH" stand in for "path",
// which the gateway's path constraints never look at.
func decodeParams(raw json.RawMessage, allowed ...string) (params, error) {
	var p params
	if len(bytes.TrimSpace(raw)) == 0 {
		return p, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return p, problem("", "params must be an object")
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			return p, problem("", "holds a param this method does not take")
		}
	}
	if v, ok := m["path"]; ok {
		s, err := decodeString(v, "path")
		if err != nil {
			return p, err
		}
		p.Path = &s
	}
	if v, ok := m["content"]; ok {
		s, err := decodeString(v, "content")
		if err != nil {
			return p, err
		}
		p.Content = &s
	}
	if v, ok := m["cursor"]; ok {
		c, err := decodeCursor(v)
		if err != nil {
			return p, err
		}
		p.Cursor = &c
	}
	return p, nil
}

func decodeString(v json.RawMessage, path string) (string, error) {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", problem(path, "must be a string")
	}
	return s, nil
}

func decodeCursor(v json.RawMessage) (Cursor, error) {
	var m map[string]json.RawMessage
	if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &m) != nil {
		return Cursor{}, problem("cursor", "must be an object with line and column")
	}
	for k := range m {
		if k != "line" && k != "column" {
			return Cursor{}, problem("cursor", "holds a member other than line and column")
		}
	}
	line, err := decodeInt(m["line"], "cursor.line", 1, MaxLines)
	if err != nil {
		return Cursor{}, err
	}
	col, err := decodeInt(m["column"], "cursor.column", 0, MaxFileBytes)
	if err != nil {
		return Cursor{}, err
	}
	return Cursor{Line: line, Column: col}, nil
}

func decodeInt(v json.RawMessage, path string, lo, hi int) (int, error) {
	if v == nil {
		return 0, problem(path, "required")
	}
	var f float64
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') || json.Unmarshal(v, &f) != nil ||
		f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, problem(path, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
	}
	return int(f), nil
}
