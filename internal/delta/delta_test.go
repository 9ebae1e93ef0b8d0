package delta

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/capgate/capgate/manifest"
)

// baseJSON is the locked manifest most cases start from: every widening field of its first
// capability set, so that each rule has something to loosen.
const baseJSON = `{
  "app_id": "org.example.kb",
  "version": "1.0.0",
  "manifest_version": "1.0",
  "kind": "capability_provider",
  "ports": ["kb.v1"],
  "signer": "https://issuer.example.com kb-release",
  "capabilities": [
    {
      "id": "kb.org.example.kb.search",
      "name": "Search",
      "description": "Finds articles.",
      "category": "TEXT_QUERY",
      "parameters": {"type": "object"},
      "returns": {"type": "object"},
      "side_effects": "destructive",
      "risk": "high",
      "confirmation_required": true,
      "undo_window_ms": 30000,
      "auth_level": "privileged",
      "idempotency": "none",
      "dry_run": true,
      "compensation": "kb.org.example.kb.restore",
      "credential_intents": ["kb.api"],
      "network_intents": [{"host": "api.example.com", "port": 443}],
      "filesystem_intents": [{"path": "/data/kb", "mode": "read_only"}],
      "environment_scope": ["dev"],
      "evidence": ["kb.audit"],
      "timeout_ms": 1000,
      "resource_budget": {"calls": 10, "bytes": 1000},
      "autonomy_ceiling": "ask",
      "reversibility": "reversible"
    },
    {
      "id": "kb.org.example.kb.restore",
      "name": "Restore",
      "description": "Restores an article.",
      "category": "FILE_OPERATION",
      "parameters": {"type": "object"},
      "returns": {"type": "object"},
      "side_effects": "write"
    },
    {
      "id": "kb.org.example.kb.list",
      "name": "List",
      "description": "Lists articles.",
      "category": "TEXT_QUERY",
      "parameters": {"type": "object"},
      "returns": {"type": "object"},
      "side_effects": "read"
    }
  ]
}`

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// obj is a decoded JSON object, edited by the cases.
type obj = map[string]any

