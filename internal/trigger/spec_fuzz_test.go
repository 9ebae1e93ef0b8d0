package trigger_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/trigger"
)

// FuzzParseSpec: a proposal never panics the parser, one it takes encodes and parses back to
// the same, and an error never quotes a value of the proposal (a secret in a param).
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		`{"source":{"kind":"schedule","cron":"0 9 * * *","time_zone":"UTC"},"action":{"app":"a","method":"m","params":{"k":1}},"budget":{"count":1},"ends_at":"2027-01-01T00:00:00Z"}`,
		`{"source":{"kind":"webhook"},"condition":"event.x == 1","budget":{"count":2,"amount":{"field":"amount","max":10.5}},"missed":"once"}`,
		`{"action":{"params":{"password":"hunter2"}},"budget":{"count":"hunter2"}}`,
		`{"ends_at":"hunter2"}`, `{"hunter2":1}`, `{"hunte\u0072\u0032\u007f":1}`, `[]`, `{}`, `{"source":{"kind":"x","kind":"y"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := trigger.ParseSpec(data)
		if err != nil {
			// A member's name is named (it is the field path); a value never is.
			if containsValue(err.Error()) && !nameContains(data, "hunter2") {
				t.Fatalf("the error quotes a value: %v", err)
			}
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := trigger.ParseSpec(b)
		if err != nil {
			t.Fatalf("a spec taken does not parse back: %v\n%s", err, b)
		}
		b2, _ := json.Marshal(s2)
		if string(b) != string(b2) {
			t.Fatalf("parse back differs:\n%s\n%s", b, b2)
		}
	})
}

// containsValue reports whether an error text holds the seeds' secret.
func containsValue(s string) bool { return strings.Contains(s, "hunter2") }

// nameContains reports whether a member of an object in data, however its name is spelled
// (escapes decoded), has a name containing s: a name is a field path, which an error may name.
func nameContains(data []byte, s string) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct{ object, key bool } // key: the next string is a member's name
	var stack []level
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].key = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, level{object: true, key: true})
			case '[':
				stack = append(stack, level{})
			default:
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].key {
				if strings.Contains(v, s) {
					return true
				}
				stack[n-1].key = false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}
