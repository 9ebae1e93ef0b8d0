package mcp

import (
	"encoding/json"
	"testing"
)

// The dry-run argument is read and taken out of the arguments; anything but a boolean is
// refused, and without it a call is no dry run.
func TestDryRunArgument(t *testing.T) {
	for _, tc := range []struct {
		in, params string
		dry, ok    bool
	}{
		{`{"a":1}`, `{"a":1}`, false, true},
		{`{"a":1,"_dry_run":true}`, `{"a":1}`, true, true},
		{`{"_dry_run":false,"b":[1]}`, `{"b":[1]}`, false, true},
		{`{"_dry_run":"true"}`, ``, false, false},
		{`{"_dry_run":1}`, ``, false, false},
		{`{"_dry_run":null}`, ``, false, false},
		{`{"_Dry_Run":true}`, `{"_Dry_Run":true}`, false, true}, // another name: a param like any
		{``, `{}`, false, true},
	} {
		p, _, dry, ok := paramsAndDryRun(json.RawMessage(tc.in))
		if ok != tc.ok || dry != tc.dry || (ok && string(p) != tc.params) {
			t.Errorf("%s: params %s dry %v ok %v, want %s %v %v", tc.in, p, dry, ok, tc.params, tc.dry, tc.ok)
		}
	}
}