func base(t testing.TB) obj {
	t.Helper()
	var m obj
	if err := json.Unmarshal([]byte(baseJSON), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func capOf(m obj, i int) obj { return m["capabilities"].([]any)[i].(obj) }

// parse marshals m and parses it as a manifest, failing the test unless it is valid.
func parse(t testing.TB, m obj) *manifest.Document {
	t.Helper()
	doc := parseAny(t, m)
	if ps := doc.Validate(); len(ps) > 0 {
		t.Fatalf("test manifest is not valid: %v", ps)
	}
	return doc
}

func parseAny(t testing.TB, m obj) *manifest.Document {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := manifest.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// capCopy returns a copy of capability i of m, for a declared permissions delta.
func capCopy(t testing.TB, m obj, i int) obj {
	t.Helper()
	b, _ := json.Marshal(capOf(m, i))
	var c obj
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// upgrade sets version 1.1.0 with previous_version 1.0.0.
func upgrade(m obj) {
	m["version"] = "1.1.0"
	m["previous_version"] = "1.0.0"
}

type diffCase struct {
	name     string
	shared   func(m obj)                  // applied to both manifests
	editOld  func(o obj)                  // applied to the locked one
	edit     func(t *testing.T, o, n obj) // applied to the new one
	old, new Side                         // Digest and Signer; Doc is filled in
	verdict  Verdict
	path     string // a change at this path must exist...
	widening bool   // ...with this Widening
	contains string // ...and this in its text
	reason   string // a reason that must be given
	only     bool   // the change at path is the only one
}

func setCap(i int, key string, v any) func(*testing.T, obj, obj) {
	return func(_ *testing.T, _, n obj) { capOf(n, i)[key] = v }
}

func delCap(i int, key string) func(*testing.T, obj, obj) {
	return func(_ *testing.T, _, n obj) { delete(capOf(n, i), key) }
}

func appendCap(i int, key string, v any) func(*testing.T, obj, obj) {
	return func(_ *testing.T, _, n obj) { c := capOf(n, i); c[key] = append(c[key].([]any), v) }
}

var widenings = []diffCase{
	{name: "capability added", edit: func(_ *testing.T, _, n obj) {
		n["capabilities"] = append(n["capabilities"].([]any), obj{
			"id": "kb.org.example.kb.export", "name": "Export", "description": "Exports.", "category": "FILE_OPERATION",
			"parameters": obj{"type": "object"}, "returns": obj{"type": "object"},
		})
	}, path: "capabilities[3]", contains: `capability "kb.org.example.kb.export" added`, only: true},
	{name: "risk lowered", edit: setCap(0, "risk", "medium"), path: "capabilities[0].risk", contains: "risk lowered from high to medium", only: true},
	{name: "side effect lowered", edit: setCap(0, "side_effects", "read"), path: "capabilities[0].side_effects", contains: "side effect lowered from destructive to read", only: true},
	{name: "dry run lowered", edit: setCap(0, "dry_run", false), path: "capabilities[0].dry_run", only: true},
	{name: "idempotency raised", edit: setCap(0, "idempotency", "keyed"), path: "capabilities[0].idempotency", contains: "raised from none to keyed", only: true},
	{name: "compensation removed", edit: delCap(0, "compensation"), path: "capabilities[0].compensation", only: true},
	{name: "credential intent added", edit: appendCap(0, "credential_intents", "kb.admin"), path: "capabilities[0].credential_intents[1]", contains: `"kb.admin"`, only: true},
	{name: "network intent added", edit: appendCap(0, "network_intents", obj{"host": "cdn.example.com", "port": 443}), path: "capabilities[0].network_intents[1]", only: true},
	{name: "network intent same host other port", edit: appendCap(0, "network_intents", obj{"host": "api.example.com", "port": 8443}), path: "capabilities[0].network_intents[1]", contains: "port 8443", only: true},
	{name: "network intent on a capability that had none", edit: setCap(1, "network_intents", []any{obj{"host": "api.example.com", "port": 443}}), path: "capabilities[1].network_intents[0]", only: true},
	{name: "filesystem intent added", edit: appendCap(0, "filesystem_intents", obj{"path": "/data/other"}), path: "capabilities[0].filesystem_intents[1]", contains: "read_only", only: true},
	{name: "filesystem mode to read_write", edit: setCap(0, "filesystem_intents", []any{obj{"path": "/data/kb", "mode": "read_write"}}), path: "capabilities[0].filesystem_intents[0].mode", contains: "from read_only to read_write", only: true},
	{name: "environment scope entry added", edit: appendCap(0, "environment_scope", "prod"), path: "capabilities[0].environment_scope[1]", only: true},
	{name: "environment scope removed", edit: delCap(0, "environment_scope"), path: "capabilities[0].environment_scope", contains: "capgate", only: true},
	{name: "evidence removed", edit: delCap(0, "evidence"), path: "capabilities[0].evidence", contains: `"kb.audit"`, only: true},
	{name: "timeout raised", edit: setCap(0, "timeout_ms", 2000), path: "capabilities[0].timeout_ms", contains: "raised from 1000 ms to 2000 ms", only: true},
	{name: "timeout to no limit", edit: setCap(0, "timeout_ms", 0), path: "capabilities[0].timeout_ms", contains: "to no limit", only: true},
	{name: "timeout removed", edit: delCap(0, "timeout_ms"), path: "capabilities[0].timeout_ms", only: true},
	{name: "budget raised", edit: setCap(0, "resource_budget", obj{"calls": 20, "bytes": 1000}), path: "capabilities[0].resource_budget.calls", only: true},
	{name: "budget to no limit", edit: setCap(0, "resource_budget", obj{"calls": 0, "bytes": 1000}), path: "capabilities[0].resource_budget.calls", contains: "to no limit", only: true},
	{name: "budget key removed", edit: setCap(0, "resource_budget", obj{"calls": 10}), path: "capabilities[0].resource_budget.bytes", contains: "removed", only: true},
	{name: "kind changed",
		shared: func(m obj) { m["kind"] = "skill"; m["capabilities"] = []any{}; delete(m, "ports") },
		edit:   func(_ *testing.T, _, n obj) { n["kind"] = "playbook" },
		path:   "kind", contains: "from skill to playbook", only: true},
	{name: "port major changed", edit: func(_ *testing.T, _, n obj) { n["ports"] = []any{"kb.v2"} }, path: "ports[0]", contains: "major changed", only: true},
	{name: "port added", edit: func(_ *testing.T, _, n obj) { n["ports"] = []any{"kb.v1", "search.v1"} }, path: "ports[1]", only: true},
	{name: "different verifying key", old: Side{Signer: "SHA256:key-a"}, new: Side{Signer: "SHA256:key-b"}, path: "signature", only: true},
	{name: "verifying key gone", old: Side{Signer: "SHA256:key-a"}, path: "signature", only: true},
	{name: "declared signer changed", edit: func(_ *testing.T, _, n obj) { n["signer"] = "https://issuer.example.com someone-else" }, path: "signer", only: true},
	{name: "declared signer removed", edit: func(_ *testing.T, _, n obj) { delete(n, "signer") }, path: "signer", only: true},
	{name: "rollback",
		editOld: func(o obj) { o["version"] = "1.2.0" },
		edit:    func(_ *testing.T, _, n obj) { n["version"] = "1.1.0"; n["previous_version"] = "1.2.0" },
		path:    "version", contains: "a rollback"},
	// A rollback was built before the locked version existed: its previous_version and declared
	// delta are its own history, so it is reviewed as a widening, never rejected for them.
	{name: "rollback without previous_version", editOld: func(o obj) { o["version"] = "2.0.0" }, path: "version", contains: "a rollback"},
	{name: "rollback with its own history", editOld: func(o obj) { o["version"] = "2.0.0" },
		edit: func(_ *testing.T, _, n obj) { n["previous_version"] = "0.9.0" }, path: "version", contains: "a rollback"},
	{name: "rollback to a pre-release", edit: func(_ *testing.T, _, n obj) { n["version"] = "1.0.0-rc.1"; n["previous_version"] = "1.0.0" }, path: "version", contains: "a rollback"},

	// capgate's own widenings say so.
	{name: "auth level lowered", edit: setCap(0, "auth_level", "user"), path: "capabilities[0].auth_level", contains: "capgate", only: true},
	{name: "confirmation off", edit: setCap(0, "confirmation_required", false), path: "capabilities[0].confirmation_required", contains: "capgate", only: true},
	{name: "autonomy raised", edit: setCap(0, "autonomy_ceiling", "act_if_agreed"), path: "capabilities[0].autonomy_ceiling", contains: "raised from ask to act_if_agreed", only: true},
	{name: "autonomy default act", edit: delCap(0, "autonomy_ceiling"), path: "capabilities[0].autonomy_ceiling", contains: "to act", only: true},
	{name: "undo window removed", edit: delCap(0, "undo_window_ms"), path: "capabilities[0].undo_window_ms", contains: "removed (a widening by capgate", only: true},
	{name: "undo window shortened", edit: setCap(0, "undo_window_ms", 1000), path: "capabilities[0].undo_window_ms", contains: "capgate", only: true},
	{name: "less reversible", edit: setCap(0, "reversibility", "irreversible"), path: "capabilities[0].reversibility", contains: "capgate", only: true},
	{name: "permission changed", edit: setCap(1, "permission", "kb.write"), path: "capabilities[1].permission", contains: "capgate", only: true},
}

var rejects = []diffCase{
	{name: "same version other digest", edit: setCap(0, "risk", "high"), old: Side{Digest: digestA}, new: Side{Digest: digestB},
		reason: ReasonSameVersion, path: "digest"},
	{name: "same version other digest, build metadata", edit: func(_ *testing.T, _, n obj) { n["version"] = "1.0.0+rebuild" },
		old: Side{Digest: digestA}, new: Side{Digest: digestB}, reason: ReasonSameVersion, path: "version"},
	{name: "version raised without previous_version", edit: func(_ *testing.T, _, n obj) { n["version"] = "1.1.0" },
		reason: ReasonPreviousVersion, path: "version"},
	{name: "previous_version not the locked one", edit: func(_ *testing.T, _, n obj) { n["version"] = "1.1.0"; n["previous_version"] = "0.9.0" },
		reason: ReasonPreviousVersion, path: "version"},
	{name: "previous_version declared, delta left out", edit: func(_ *testing.T, _, n obj) { upgrade(n); capOf(n, 0)["risk"] = "low" },
		reason: ReasonDeclaredDelta, path: "capabilities[0].risk", widening: true},
	{name: "declared delta names the wrong capability", edit: func(t *testing.T, o, n obj) {
		upgrade(n)
		capOf(n, 0)["risk"] = "low"
		n["permissions_delta"] = []any{obj{"name": "kb.org.example.kb.list", "previous": capCopy(t, o, 2), "current": capCopy(t, o, 2)}}
	}, reason: ReasonDeclaredDelta, path: "capabilities[0].risk", widening: true},
	{name: "declared delta hides part of the change", edit: func(t *testing.T, o, n obj) {
		upgrade(n)
		declared := capCopy(t, o, 0)
		declared["risk"] = "medium"
		capOf(n, 0)["risk"] = "low"
		n["permissions_delta"] = []any{obj{"name": "kb.org.example.kb.search", "previous": capCopy(t, o, 0), "current": declared}}
	}, reason: ReasonDeclaredDelta, path: "capabilities[0].risk", widening: true},
	{name: "declared delta without previous_version, same version", edit: func(t *testing.T, o, n obj) {
		n["permissions_delta"] = []any{obj{"name": "kb.org.example.kb.list", "current": capCopy(t, o, 2)}}
	}, reason: ReasonDeclaredDelta, path: "permissions_delta"},
	{name: "app_id changed", edit: func(_ *testing.T, _, n obj) {
		n["app_id"] = "org.example.other"
		n["capabilities"] = []any{obj{"id": "kb.org.example.other.search", "name": "S", "description": "D", "category": "TEXT_QUERY",
			"parameters": obj{"type": "object"}, "returns": obj{"type": "object"}}}
	}, reason: ReasonAppID, path: "app_id"},
}

var narrowings = []diffCase{
	{name: "upgrade with a correct delta", edit: func(t *testing.T, o, n obj) {
		upgrade(n)
		capOf(n, 0)["risk"] = "low"
		n["permissions_delta"] = []any{obj{"name": "kb.org.example.kb.search", "previous": capCopy(t, o, 0), "current": capCopy(t, n, 0)}}
	}, verdict: Widening, path: "capabilities[0].risk", widening: true},
	{name: "upgrade, capability removed, correct delta", edit: func(t *testing.T, o, n obj) {
		upgrade(n)
		n["capabilities"] = n["capabilities"].([]any)[:2]
		n["permissions_delta"] = []any{obj{"name": "kb.org.example.kb.list", "previous": capCopy(t, o, 2)}}
	}, verdict: Narrowing, path: "capabilities[2]", contains: "removed"},
	{name: "upgrade, nothing in capabilities changed", edit: func(_ *testing.T, _, n obj) { upgrade(n) },
		verdict: Neutral, path: "version", contains: `raised from "1.0.0" to "1.1.0"`},
	{name: "upgrade with a new SBOM reference", edit: func(_ *testing.T, _, n obj) {
		upgrade(n)
		n["sbom_ref"] = obj{"path": "sbom.json", "digest": digestB}
	}, verdict: Neutral, path: "sbom_ref"},
	{name: "risk raised", edit: setCap(1, "risk", "high"), path: "capabilities[1].risk", contains: "risk raised from medium to high", only: true},
	{name: "side effect raised", edit: setCap(2, "side_effects", "write"), path: "capabilities[2].side_effects", contains: "raised from read to write"},
	{name: "network intent removed", edit: delCap(0, "network_intents"), path: "capabilities[0].network_intents", contains: "removed", only: true},
	{name: "filesystem mode to read_only", editOld: func(o obj) { capOf(o, 0)["filesystem_intents"] = []any{obj{"path": "/data/kb", "mode": "read_write"}} },
		edit: delCap(0, "filesystem_intents"), path: "capabilities[0].filesystem_intents", contains: "removed", only: true},
	{name: "environment scope entry removed", editOld: func(o obj) { capOf(o, 0)["environment_scope"] = []any{"dev", "prod"} },
		path: "capabilities[0].environment_scope", contains: `"prod" removed`, only: true},
	{name: "evidence added", edit: appendCap(0, "evidence", "kb.trace"), path: "capabilities[0].evidence[1]", only: true},
	{name: "timeout lowered", edit: setCap(0, "timeout_ms", 500), path: "capabilities[0].timeout_ms", contains: "lowered", only: true},
	{name: "timeout from no limit", edit: setCap(1, "timeout_ms", 500), path: "capabilities[1].timeout_ms", contains: "from no limit to 500 ms", only: true},
	{name: "budget lowered", edit: setCap(0, "resource_budget", obj{"calls": 5, "bytes": 1000}), path: "capabilities[0].resource_budget.calls", only: true},
	{name: "budget key added", edit: setCap(1, "resource_budget", obj{"calls": 5}), path: "capabilities[1].resource_budget.calls", only: true},
	{name: "description changed", edit: setCap(0, "description", "Finds \x1b[31marticles\x1b[0m."), path: "capabilities[0].description", contains: "description changed", only: true},
	{name: "parameters changed", edit: setCap(0, "parameters", obj{"type": "object", "required": []any{"q"}}), path: "capabilities[0].parameters", contains: "parameters schema changed", only: true},
	{name: "category changed", edit: setCap(0, "category", "STATE_QUERY"), path: "capabilities[0].category", only: true},
	{name: "name changed", edit: setCap(0, "name", "Find"), path: "capabilities[0].name", contains: `"Search" to "Find"`, only: true},
	{name: "capability removed", edit: func(_ *testing.T, _, n obj) { n["capabilities"] = n["capabilities"].([]any)[:2] },
		path: "capabilities[2]", contains: `capability "kb.org.example.kb.list" removed`, only: true},
	{name: "confirmation now required", edit: setCap(1, "confirmation_required", true), path: "capabilities[1].confirmation_required", only: true},
	{name: "auth level raised", edit: setCap(0, "auth_level", "system"), path: "capabilities[0].auth_level", only: true},
	{name: "autonomy lowered", edit: setCap(0, "autonomy_ceiling", "handoff"), path: "capabilities[0].autonomy_ceiling", only: true},
	{name: "more reversible", editOld: func(o obj) { capOf(o, 0)["reversibility"] = "irreversible" }, path: "capabilities[0].reversibility", only: true},
	{name: "undo window lengthened", edit: setCap(0, "undo_window_ms", 60000), path: "capabilities[0].undo_window_ms", only: true},
	{name: "default written out", edit: setCap(1, "auth_level", "user"), path: "capabilities[1].auth_level", contains: "same meaning", only: true},
	{name: "member capgate does not interpret", edit: func(_ *testing.T, _, n obj) { n["x_note"] = "hi" }, path: "x_note", only: true},
	{name: "capabilities reordered", edit: func(_ *testing.T, _, n obj) {
		cs := n["capabilities"].([]any)
		cs[1], cs[2] = cs[2], cs[1]
	}, path: "capabilities", contains: "reordered", only: true},
	{name: "port removed", editOld: func(o obj) { o["ports"] = []any{"kb.v1", "search.v1"} }, path: "ports[1]", contains: "removed", only: true},
	{name: "verifying key where the lock had none", new: Side{Signer: "SHA256:key-a"}, path: "signature", only: true},
	{name: "package digest recomputed on an upgrade", edit: func(_ *testing.T, _, n obj) { upgrade(n) },
		old: Side{Digest: digestA}, new: Side{Digest: digestB}, path: "digest", verdict: Neutral},
	{name: "unchanged", verdict: Unchanged},
	{name: "only the signature differs", edit: func(_ *testing.T, _, n obj) { n["signature"] = nil },
		old: Side{Digest: digestA, Signer: "k"}, new: Side{Digest: digestA, Signer: "k"}, verdict: Unchanged},
}

func runCases(t *testing.T, cases []diffCase, verdict Verdict, widening bool) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, n := base(t), base(t)
			if tc.shared != nil {
				tc.shared(o)
				tc.shared(n)
			}
			if tc.editOld != nil {
				tc.editOld(o)
			}
			if tc.edit != nil {
				tc.edit(t, o, n)
			}
			old, new := tc.old, tc.new
			old.Doc, new.Doc = parse(t, o), parse(t, n)
			r := Diff(old, new)

			want := verdict
			if tc.verdict != "" {
				want = tc.verdict
			}
			if r.Verdict != want {
				t.Errorf("verdict %s, want %s\n%s", r.Verdict, want, show(r))
			}
			if tc.reason != "" && !slices.Contains(r.Reasons, tc.reason) {
				t.Errorf("reasons %q lack %q", r.Reasons, tc.reason)
			}
			if tc.path == "" {
				if len(r.Changes) != 0 {
					t.Errorf("changes %s, want none", show(r))
				}
				return
			}
			wide := widening || tc.widening
			i := slices.IndexFunc(r.Changes, func(c Change) bool {
				return c.Path == tc.path && c.Widening == wide && strings.Contains(c.Change, tc.contains)
			})
			if i < 0 {
				t.Errorf("no change at %s with widening %v containing %q\n%s", tc.path, wide, tc.contains, show(r))
			}
			if tc.only && len(r.Changes) != 1 {
				t.Errorf("want only the change at %s\n%s", tc.path, show(r))
			}
		})
	}
}

