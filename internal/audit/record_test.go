package audit

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFieldsAreSorted(t *testing.T) {
	names := fieldNames[:]
	if !slices.IsSorted(names) {
		t.Fatalf("fields are not in canonical order: %v", names)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(r *Record)
		field string // "" for valid
	}{
		{"valid", func(*Record) {}, ""},
		{"outcome", func(r *Record) { r.Kind = KindOutcome; r.Code = "EXECUTION_FAILED"; r.DurationMS = 5 }, ""},
		{"deny with code", func(r *Record) { r.Decision = DecisionDeny; r.Code = "CAPABILITY_DENIED" }, ""},
		{"no params hash", func(r *Record) { r.ParamsHash = "" }, ""},
		{"bad kind", func(r *Record) { r.Kind = "Decision" }, "kind"},
		{"no kind", func(r *Record) { r.Kind = "" }, "kind"},
		{"bad decision", func(r *Record) { r.Decision = "ALLOW" }, "decision"},
		{"deny without code", func(r *Record) { r.Decision = DecisionDeny }, "code"},
		{"lowercase code", func(r *Record) { r.Code = "timeout" }, "code"},
		{"long code", func(r *Record) { r.Code = strings.Repeat("A", 65) }, "code"},
		{"params hash upper", func(r *Record) { r.ParamsHash = strings.ToUpper(r.ParamsHash) }, "params_hash"},
		{"params hash short", func(r *Record) { r.ParamsHash = "sha256:abc" }, "params_hash"},
		{"no timestamp", func(r *Record) { r.Timestamp = 0 }, "timestamp"},
		{"negative timestamp", func(r *Record) { r.Timestamp = -1 }, "timestamp"},
		{"huge duration", func(r *Record) { r.DurationMS = 1 << 53 }, "duration_ms"},
		{"invalid UTF-8", func(r *Record) { r.Explanation = "a\xffb" }, "explanation"},
		{"long field", func(r *Record) { r.AuditTag = strings.Repeat("x", MaxFieldBytes+1) }, "audit_tag"},
		{"long explanation", func(r *Record) { r.Explanation = strings.Repeat("x", MaxExplanationBytes+1) }, "explanation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sampleRecord(0)
			tt.edit(&r)
			err := r.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				b, err := r.Body()
				if err != nil {
					t.Fatal(err)
				}
				back, err := DecodeRecord(b)
				if err != nil || back != r {
					t.Fatalf("round trip: %+v, %v", back, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), tt.field+":") {
				t.Fatalf("err = %v, want one about %s", err, tt.field)
			}
			if _, err := r.Body(); err == nil {
				t.Fatal("Body accepted an invalid record")
			}
			if strings.Contains(err.Error(), "\xff") || strings.Contains(err.Error(), "xxxx") {
				t.Fatal("error echoes the value")
			}
		})
	}
}

func TestDecodeRecordStrict(t *testing.T) {
	good := vecBody1
	tests := []struct {
		name string
		body string
	}{
		{"empty", ``},
		{"not an object", `[]`},
		{"whitespace", strings.Replace(good, `"action":`, `"action": `, 1)},
		{"trailing newline", good + "\n"},
		{"unsorted", `{"app":"terminal",` + strings.Replace(good[1:], `"app":"terminal",`, "", 1)},
		{"missing member", strings.Replace(good, `"call_id":"call_1",`, "", 1)},
		{"extra member", strings.Replace(good, `"action":"execute",`, `"action":"execute","aa":"",`, 1)},
		{"capitalised name", strings.Replace(good, `"timestamp":1706620800,`, `"tImestamp":1706620800,`, 1)},
		{"number as string", strings.Replace(good, `"duration_ms":0,`, `"duration_ms":"0",`, 1)},
		{"string as number", strings.Replace(good, `"code":"",`, `"code":0,`, 1)},
		{"fraction", strings.Replace(good, `"duration_ms":0,`, `"duration_ms":0.5,`, 1)},
		{"negative", strings.Replace(good, `"duration_ms":0,`, `"duration_ms":-1,`, 1)},
		{"null", strings.Replace(good, `"code":"",`, `"code":null,`, 1)},
		{"nested", strings.Replace(good, `"code":"",`, `"code":{},`, 1)},
		{"duplicate", strings.Replace(good, `"action":"execute",`, `"action":"execute","action":"execute",`, 1)},
		{"invalid record", strings.Replace(good, `"decision":"allow",`, `"decision":"perhaps",`, 1)},
		{"escaped non-canonically", strings.Replace(good, `"app":"terminal"`, `"app":"termin\u0061l"`, 1)},
	}
	if _, err := DecodeRecord([]byte(good)); err != nil {
		t.Fatalf("good body: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeRecord([]byte(tt.body)); !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("err = %v, want ErrInvalidRecord", err)
			}
		})
	}
}

func TestParamsHash(t *testing.T) {
	a, err := ParamsHash([]byte(`{"b": [1.0, 2e0], "a": "\u00e9"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParamsHash([]byte(`{"a":"é","b":[1,2]}`))
	if a != b || !isDigest(a) {
		t.Fatalf("spellings hash apart: %s %s", a, b)
	}
	if c, _ := ParamsHash([]byte(`{"a":"é","b":[2,1]}`)); c == a {
		t.Fatal("different params hash alike")
	}
	for _, bad := range []string{``, `{"a":1,"a":2}`, `{`, "\"\xff\""} {
		if _, err := ParamsHash([]byte(bad)); err == nil {
			t.Fatalf("ParamsHash accepted %q", bad)
		}
	}
}

// A record marshals as its body, with the token document's field names, and an entry as a
// line of the export does (member order aside).
func TestEntryJSON(t *testing.T) {
	rec := sampleRecord(1)
	body, err := rec.Body()
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(rec)
	if err != nil || string(got) != string(body) {
		t.Fatalf("json.Marshal(record) = %s, %v; want the body %s", got, err, body)
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e, err := json.Marshal(Entry{Seq: 7, PrevHash: "sha256:aa", Hash: "sha256:bb", At: at, Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":7,"prev_hash":"sha256:aa","hash":"sha256:bb","at":"2026-11-30T12:00:00Z","record":` + string(body) + `}`
	if string(e) != want {
		t.Errorf("entry JSON:\n%s\nwant:\n%s", e, want)
	}
	bad := rec
	bad.Kind = "neither"
	if _, err := json.Marshal(bad); err == nil {
		t.Error("a record that breaks its rules marshalled")
	}
}
