package port

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
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