func show(r Result) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

func TestDiffWidening(t *testing.T)  { runCases(t, widenings, Widening, true) }
func TestDiffReject(t *testing.T)    { runCases(t, rejects, Reject, false) }
func TestDiffNarrowing(t *testing.T) { runCases(t, narrowings, Narrowing, false) }

// The same version, build metadata aside, with another declared digest is another package
// under the locked one's version: a reject, as install says, even between bare manifests
// with no recomputed digest; neutral changes are shown as neutral, not as narrowings.
func TestDiffSameVersionOtherDeclaredDigest(t *testing.T) {
	for name, versions := range map[string][2]string{"same": {"1.0.0", "1.0.0"}, "build metadata": {"1.0.0+a", "1.0.0+b"}} {
		o, n := base(t), base(t)
		o["version"], n["version"] = versions[0], versions[1]
		o["digest"], n["digest"] = digestA, digestB
		r := Diff(Side{Doc: parse(t, o)}, Side{Doc: parse(t, n)})
		if r.Verdict != Reject || !slices.Contains(r.Reasons, ReasonSameVersion) {
			t.Errorf("%s: %s", name, show(r))
		}
		for _, c := range r.Changes {
			if (c.Path == "digest" || c.Path == "version") && c.Kind != KindNeutral {
				t.Errorf("%s: %s is %s", name, c.Path, c.Kind)
			}
		}
	}
}

