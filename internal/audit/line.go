package audit

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/store"
)

// ErrBadLine is a line of an export or of the mirror that is not exactly what Export and the
// writer write.
var ErrBadLine = errors.New("audit: bad line")

// A line of an export, and of the mirror, is one of two JSON objects and a newline:
//
//	{"at":"<RFC 3339 UTC>","hash":"sha256:…","prev_hash":"…","record":<body>,"seq":N}
//	{"checkpoint":<checkpoint body>}
//
// the first an entry (appendLine; "record_base64" in place of "record" for a body that is
// not canonical JSON), the second a checkpoint signed over the entry line just before it.
// The mirror holds entry lines only. Each has one spelling: parseLine accepts a line only
// when writing back what it read gives the same bytes.

// appendCheckpointLine appends c as a checkpoint line, with its newline.
func appendCheckpointLine(dst []byte, c store.Checkpoint) []byte {
	dst = append(dst, `{"checkpoint":`...)
	dst = append(dst, c.Body...)
	return append(dst, "}\n"...)
}

// parsedLine is one line read by parseLine: an entry, or a checkpoint.
type parsedLine struct {
	entry      store.AuditEntry
	checkpoint store.Checkpoint // Seq 0: the line is an entry
}

// parseLine reads one line (without its newline) strictly. A checkpoint line's checkpoint is
// checked statically (checkpointFromBody), not its signature; an entry's hash and body are
// taken as they are, for Verify to judge. Failures wrap ErrBadLine (or ErrBadCheckpoint) and
// name the member, never its value.
func parseLine(b []byte) (parsedLine, error) {
	fail := func(rule string) (parsedLine, error) { return parsedLine{}, fmt.Errorf("%w: %s", ErrBadLine, rule) }
	if len(b) > MaxLineBytes {
		return fail("longer than the longest entry")
	}
	// A body nests at most jcs.DefaultMaxDepth deep (deeper is not canonical, so it is written
	// as record_base64), and the line adds one level.
	v, err := jcs.Parse(b, &jcs.Options{MaxDepth: jcs.DefaultMaxDepth + 1, MaxBytes: MaxLineBytes})
	if err != nil {
		return fail("not strict JSON")
	}
	if v.Kind != jcs.Object {
		return fail("not a JSON object")
	}
	if len(v.Members) == 1 && v.Members[0].Name == "checkpoint" {
		body, err := v.Members[0].Value.AppendCanonical(nil)
		if err != nil {
			return fail("checkpoint: not canonical")
		}
		c, err := checkpointFromBody(body)
		if err != nil {
			return parsedLine{}, err
		}
		if !bytes.Equal(appendCheckpointLine(nil, c), append(b[:len(b):len(b)], '\n')) {
			return fail("not in the one spelling of a checkpoint line")
		}
		return parsedLine{checkpoint: c}, nil
	}
	var e store.AuditEntry
	var have [5]bool // at, hash, prev_hash, record or record_base64, seq
	for _, m := range v.Members {
		val := m.Value
		switch m.Name {
		case "at":
			if val.Kind != jcs.String {
				return fail("at: must be a string")
			}
			t, err := time.Parse(time.RFC3339Nano, val.Str)
			if err != nil {
				return fail("at: must be RFC 3339 UTC time")
			}
			e.At, have[0] = t, true
		case "hash":
			if val.Kind != jcs.String {
				return fail("hash: must be a string")
			}
			e.Hash, have[1] = val.Str, true
		case "prev_hash":
			if val.Kind != jcs.String {
				return fail("prev_hash: must be a string")
			}
			e.PrevHash, have[2] = val.Str, true
		case "record":
			body, err := val.AppendCanonical(nil)
			if err != nil {
				return fail("record: not canonical")
			}
			e.Body, have[3] = body, true
		case "record_base64":
			if val.Kind != jcs.String {
				return fail("record_base64: must be a string")
			}
			body, err := base64.StdEncoding.Strict().DecodeString(val.Str)
			if err != nil {
				return fail("record_base64: must be standard padded base64")
			}
			e.Body, have[3] = body, true
		case "seq":
			x := val.Float
			if val.Kind != jcs.Number || x != math.Trunc(x) || x < 1 || x > maxSafeInteger {
				return fail("seq: must be an integer in 1..2^53-1")
			}
			e.Seq, have[4] = int64(x), true
		default:
			return fail("a member other than at, hash, prev_hash, record, record_base64 and seq")
		}
	}
	for i, name := range [5]string{"at", "hash", "prev_hash", "record", "seq"} {
		if !have[i] {
			return fail(name + ": missing")
		}
	}
	// What was read, written back, must be the line: one spelling of each entry.
	if !bytes.Equal(appendLine(nil, e), append(b[:len(b):len(b)], '\n')) {
		return fail("not in the one spelling of an entry line")
	}
	return parsedLine{entry: e}, nil
}
