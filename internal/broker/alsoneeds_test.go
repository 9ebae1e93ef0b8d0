package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/manifest"
)

// Options.AlsoNeeds is configuration: New parses it once, refusing an id or a permission that
// does not parse, and a call needs a token that covers the extra permission too.
func TestAlsoNeeds(t *testing.T) {
	e := newEnv(t)
	for name, also := range map[string]map[string][]string{
		"capability id": {"notes.read": {"fs.read"}},
		"permission":    {"notes.org.example.notes.search": {"fs"}},
	} {
		o := e.b.o
		o.AlsoNeeds = also
		if _, err := New(o); !errors.Is(err, manifest.ErrSyntax) {
			t.Errorf("%s: New = %v, want a syntax error", name, err)
		}
	}

	o := e.b.o
	o.AlsoNeeds = map[string][]string{"notes.org.example.notes.search": {"fs.read"}}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		grants []string
		code   string
	}{
		{[]string{"notes.org.example.notes.search"}, policy.CodeCapabilityDenied},
		{[]string{"notes.org.example.notes.search", "fs.read"}, ""},
	} {
		tok := e.issue(t, "cl_alice", tc.grants, 0, time.Hour, e.key)
		res := b.Call(ctx, alice, call("search", `{"query":"milk"}`, tok))
		if res.Code != tc.code {
			t.Errorf("grants %v: code %q (%s), want %q", tc.grants, res.Code, res.Message, tc.code)
		}
	}
}