func TestDiffNoLockEntry(t *testing.T) {
	doc := parse(t, base(t))
	r := Diff(Side{}, Side{Doc: doc, Digest: digestA})
	if r.Verdict != Widening || len(r.Reasons) != 0 {
		t.Fatalf("verdict %s, want widening\n%s", r.Verdict, show(r))
	}
	for i, c := range doc.Manifest().Capabilities {
		want := Change{Path: index("capabilities", i), Change: "capability \"" + c.ID + "\" added", Widening: true, Kind: KindWidening}
		if !slices.Contains(r.Changes, want) {
			t.Errorf("missing %+v\n%s", want, show(r))
		}
	}
	for _, c := range r.Changes {
		if !c.Widening {
			t.Errorf("with no lock entry every change widens: %+v", c)
		}
	}
}

// A declared delta with no lock entry cannot be checked against anything; it is not a reason
// to reject a first install.
func TestDiffNoLockEntryDeclaredDelta(t *testing.T) {
	n := base(t)
	upgrade(n)
	n["permissions_delta"] = []any{obj{"name": "kb.org.example.kb.list", "current": capCopy(t, n, 2)}}
	r := Diff(Side{}, Side{Doc: parse(t, n)})
	if r.Verdict != Widening {
		t.Fatalf("verdict %s, want widening\n%s", r.Verdict, show(r))
	}
}

