package syslog

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseQuery checks get_logs' params reader never panics and hands on only queries in
// their bounds, taking exact member names only.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"count":100,"offset":0,"severity":"all"}`, `{"count":1e3}`, `{"count":1000.0}`,
		`{"COUNT":1}`, `{"offset":-0}`, `{"severity":"ok"}`, `{"severity":null}`, `null`, `[]`, ``,
		`{"count":1e400}`, `{"count":"5"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		q, err := parseQuery(json.RawMessage(raw))
		if err != nil {
			return
		}
		if q.Count < 1 || q.Count > MaxCount || q.Offset < 0 || q.Offset > MaxOffset {
			t.Fatalf("out of bounds: %+v", q)
		}
		switch q.Severity {
		case "all", SeverityInfo, SeverityWarn, SeverityError, SeverityOK:
		default:
			t.Fatalf("severity %q", q.Severity)
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		for k := range m {
			if k != "count" && k != "offset" && k != "severity" {
				t.Fatalf("took member %q", k)
			}
		}
	})
}

// FuzzHandler checks that whatever a record holds, its entry is within MaxEntryBytes, of a
// known severity, and, when everything fits, begins with the message as logged.
func FuzzHandler(f *testing.F) {
	f.Add("hello", "k", "v", "g", int8(0), 1)
	f.Add("[OK] up", "ok", "true", "", int8(-4), 0)
	f.Add(strings.Repeat("é", 1500), "k=x", "a b\n\"", "grp", int8(8), 50)
	f.Add("\xff\xfe", "\x00", "\u202e", ".", int8(4), 3)
	f.Fuzz(func(t *testing.T, msg, key, val, group string, level int8, repeat int) {
		r := NewRing(4)
		h := r.Handler(nil).WithAttrs([]slog.Attr{slog.String(key, val)}).WithGroup(group)
		rec := slog.NewRecord(time.Unix(1, 0), slog.Level(level), msg, 0)
		for range min(max(repeat, 0), 64) {
			rec.AddAttrs(slog.String(key, val), slog.Group(group, slog.String(key, val)))
		}
		if err := h.Handle(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		es, _ := r.Entries("all", 0, 10) // Handle records what it is given; Enabled is the logger's filter
		if len(es) != 1 {
			t.Fatalf("%d entries", len(es))
		}
		e := es[0]
		if len(e.Message) > MaxEntryBytes {
			t.Fatalf("%d bytes", len(e.Message))
		}
		switch e.Severity {
		case SeverityInfo, SeverityWarn, SeverityError, SeverityOK:
		default:
			t.Fatalf("severity %q", e.Severity)
		}
		if len(msg) < MaxEntryBytes-len(ellipsis) && !strings.HasPrefix(e.Message, msg) {
			t.Fatalf("message not kept as logged: %q -> %q", msg, e.Message)
		}
		if utf8.ValidString(msg) && !utf8.ValidString(e.Message) {
			t.Fatalf("a cut split a character")
		}
	})
}

// FuzzClip checks Add's cut: within the bound, a prefix of the message, never splitting a
// character of a valid message.
func FuzzClip(f *testing.F) {
	f.Add("short")
	f.Add(strings.Repeat("€", MaxEntryBytes))
	f.Add(strings.Repeat("a", MaxEntryBytes-1) + "é")
	f.Fuzz(func(t *testing.T, s string) {
		c := clip(s)
		if len(c) > MaxEntryBytes {
			t.Fatalf("%d bytes", len(c))
		}
		if len(s) <= MaxEntryBytes && c != s {
			t.Fatal("cut a message within the bound")
		}
		if !strings.HasPrefix(s, strings.TrimSuffix(c, ellipsis)) {
			t.Fatal("not a prefix")
		}
		if utf8.ValidString(s) && !utf8.ValidString(c) {
			t.Fatal("split a character")
		}
	})
}
