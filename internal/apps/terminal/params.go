package terminal

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"time"
	"unicode/utf8"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// The gateway checks params against the manifest's schemas before Invoke; the decoders here
// check the same bounds again, so that the app holds to them whoever calls it. Their problems
// name the field and the rule, never the value.

// execParams are execute_command's params, defaults filled in.
type execParams struct {
	Command       string
	Timeout       time.Duration
	CaptureOutput bool
	Cwd           string // empty: the root
	Stdin         string
	HasStdin      bool
	Background    bool
}

// decodeObject decodes raw (empty means {}) into v, refusing members v does not declare and
// anything after the object.
func decodeObject(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return sdk.InvalidParams(manifest.Problems{{Rule: "params must be an object of the declared members and types"}})
	}
	if _, err := dec.Token(); err != io.EOF {
		return sdk.InvalidParams(manifest.Problems{{Rule: "params must be one JSON object"}})
	}
	return nil
}

// integer reads an optional JSON number that must be a whole number in [lo, hi].
func integer(f *float64, def, lo, hi int64, path string, ps *manifest.Problems) int64 {
	if f == nil {
		return def
	}
	if *f != math.Trunc(*f) || *f < float64(lo) || *f > float64(hi) {
		*ps = append(*ps, manifest.Problem{Path: path, Rule: "must be an integer from " + itoa(lo) + " to " + itoa(hi)})
		return def
	}
	return int64(*f)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func decodeExec(raw json.RawMessage) (execParams, error) {
	var in struct {
		Command       *string  `json:"command"`
		Timeout       *float64 `json:"timeout"`
		CaptureOutput *bool    `json:"capture_output"`
		Cwd           *string  `json:"cwd"`
		Stdin         *string  `json:"stdin"`
		Background    *bool    `json:"background"`
	}
	if err := decodeObject(raw, &in); err != nil {
		return execParams{}, err
	}
	var ps manifest.Problems
	p := execParams{
		Timeout:       time.Duration(integer(in.Timeout, DefaultTimeout.Milliseconds(), 1, MaxTimeout.Milliseconds(), "timeout", &ps)) * time.Millisecond,
		CaptureOutput: boolOr(in.CaptureOutput, true),
		Background:    boolOr(in.Background, false),
	}
	switch {
	case in.Command == nil:
		ps = append(ps, manifest.Problem{Path: "command", Rule: "required"})
	case *in.Command == "" || len(*in.Command) > MaxCommandBytes:
		ps = append(ps, manifest.Problem{Path: "command", Rule: "must be 1 to " + itoa(MaxCommandBytes) + " bytes"})
	default:
		p.Command = *in.Command
	}
	if in.Cwd != nil {
		if *in.Cwd == "" || len(*in.Cwd) > MaxPathBytes {
			ps = append(ps, manifest.Problem{Path: "cwd", Rule: "must be 1 to " + itoa(MaxPathBytes) + " bytes"})
		} else {
			p.Cwd = *in.Cwd
		}
	}
	if in.Stdin != nil {
		if len(*in.Stdin) > MaxStdinBytes {
			ps = append(ps, manifest.Problem{Path: "stdin", Rule: "longer than " + itoa(MaxStdinBytes) + " bytes"})
		} else {
			p.Stdin, p.HasStdin = *in.Stdin, true
		}
	}
	if len(ps) > 0 {
		return execParams{}, sdk.InvalidParams(ps)
	}
	return p, nil
}

// idParams are read_output's params: id 0 means the caller's latest command.
func decodeID(raw json.RawMessage) (int64, error) {
	var in struct {
		ID *float64 `json:"id"`
	}
	if err := decodeObject(raw, &in); err != nil {
		return 0, err
	}
	var ps manifest.Problems
	id := integer(in.ID, 0, 1, maxID, "id", &ps)
	if len(ps) > 0 {
		return 0, sdk.InvalidParams(ps)
	}
	return id, nil
}

// inputParams are write_input's params.
type inputParams struct {
	ID    int64
	Input string
	Close bool
}

func decodeInput(raw json.RawMessage) (inputParams, error) {
	var in struct {
		ID    *float64 `json:"id"`
		Input *string  `json:"input"`
		Close *bool    `json:"close"`
	}
	if err := decodeObject(raw, &in); err != nil {
		return inputParams{}, err
	}
	var ps manifest.Problems
	p := inputParams{Close: boolOr(in.Close, false)}
	if in.ID == nil {
		ps = append(ps, manifest.Problem{Path: "id", Rule: "required"})
	} else {
		p.ID = integer(in.ID, 0, 1, maxID, "id", &ps)
	}
	if in.Input != nil {
		if len(*in.Input) > MaxStdinBytes {
			ps = append(ps, manifest.Problem{Path: "input", Rule: "longer than " + itoa(MaxStdinBytes) + " bytes"})
		} else {
			p.Input = *in.Input
		}
	}
	if len(ps) > 0 {
		return inputParams{}, sdk.InvalidParams(ps)
	}
	return p, nil
}

// decodeHistory reads history's count and offset.
func decodeHistory(raw json.RawMessage) (count, offset int, err error) {
	var in struct {
		Count  *float64 `json:"count"`
		Offset *float64 `json:"offset"`
	}
	if err := decodeObject(raw, &in); err != nil {
		return 0, 0, err
	}
	var ps manifest.Problems
	c := integer(in.Count, DefaultHistoryCount, 1, MaxHistoryCount, "count", &ps)
	o := integer(in.Offset, 0, 0, MaxHistory, "offset", &ps)
	if len(ps) > 0 {
		return 0, 0, sdk.InvalidParams(ps)
	}
	return int(c), int(o), nil
}

// decodeEmpty reads get_cwd's params: none.
func decodeEmpty(raw json.RawMessage) error {
	var in struct{}
	return decodeObject(raw, &in)
}

// validText makes s valid UTF-8, each invalid byte sequence replaced by U+FFFD.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}
