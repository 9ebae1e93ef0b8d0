package port

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/capgate/capgate/internal/jcs"
)

// FuzzLoadDescriptor: reading any bytes as a descriptor, JSON or YAML, never panics; every
// refusal is a *FileError wrapping ErrInvalidDescriptor; and an accepted descriptor written back
// reads as the same Port, which New accepts.
func FuzzLoadDescriptor(f *testing.F) {
	for _, name := range []string{"testdata/ports/knowledge.v1.json", "testdata/ports/files.v1.yaml", "testdata/ports/kits.json"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b, name != "testdata/ports/files.v1.yaml")
		}
	}
	f.Add([]byte(`{"port":"a.b.v1","methods":{"m":{"risk":"low","side_effects":"none","idempotent":false,"dry_run":true,"evidence":["e"],"compensating_action":"n"},"n":{"risk":"high","side_effects":"system","idempotent":true,"dry_run":false}}}`), true)
	f.Add([]byte("port: k.v1\nmethods: {m: {risk: low, side_effects: read, idempotent: true, dry_run: false}}\n"), false)
	f.Add([]byte(`{"port":"k.v1","port":"k.v1"}`), true)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		p, errs := parseDescriptor(data, !isJSON)
		if p == nil {
			if len(errs) == 0 {
				t.Fatal("refused without an error")
			}
			if err := joinErrors(errs); !errors.Is(err, ErrInvalidDescriptor) {
				t.Fatalf("refusal does not wrap ErrInvalidDescriptor: %v", err)
			}
			return
		}
		if len(errs) != 0 {
			t.Fatalf("accepted with errors: %v", errs)
		}
		for name, m := range p.Methods {
			if !m.Risk.Valid() || !m.SideEffects.Valid() {
				t.Fatalf("method %s accepted with an invalid enum", name)
			}
			if _, ok := p.Methods[m.CompensatingAction]; m.CompensatingAction != "" && (!ok || m.CompensatingAction == name) {
				t.Fatalf("method %s accepted with a dangling compensating action", name)
			}
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, errs := parseDescriptor(out, false)
		if len(errs) != 0 {
			t.Fatalf("written form %s refused: %v", out, joinErrors(errs))
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed %+v into %+v", p, q)
		}
		if _, err := New([]*Port{p}, nil); err != nil {
			t.Fatalf("New refused an accepted descriptor: %v", err)
		}
	})
}

// FuzzParseSuite: reading any bytes as a conformance suite never panics; every refusal is a
// *FileError wrapping ErrInvalidDescriptor; an accepted suite keeps the format's rules (a suite
// name, 1 to MaxCases cases of unique valid names, params a canonical JSON object, max effect
// none or read); and written back it reads as the same Suite.
func FuzzParseSuite(f *testing.F) {
	if b, err := os.ReadFile("../../examples/plugins/ports/conformance/knowledge/v1/basic.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"suite":"conformance/k/v1/s","cases":[{"name":"a","method":"m","params":{"q":"x","n":[1,2.5,-0,1e2,{"u":"\u00e9"}]},"expect":{"error":"invalid_params","max_effect":"none"}},{"name":"b","method":"m","expect":{"max_effect":"read"}}]}`))
	f.Add([]byte(`{"suite":"conformance/k/v1/../s","cases":[{"name":"a","name":"a"}]}`))
	f.Add([]byte(`{"suite":"conformance/k/v1/s","cases":[{"name":"a","method":"m","params":[],"expect":{"max_effect":"write"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, errs := parseSuite(data)
		if s == nil || len(errs) > 0 {
			if len(errs) == 0 {
				t.Fatal("refused without an error")
			}
			if err := joinErrors(errs); !errors.Is(err, ErrInvalidDescriptor) {
				t.Fatalf("refusal does not wrap ErrInvalidDescriptor: %v", err)
			}
			return
		}
		if p, major, _, ok := SplitSuite(s.Name); !ok || p != s.Port || major != s.Major {
			t.Fatalf("accepted the name %q as %s v%d", s.Name, s.Port, s.Major)
		}
		if len(s.Cases) == 0 || len(s.Cases) > MaxCases {
			t.Fatalf("accepted %d cases", len(s.Cases))
		}
		names := map[string]bool{}
		for _, c := range s.Cases {
			if !caseNamePattern.MatchString(c.Name) || names[c.Name] || !methodPattern.MatchString(c.Method) {
				t.Fatalf("accepted the case %+v", c)
			}
			names[c.Name] = true
			if c.Expect.MaxEffect != "none" && c.Expect.MaxEffect != "read" {
				t.Fatalf("accepted the max effect %q", c.Expect.MaxEffect)
			}
			canon, err := jcs.Canonicalize(c.Params)
			if err != nil || string(canon) != string(c.Params) || c.Params[0] != '{' {
				t.Fatalf("params %s are not a canonical object: %v", c.Params, err)
			}
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		q, errs := parseSuite(out)
		if len(errs) != 0 {
			t.Fatalf("written form %s refused: %v", out, joinErrors(errs))
		}
		if !reflect.DeepEqual(s, q) {
			t.Fatalf("round trip changed %+v into %+v", s, q)
		}
	})
}