func TestDiffInvalid(t *testing.T) {
	valid := parse(t, base(t))
	bad := base(t)
	capOf(bad, 0)["compensation"] = "kb.org.example.kb.nothing"
	invalid := parseAny(t, bad)
	if len(invalid.Validate()) == 0 {
		t.Fatal("test manifest should be invalid")
	}
	for _, tc := range []struct {
		name     string
		old, new Side
		reason   string
	}{
		{"new nil", Side{Doc: valid}, Side{}, ReasonNoNewManifest},
		{"new invalid", Side{Doc: valid}, Side{Doc: invalid}, ReasonNewInvalid},
		{"new invalid, no lock", Side{}, Side{Doc: invalid}, ReasonNewInvalid},
		{"old invalid", Side{Doc: invalid}, Side{Doc: valid}, ReasonOldInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Diff(tc.old, tc.new)
			if r.Verdict != Reject || !slices.Contains(r.Reasons, tc.reason) || r.Changes == nil {
				t.Errorf("got %s, want reject for %q", show(r), tc.reason)
			}
		})
	}
}

// Changes come top level first, then capabilities in the new order, removed ones last.
func TestDiffOrder(t *testing.T) {
	o, n := base(t), base(t)
	upgrade(n)
	cs := n["capabilities"].([]any)
	n["capabilities"] = []any{cs[1], cs[0]} // list removed, restore and search swapped
	capOf(n, 1)["risk"] = "low"
	capOf(n, 0)["risk"] = "high"
	n["ports"] = []any{"kb.v2"}
	r := Diff(Side{Doc: parse(t, o)}, Side{Doc: parse(t, n)})
	var paths []string
	for _, c := range r.Changes {
		paths = append(paths, c.Path)
	}
	want := []string{"version", "previous_version", "ports[0]", "capabilities", "capabilities[0].risk", "capabilities[1].risk", "capabilities[2]"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths %q, want %q\n%s", paths, want, show(r))
	}
	if r.Verdict != Reject || !slices.Equal(r.Reasons, []string{ReasonDeclaredDelta}) {
		t.Errorf("verdict %s %q, want reject for the missing delta", r.Verdict, r.Reasons)
	}
}

