package token_test

import (
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/token"
)

func TestCondition(t *testing.T) {
	now := time.Date(2026, 1, 30, 12, 0, 0, 0, time.UTC)
	params := map[string]any{
		"path":  "/home/user/a.txt",
		"count": float64(3),
		"tags":  []any{"a", "b"},
		"opts":  map[string]any{"dry_run": true},
	}
	cases := []struct {
		expr string
		want bool
	}{
		{`true`, true},
		{`false`, false},
		{`params.count < 10.0`, true},
		{`params.count > 10.0`, false},
		{`params.path.startsWith("/home/user/")`, true},
		{`params.path.endsWith(".exe")`, false},
		{`"a" in params.tags`, true},
		{`params.tags.all(t, t.size() == 1)`, true},
		{`params.opts.dry_run == true`, true},
		{`permission == "fs.read"`, true},
		{`permission.startsWith("fs.")`, true},
		{`now < timestamp("2026-02-01T00:00:00Z")`, true},
		{`now > timestamp("2026-02-01T00:00:00Z")`, false},
		{`has(params.missing)`, false},
		// Errors are refusals.
		{`params.missing == 1`, false},
		{`params.count == "3"`, false},
		{`params.path / 2 == 1`, false},
		{`params.tags[5] == "x"`, false},
		// The cost limit stops a hostile condition.
		{`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, a+b+c+d+e > 0)))))`, false},
	}
	for _, c := range cases {
		if err := token.CompileCondition(c.expr); err != nil {
			t.Errorf("CompileCondition(%q): %v", c.expr, err)
			continue
		}
		v := token.Constraints{Condition: c.expr}.Check(token.Input{Permission: "fs.read", Params: params, Now: now})
		ok, rule := v.OK, v.Rule
		if ok != c.want {
			t.Errorf("%q: %v, want %v", c.expr, ok, c.want)
		}
		if !ok && rule != token.RuleCondition {
			t.Errorf("%q: rule %q", c.expr, rule)
		}
	}
	// A nil params map is an empty one, not an error.
	if !(token.Constraints{Condition: `params.size() == 0`}).Check(token.Input{}).OK {
		t.Error("nil params")
	}
}

func TestCompileConditionRefuses(t *testing.T) {
	for _, expr := range []string{
		``,
		`1 + 1`,
		`"yes"`,
		`params`,
		`unknown_var == 1`,
		`params.path.matchesX("a")`,
		`ext.strings.quote("a") == "a"`,
		`(`,
		`true && `,
		strings.Repeat("(", 200) + "true" + strings.Repeat(")", 200),
		strings.Repeat("true && ", token.MaxConditionBytes/8+1) + "true",
	} {
		if err := token.CompileCondition(expr); err == nil {
			t.Errorf("CompileCondition(%.40q) accepted", expr)
		}
		// A condition that does not compile refuses every call.
		if (token.Constraints{Condition: expr}).Check(token.Input{}).OK && expr != "" {
			t.Errorf("Check with %.40q allowed", expr)
		}
	}
}
