package conformance_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/manifest"
)

func run(t *testing.T, h *kb, reg *port.Registry, opts *conformance.Options, ids ...string) []conformance.Result {
	t.Helper()
	if h.release == nil {
		h.release = make(chan struct{})
		t.Cleanup(func() { close(h.release) })
	}
	got, err := conformance.Run(context.Background(), h, reg, opts, ids...)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func byID(rs []conformance.Result) map[string]conformance.Result {
	out := map[string]conformance.Result{}
	for _, r := range rs {
		out[r.Capability] = r
	}
	return out
}

// A provider that keeps to its port passes: search as a call, reindex as a dry run; publish,
// a write without a dry run, is not run, and fetch, which claims no suite, has none.
func TestRunWellBehaved(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	got := run(t, &kb{doc: loadManifest(t)}, registry(t, ""), &conformance.Options{Now: func() time.Time { return at }})
	if len(got) != 4 {
		t.Fatalf("results %v", got)
	}
	want := []struct {
		id     string
		status conformance.Status
		cases  int
		dry    bool
	}{
		{searchID, conformance.StatusPassed, 2, false},
		{reindexID, conformance.StatusPassed, 1, true},
		{publishID, conformance.StatusNotRun, 0, false},
		{fetchID, conformance.StatusNoSuite, 0, false},
	}
	for i, w := range want {
		r := got[i]
		if r.Capability != w.id || r.Status != w.status || r.Cases != w.cases || r.DryRun != w.dry || !r.At.Equal(at) {
			t.Errorf("result %d = %+v, want %+v", i, r, w)
		}
	}
	if r := got[2]; r.Status.Passed() || r.Status.Failed() || !strings.Contains(r.Reason, "not run: no dry run") {
		t.Errorf("publish: %+v", r)
	}
	if got[0].Reason != "" || got[0].Case != "" || !got[0].Status.Passed() {
		t.Errorf("search: %+v", got[0])
	}
	// Asking for one capability runs that one only.
	if one := run(t, &kb{doc: loadManifest(t)}, registry(t, ""), nil, reindexID); len(one) != 1 || one[0].Capability != reindexID || !one[0].Status.Passed() {
		t.Fatalf("one capability: %v", one)
	}
}

// Each way a provider can misbehave fails the case it misbehaves in, named, with a reason of
// the host's own words.
func TestRunMisbehaving(t *testing.T) {
	tests := []struct {
		behaviour, capability, caseName, reason string
	}{
		{"wrong-shape", searchID, "finds-onboarding", "result.hits: must be of type array (the result breaks the capability's returns schema)"},
		{"no-data", searchID, "finds-onboarding", "result: must be of type object"},
		{"not-success", searchID, "finds-onboarding", "result.success: must be true"},
		{"effect-above", searchID, "finds-onboarding", "effects[0]: a write effect, above the capability's declared side_effects read"},
		{"effect-network", searchID, "finds-onboarding", "effects[0]: a network effect, above the capability's declared side_effects read"},
		{"effect-unknown", searchID, "finds-onboarding", "effects[0]: not a side_effects value"},
		{"dry-write", reindexID, "reindexes-in-a-dry-run", "effects[0]: a write effect in a dry run, where nothing above read may be reported"},
		{"fails", searchID, "finds-onboarding", "the call failed with execution_failed, and the case expects success"},
		{"odd-code", searchID, "finds-onboarding", "the call failed with an unknown error code, and the case expects success"},
		{"plain-error", searchID, "finds-onboarding", "the call failed with execution_failed"},
		{"panic", searchID, "finds-onboarding", "the capability panicked"},
		{"lenient", searchID, "refuses-a-blank-query", "the call succeeded, and the case expects the error invalid_params"},
		{"slow", searchID, "finds-onboarding", "did not finish within 50 ms"},
		{"hang", searchID, "finds-onboarding", "did not finish within 50 ms"},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			got := byID(run(t, &kb{doc: loadManifest(t), behaviour: tt.behaviour}, registry(t, ""),
				&conformance.Options{CaseTimeout: 50 * time.Millisecond}, tt.capability))[tt.capability]
			if got.Status != conformance.StatusFailed || !got.Status.Failed() || got.Case != tt.caseName || !strings.Contains(got.Reason, tt.reason) {
				t.Fatalf("got %+v\nwant case %s, reason %q", got, tt.caseName, tt.reason)
			}
			if strings.Contains(got.Reason, "secret") || strings.Contains(got.Reason, "format the disk") || strings.Contains(got.Reason, "corrupt") {
				t.Fatalf("the reason echoes the provider: %q", got.Reason)
			}
		})
	}
}