// hostile strings: an ANSI escape, a C1 control introducer, a bidi override and a newline.
var hostile = []string{"\x1b[31m", "\u009b31m", "\u202e", "\n", "\x00", "\x7f"}

func TestChangeTextsQuoteHostileStrings(t *testing.T) {
	for _, h := range hostile {
		o, n := base(t), base(t)
		capOf(n, 0)["network_intents"] = []any{obj{"host": h + "evil.example.com", "port": 443}}
		capOf(n, 0)["filesystem_intents"] = []any{obj{"path": "/data/" + h}}
		capOf(n, 0)["description"] = "Finds " + h
		capOf(n, 0)["name"] = "Search " + h
		capOf(n, 1)["x"+h] = h
		n["signer"] = h
		n["x_"+h] = h
		r := Diff(Side{Doc: parseAny(t, o), Signer: "k" + h}, Side{Doc: parseAny(t, n), Signer: "K" + h})
		if len(r.Changes) < 7 {
			t.Fatalf("too few changes for %q: %s", h, show(r))
		}
		for _, c := range append(r.Changes, Change{Path: strings.Join(r.Reasons, " ")}) {
			for _, s := range []string{c.Path, c.Change} {
				if strings.Contains(s, h) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0x202e }) {
					t.Errorf("raw control character in %q", s)
				}
			}
		}
	}
}

