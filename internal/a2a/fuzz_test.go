package a2a

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/capgate/capgate/internal/jcs"
)

// FuzzTaskPart holds parseTaskPart to its contract on any part a client could send: it
// never panics; a part it takes has params that are the canonical JSON of an object, the
// same value as ParamsValue, and a capability named in one of the two forms; and the part
// written back from what it took is taken again as the same task (a round trip).
func FuzzTaskPart(f *testing.F) {
	for _, s := range []string{
		`{"kind":"data","data":{"capability":"calc.org.capgate.calc.compute","params":{"expression":"6*7"}}}`,
		`{"kind":"data","data":{"capability":"files.org.capgate.files.write_file","params":{"path":"a.txt","content":"x"}},"metadata":{"k":1}}`,
		`{"kind":"data","data":{"app":"echo","method":"say","params":{"text":"\u00e9\ud83d\ude00","n":1e2}}}`,
		`{"kind":"data","data":{"capability":"echo.org.example.echo.say"}}`,
		`{"kind":"data","data":{"capability":"echo.org.example.echo.say","token":"x"}}`,
		`{"kind":"data","data":{"app":"echo"}}`,
		`{"kind":"data","data":[1]}`,
		`{"kind":"text","text":"write the report"}`,
		`{"kind":"file","file":{"uri":"https://example.com"}}`,
		`{"kind":"data","data":{"capability":"a.b.c","params":{"a":[{"b":null}],"c":-0.0}}}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jcs.Parse(data, &jcs.Options{MaxDepth: MaxDepth, MaxBytes: MaxRequestBytes})
		if err != nil {
			return
		}
		got, ps := parseTaskPart(v, "part")
		if len(ps) > 0 {
			for _, p := range ps {
				if p.path == "" || p.rule == "" {
					t.Fatalf("a problem without a path or a rule: %+v", p)
				}
			}
			return
		}
		if got.App == "" || got.Method == "" {
			t.Fatalf("a task without app or method: %+v", got)
		}
		canon, err := jcs.Canonicalize(got.Params)
		if err != nil || !bytes.Equal(canon, got.Params) || len(got.Params) == 0 || got.Params[0] != '{' {
			t.Fatalf("params %q are not the canonical JSON of an object (%v)", got.Params, err)
		}
		fromValue, err := json.Marshal(got.ParamsValue)
		if err != nil {
			t.Fatalf("ParamsValue does not encode: %v", err)
		}
		if c, err := jcs.Canonicalize(fromValue); err != nil || !bytes.Equal(c, got.Params) {
			t.Fatalf("ParamsValue %s is not Params %s", fromValue, got.Params)
		}

		// Written back in the form it names, the task is taken again as the same.
		back := map[string]any{"app": got.App, "method": got.Method, "params": json.RawMessage(got.Params)}
		if d, _ := v.Get("data"); hasMember(d, "capability") {
			back = map[string]any{"capability": got.Method, "params": json.RawMessage(got.Params)}
		}
		b, err := json.Marshal(map[string]any{"kind": "data", "data": back})
		if err != nil {
			t.Fatal(err)
		}
		v2, err := jcs.Parse(b, &jcs.Options{MaxDepth: MaxDepth, MaxBytes: MaxRequestBytes})
		if err != nil {
			t.Fatalf("the part written back does not parse: %v", err)
		}
		again, ps := parseTaskPart(v2, "part")
		if len(ps) > 0 || again.App != got.App || again.Method != got.Method || !bytes.Equal(again.Params, got.Params) {
			t.Fatalf("round trip: %+v (%v), want %+v", again, ps, got)
		}
	})
}

func hasMember(v jcs.Value, name string) bool {
	_, ok := v.Get(name)
	return ok
}