// A case's max_effect is held too: a read in a case that expects none fails it.
func TestRunMaxEffect(t *testing.T) {
	suite := strings.Replace(basicSuite, `"params": {"query": "onboarding"}, "expect": {"max_effect": "read"}`, `"params": {"query": "onboarding"}, "expect": {"max_effect": "none"}`, 1)
	got := run(t, &kb{doc: loadManifest(t)}, registry(t, suite), nil, searchID)[0]
	if got.Status != conformance.StatusFailed || got.Reason != "effects[0]: a read effect, above the case's max_effect none" {
		t.Fatalf("%+v", got)
	}
	// none is below read: a provider may claim less than the case allows.
	if got := run(t, &kb{doc: loadManifest(t), behaviour: "effect-none-declared"}, registry(t, ""), nil, searchID)[0]; !got.Status.Passed() {
		t.Fatalf("%+v", got)
	}
}

// The capability's own timeout_ms lowers the case timeout.
func TestRunCapabilityTimeout(t *testing.T) {
	doc := loadManifest(t, `"idempotency": "natural",`, `"idempotency": "natural", "timeout_ms": 30,`)
	got := run(t, &kb{doc: doc, behaviour: "hang"}, registry(t, ""), nil, searchID)[0]
	if got.Status != conformance.StatusFailed || got.Reason != "did not finish within 30 ms" {
		t.Fatalf("%+v", got)
	}
}

// A provider's result can hold member names of its choosing, which a path of the result then
// holds: the reason stays printable and bounded.
func TestRunReasonBounded(t *testing.T) {
	got := run(t, &kb{doc: loadManifest(t), behaviour: "evil-member"}, registry(t, ""), nil, searchID)[0]
	if got.Status != conformance.StatusFailed || !strings.HasPrefix(got.Reason, "result.") {
		t.Fatalf("%+v", got)
	}
	if len(got.Reason) > conformance.MaxReasonBytes || !utf8.ValidString(got.Reason) {
		t.Fatalf("reason of %d bytes", len(got.Reason))
	}
	for _, c := range got.Reason {
		if !unicode.IsPrint(c) {
			t.Fatalf("unprintable %U in %q", c, got.Reason)
		}
	}
}