func TestResultJSON(t *testing.T) {
	doc := parse(t, base(t))
	b, err := json.Marshal(Diff(Side{Doc: doc}, Side{Doc: doc}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"verdict":"unchanged","changes":[]}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestRecompute(t *testing.T) {
	o := base(t)
	doc := parse(t, o)
	if got := Recompute(doc, doc); got == nil || len(got) != 0 {
		t.Errorf("Recompute of one manifest = %#v, want empty", got)
	}

	n := base(t)
	cs := n["capabilities"].([]any)
	capOf(n, 0)["risk"] = "low"
	n["capabilities"] = append([]any{obj{"id": "kb.org.example.kb.add", "name": "Add", "description": "Adds.", "category": "TEXT_INPUT",
		"parameters": obj{"type": "object"}, "returns": obj{"type": "object"}}}, cs[0], cs[1])
	got := Recompute(doc, parse(t, n))

	want := []manifest.CapabilityChange{
		{Name: "kb.org.example.kb.add", Current: mustJCS(t, capOf(n, 0))},
		{Name: "kb.org.example.kb.list", Previous: mustJCS(t, capOf(o, 2))},
		{Name: "kb.org.example.kb.search", Previous: mustJCS(t, capOf(o, 0)), Current: mustJCS(t, capOf(n, 1))},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d changes, want %d: %s", len(got), len(want), mustJSON(got))
	}
	for i := range want {
		if got[i].Name != want[i].Name || string(got[i].Previous) != string(want[i].Previous) || string(got[i].Current) != string(want[i].Current) {
			t.Errorf("change %d:\n got %s\nwant %s", i, mustJSON(got[i]), mustJSON(want[i]))
		}
	}

	all := Recompute(nil, doc)
	if len(all) != 3 || all[0].Previous != nil || all[0].Current == nil {
		t.Errorf("Recompute(nil, doc) = %s, want every capability added", mustJSON(all))
	}
}

// mustJCS is v's canonical form as Go's encoder writes it: sorted keys, compact, and for
// these ASCII values without floats, the same bytes as RFC 8785.
func mustJCS(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