// The suite is at fault, not the provider, when it cannot be run against the capability:
// each such case is a suite error, which fails, names the problem, and never calls the
// provider with what does not fit.
func TestRunSuiteErrors(t *testing.T) {
	tests := []struct {
		name         string
		suite        string   // replaces the basic suite's file
		replacements []string // of the manifest
		nilRegistry  bool
		capability   string
		caseName     string
		reason       string
	}{
		{name: "params that break the schema",
			suite: strings.Replace(basicSuite, `{"query": "onboarding"}`, `{"q": "onboarding"}`, 1), capability: searchID,
			caseName: "finds-onboarding", reason: "cases[0].params"},
		{name: "params of the wrong type",
			suite: strings.Replace(basicSuite, `{"query": "onboarding"}`, `{"query": 7}`, 1), capability: searchID,
			caseName: "finds-onboarding", reason: "cases[0].params.query: must be of type string (the suite's params do not fit the capability's parameters schema)"},
		{name: "not in the kit index",
			replacements: []string{`"conformance/knowledge/v1/basic"},
  {"id": "kb.org.example.testkb.reindex"`, `"conformance/knowledge/v1/missing"},
  {"id": "kb.org.example.testkb.reindex"`}, capability: searchID,
			reason: "conformance_suite: not in the host's kit index, or listed without a file"},
		{name: "listed without a file",
			replacements: []string{`"conformance/knowledge/v1/basic"},
  {"id": "kb.org.example.testkb.reindex"`, `"conformance/knowledge/v1/nofile"},
  {"id": "kb.org.example.testkb.reindex"`}, capability: searchID,
			reason: "conformance_suite: not in the host's kit index, or listed without a file"},
		{name: "no registry", nilRegistry: true, capability: searchID,
			reason: "conformance_suite: not in the host's kit index"},
		{name: "a suite of another port",
			replacements: []string{`"conformance/knowledge/v1/basic"},
  {"id": "kb.org.example.testkb.reindex"`, `"conformance/files/v1/basic"},
  {"id": "kb.org.example.testkb.reindex"`}, capability: searchID,
			reason: "conformance_suite: must be a suite of the port and major the capability implements"},
		{name: "no case for the method",
			replacements: []string{`"implements": "knowledge.fetch@1.0",`, `"implements": "knowledge.fetch@1.0", "conformance_suite": "conformance/knowledge/v1/basic",`},
			capability:   fetchID, reason: "the suite has no case for the method fetch"},
		{name: "a broken suite file",
			suite: strings.Replace(basicSuite, `"cases"`, `"setup": "curl x | sh", "cases"`, 1), capability: searchID,
			reason: "conformance_suite: port: conformance/knowledge/v1/basic.json: unknown member"},
		{name: "a suite file of two problems",
			suite: strings.Replace(basicSuite, `"cases"`, `"setup": 1, "teardown": 2, "cases"`, 1), capability: searchID,
			reason: "unknown member (known: suite, cases) (and more problems)"},
		{name: "a suite of a method the port lacks",
			suite: strings.Replace(basicSuite, `"method": "publish"`, `"method": "purge"`, 1), capability: searchID,
			reason: "cases[3].method: not a method of the host's copy of knowledge.v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := registry(t, tt.suite)
			if tt.nilRegistry {
				reg = nil
			}
			h := &kb{doc: loadManifest(t, tt.replacements...), behaviour: "panic"} // any call fails the test
			got := run(t, h, reg, nil, tt.capability)[0]
			if got.Status != conformance.StatusSuiteError || !got.Status.Failed() || got.Status.Passed() ||
				got.Case != tt.caseName || !strings.Contains(got.Reason, tt.reason) {
				t.Fatalf("got %+v\nwant case %q, reason %q", got, tt.caseName, tt.reason)
			}
		})
	}
}

// A capability without an implements is tested as the method its id's action names.
func TestRunByAction(t *testing.T) {
	doc, err := manifest.Load([]byte(`{"app_id": "org.example.plain", "version": "1.0.0", "manifest_version": "1.0", "capabilities": [
	 {"id": "kb.org.example.plain.search", "name": "Search", "description": "Searches.", "category": "TEXT_QUERY",
	  "parameters": {"type": "object", "required": ["query"], "properties": {"query": {"type": "string"}}},
	  "returns": {"type": "object", "properties": {"hits": {"type": "array"}}},
	  "side_effects": "read", "conformance_suite": "conformance/knowledge/v1/basic"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h := &plain{doc: doc}
	got, err := conformance.Run(context.Background(), h, registry(t, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Its two search cases ran: plain has no rule against a blank query, so the second fails.
	if len(got) != 1 || got[0].Status != conformance.StatusFailed || got[0].Case != "refuses-a-blank-query" || got[0].Cases != 1 ||
		got[0].Reason != "the call succeeded, and the case expects the error invalid_params" || h.calls != 2 {
		t.Fatalf("%+v, %d calls", got, h.calls)
	}
}

// Faults are errors, not results.
func TestRunFaults(t *testing.T) {
	h := &kb{doc: loadManifest(t), release: make(chan struct{})}
	defer close(h.release)
	if _, err := conformance.Run(context.Background(), h, registry(t, ""), nil, searchID, "kb.org.example.testkb.nothing"); !errors.Is(err, conformance.ErrUnknownCapability) ||
		!strings.Contains(err.Error(), "capabilities[1]") || strings.Contains(err.Error(), "nothing") {
		t.Fatalf("unknown capability: %v", err)
	}
	if _, err := conformance.Run(context.Background(), nil, nil, nil); err == nil {
		t.Fatal("nil handler")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := conformance.Run(ctx, h, registry(t, ""), nil); !errors.Is(err, context.Canceled) || len(got) != 0 {
		t.Fatalf("cancelled: %v, %v", got, err)
	}
	// Cancelled in the middle of a case: the run ends with ctx's error, and the case is not
	// recorded as the provider's failure.
	h.behaviour = "hang"
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if got, err := conformance.Run(ctx, h, registry(t, ""), nil); !errors.Is(err, context.DeadlineExceeded) || len(got) != 0 {
		t.Fatalf("cancelled mid-case: %v, %v", got, err)
	}
}

// What the host's suite knows of a method holds the capability's declarations: its
// reversibility (read as capgate reads it), its data classes and its surface. A capability
// that declares less than the method touches, or more reversibility than the method has,
// fails the case that says so, even a write whose calls cannot be run; one that declares
// what the suite says passes.
func TestRunHoldsDeclarations(t *testing.T) {
	const suite = `{"suite": "conformance/knowledge/v1/basic", "cases": [
  {"name": "finds-onboarding", "method": "search", "params": {"query": "onboarding"},
   "expect": {"max_effect": "read", "data_classes": ["documents.text"], "surface": ["screen"]}},
  {"name": "reindex-is-final", "method": "reindex", "expect": {"max_effect": "read", "reversibility": "irreversible"}},
  {"name": "publish-is-final", "method": "publish", "params": {"doc": "a"}, "expect": {"max_effect": "read", "reversibility": "compensable"}}]}`
	reg := registry(t, suite)
	for _, tt := range []struct {
		name         string
		replacements []string
		id           string
		status       conformance.Status
		reason       string
	}{
		{"an undeclared data class", nil, searchID, conformance.StatusFailed, "data_classes: the method touches documents.text, which the capability does not declare"},
		{"a data class declared, no surface", []string{`"idempotency": "natural", "environment_scope": ["dev"],`, `"idempotency": "natural", "environment_scope": ["dev"], "data_classes": ["documents"],`},
			searchID, conformance.StatusFailed, "surface: the method needs screen on the approval surface, which the capability does not declare"},
		{"both declared", []string{`"idempotency": "natural", "environment_scope": ["dev"],`, `"idempotency": "natural", "environment_scope": ["dev"], "data_classes": ["documents.text"], "surface": ["screen"],`},
			searchID, conformance.StatusPassed, ""},
		{"another class's prefix is not its parent", []string{`"idempotency": "natural", "environment_scope": ["dev"],`, `"idempotency": "natural", "environment_scope": ["dev"], "data_classes": ["documents.te"], "surface": ["screen"],`},
			searchID, conformance.StatusFailed, "data_classes:"},
		{"irreversible as the method", nil, reindexID, conformance.StatusPassed, ""},
		{"an undo it claims", []string{`"dry_run": true, "evidence": ["audit.reindex"],`, `"dry_run": true, "evidence": ["audit.reindex"], "undo_window_ms": 60000,`},
			reindexID, conformance.StatusFailed, "reversibility: the capability is reversible, and its method is at most irreversible"},
		{"reversible said without an undo window is read as irreversible", []string{`"dry_run": true, "evidence": ["audit.reindex"],`, `"dry_run": true, "evidence": ["audit.reindex"], "reversibility": "reversible",`},
			reindexID, conformance.StatusPassed, ""},
		{"a write that cannot be run is held all the same", []string{`"evidence": ["audit.publish"], "environment_scope": ["dev"],`, `"evidence": ["audit.publish"], "environment_scope": ["dev"], "undo_window_ms": 1000,`},
			publishID, conformance.StatusFailed, "reversibility: the capability is reversible, and its method is at most compensable"},
		{"a write that cannot be run, declared as it is", nil, publishID, conformance.StatusNotRun, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, &kb{doc: loadManifest(t, tt.replacements...)}, reg, nil, tt.id)[0]
			if got.Status != tt.status || !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("%v, want %s %q", got, tt.status, tt.reason)
			}
		})
	}
}
