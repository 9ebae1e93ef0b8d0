package port_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/manifest"
)

// baseManifest is a valid provider of knowledge.v1 against testdata/ports: one capability per
// method, each at the port's floors.
const baseManifest = `{
  "app_id": "org.example.kb",
  "version": "1.2.0",
  "manifest_version": "1.0",
  "kind": "capability_provider",
  "ports": ["knowledge.v1"],
  "capabilities": [
    {"id": "knowledge.org.example.kb.search", "name": "Search", "description": "Searches the knowledge base.",
     "category": "TEXT_QUERY", "parameters": {"type": "object"}, "returns": {"type": "object"},
     "side_effects": "read", "risk": "low", "idempotency": "natural",
     "implements": "knowledge.search@1.0", "conformance_suite": "conformance/knowledge/v1/basic"},
    {"id": "knowledge.org.example.kb.purge", "name": "Purge", "description": "Purges a document.",
     "category": "FILE_OPERATION", "parameters": {"type": "object"}, "returns": {"type": "object"},
     "side_effects": "destructive", "risk": "high", "idempotency": "none", "dry_run": true,
     "evidence": ["audit.purge"], "compensation": "knowledge.org.example.kb.restore",
     "implements": "knowledge.purge@1.0"},
    {"id": "knowledge.org.example.kb.restore", "name": "Restore", "description": "Restores a purged document.",
     "category": "FILE_OPERATION", "parameters": {"type": "object"}, "returns": {"type": "object"},
     "side_effects": "write", "risk": "medium", "idempotency": "keyed",
     "evidence": ["audit.restore"], "implements": "knowledge.restore@1.1"}
  ]
}`

// The marker is put where a hostile value would go; no problem may repeat it.
const marker = "evil\u202evalue"

func loadRegistry(t testing.TB) *port.Registry {
	t.Helper()
	r, err := port.LoadDir("testdata/ports")
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	return r
}

func baseTree(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(baseManifest), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func capAt(m map[string]any, i int) map[string]any {
	return m["capabilities"].([]any)[i].(map[string]any)
}

// parse turns a manifest tree into a Manifest through the real parser.
func parse(t *testing.T, tree map[string]any) (*manifest.Manifest, manifest.Problems) {
	t.Helper()
	data, err := json.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := manifest.Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return doc.Manifest(), doc.Validate()
}

func TestBaseManifestPasses(t *testing.T) {
	m, ps := parse(t, baseTree(t))
	if len(ps) != 0 {
		t.Fatalf("the base manifest breaks manifest rules: %v", ps)
	}
	if ps := port.Check(m, loadRegistry(t)); len(ps) != 0 {
		t.Fatalf("Check on the base manifest: %v", ps)
	}
}

func TestCheckRules(t *testing.T) {
	type want struct{ path, rule string } // rule: a substring
	search := func(m map[string]any) map[string]any { return capAt(m, 0) }
	purge := func(m map[string]any) map[string]any { return capAt(m, 1) }
	restore := func(m map[string]any) map[string]any { return capAt(m, 2) }
	tests := []struct {
		name  string
		tree  func(m map[string]any)     // applied to the JSON tree before parsing
		model func(m *manifest.Manifest) // applied to the parsed Manifest
		want  []want
	}{
		// kind
		{name: "skill declares ports and capabilities", tree: func(m map[string]any) { m["kind"] = "skill" },
			want: []want{{"ports", "only a capability_provider may declare ports"}, {"capabilities", "only a capability_provider may declare capabilities"}}},
		{name: "playbook declares capabilities", tree: func(m map[string]any) { m["kind"] = "playbook"; delete(m, "ports") },
			want: []want{{"capabilities", "only a capability_provider"}}},
		{name: "control_pack declares ports", tree: func(m map[string]any) { m["kind"] = "control_pack"; m["capabilities"] = []any{} },
			want: []want{{"ports", "only a capability_provider"}}},
		{name: "unknown kind is not a provider", model: func(m *manifest.Manifest) { m.Kind = marker },
			want: []want{{"ports", "only a capability_provider"}, {"capabilities", "only a capability_provider"}}},

		// ports
		{name: "port misspelt", model: func(m *manifest.Manifest) { m.Ports = []string{"Knowledge.V1" + marker} },
			want: []want{{"ports[0]", "must be a port name and major"},
				{"capabilities[0].implements", "not in this manifest's ports"},
				{"capabilities[1].implements", "not in this manifest's ports"},
				{"capabilities[2].implements", "not in this manifest's ports"}}},
		{name: "two majors of one port", tree: func(m map[string]any) { m["ports"] = []any{"knowledge.v1", "knowledge.v2"} },
			want: []want{{"ports[1]", "at most one major per port (another at ports[0])"}}},
		{name: "port declared twice", model: func(m *manifest.Manifest) { m.Ports = []string{"knowledge.v1", "knowledge.v1"} },
			want: []want{{"ports[1]", "port declared twice (first at ports[0])"}}},
		{name: "port the host lacks", tree: func(m map[string]any) { m["ports"] = []any{"knowledge.v1", "billing.v1"} },
			want: []want{{"ports[1]", "not a port this host supports"}}},
		{name: "major the host lacks", tree: func(m map[string]any) {
			m["ports"] = []any{"knowledge.v2"}
			for i := range 3 {
				capAt(m, i)["implements"] = strings.Replace(capAt(m, i)["implements"].(string), "@1.", "@2.", 1)
			}
		}, want: []want{{"ports[0]", "not a port this host supports"},
			{"capabilities[0].conformance_suite", "must be a suite of the port and major the capability implements"}}},

		// implements
		{name: "capability without implements beside ports", tree: func(m map[string]any) { delete(search(m), "implements") },
			want: []want{{"capabilities[0].implements", "required"}}},
		{name: "implements a port not in ports", tree: func(m map[string]any) { search(m)["implements"] = "files.read@1.0" },
			want: []want{{"capabilities[0].implements", "names a port and major not in this manifest's ports"},
				{"capabilities[0].conformance_suite", "must be a suite of the port and major the capability implements"}}},
		{name: "implements another major", tree: func(m map[string]any) {
			delete(search(m), "conformance_suite")
			search(m)["implements"] = "knowledge.search@2.0"
		}, want: []want{{"capabilities[0].implements", "names a port and major not in this manifest's ports"}}},
		{name: "implements a method not in the host copy", tree: func(m map[string]any) { search(m)["implements"] = "knowledge.searchall@1.0" },
			want: []want{{"capabilities[0].implements", "names a method not in the host's copy of the port"}}},
		{name: "implements malformed", model: func(m *manifest.Manifest) { m.Capabilities[0].Implements = marker },
			want: []want{{"capabilities[0].implements", "must be <port>.<method>@<major>.<minor>"}}},
		{name: "two capabilities implement one method", tree: func(m map[string]any) {
			dup := map[string]any{}
			for k, v := range search(m) {
				dup[k] = v
			}
			dup["id"] = "knowledge.org.example.kb.search_again"
			m["capabilities"] = append(m["capabilities"].([]any), dup)
		}, want: []want{{"capabilities[3].implements", "another capability implements the same method (first at capabilities[0])"}}},

		// risk
		{name: "risk below the method's", tree: func(m map[string]any) { purge(m)["risk"] = "medium" },
			want: []want{{"capabilities[1].risk", "below the port's floor: must be at least high"}}},
		// side effect
		{name: "side effect below the method's", tree: func(m map[string]any) { purge(m)["side_effects"] = "network" },
			want: []want{{"capabilities[1].side_effects", "below the port's floor: must be at least destructive"}}},
		{name: "risk above low needs at least write", tree: func(m map[string]any) { search(m)["risk"] = "medium" },
			want: []want{{"capabilities[0].side_effects", "must be at least write when risk is above low"}}},
		{name: "undeclared side effect is system and needs evidence", tree: func(m map[string]any) {
			delete(search(m), "side_effects")
			delete(search(m), "risk")
		}, want: []want{{"capabilities[0].evidence", "required when side_effects is above read"}}},
		// idempotency
		{name: "keyed on a method that is not idempotent", tree: func(m map[string]any) { purge(m)["idempotency"] = "keyed" },
			want: []want{{"capabilities[1].idempotency", "must be none: the port's method is not idempotent"}}},
		{name: "natural on a method that is not idempotent", tree: func(m map[string]any) { purge(m)["idempotency"] = "natural" },
			want: []want{{"capabilities[1].idempotency", "must be none"}}},
		// dry run
		{name: "dry run the method lacks", tree: func(m map[string]any) { search(m)["dry_run"] = true },
			want: []want{{"capabilities[0].dry_run", "must be false: the port's method has no dry run"}}},
		// compensation
		{name: "compensation missing", tree: func(m map[string]any) { delete(purge(m), "compensation") },
			want: []want{{"capabilities[1].compensation", "required: the port's method has the compensating action restore"}}},
		{name: "compensation names a capability of another method", tree: func(m map[string]any) { purge(m)["compensation"] = "knowledge.org.example.kb.search" },
			want: []want{{"capabilities[1].compensation", "must name a capability of this manifest that implements the port's compensating action restore"}}},
		{name: "compensation names itself", model: func(m *manifest.Manifest) { m.Capabilities[1].Compensation = m.Capabilities[1].ID },
			want: []want{{"capabilities[1].compensation", "must name a capability of this manifest"}}},
		{name: "compensation names no capability", model: func(m *manifest.Manifest) { m.Capabilities[1].Compensation = "knowledge.org.example.kb." + marker },
			want: []want{{"capabilities[1].compensation", "must name a capability of this manifest"}}},
		{name: "compensation of another major", model: func(m *manifest.Manifest) { m.Capabilities[2].Implements = "knowledge.restore@2.0" },
			want: []want{{"capabilities[2].implements", "names a port and major not in this manifest's ports"},
				{"capabilities[1].compensation", "implements the port's compensating action restore"},
				{"ports[0]", "side-effecting method restore has no capability implementing it"}}},
		// evidence
		{name: "evidence lacks the method's record", tree: func(m map[string]any) { purge(m)["evidence"] = []any{"audit.other"} },
			want: []want{{"capabilities[1].evidence", "must include every evidence record of the port's method (missing audit.purge)"}}},
		{name: "no evidence above read", tree: func(m map[string]any) { delete(restore(m), "evidence") },
			want: []want{{"capabilities[2].evidence", "required when side_effects is above read"}}},
		// conformance suite
		{name: "suite of another port", tree: func(m map[string]any) { search(m)["conformance_suite"] = "conformance/files/v1/basic" },
			want: []want{{"capabilities[0].conformance_suite", "must be a suite of the port and major the capability implements"}}},
		{name: "suite of another major", tree: func(m map[string]any) { search(m)["conformance_suite"] = "conformance/knowledge/v2/basic" },
			want: []want{{"capabilities[0].conformance_suite", "must be a suite of the port and major"}}},
		{name: "suite not in the kit index", tree: func(m map[string]any) { search(m)["conformance_suite"] = "conformance/knowledge/v1/advanced" },
			want: []want{{"capabilities[0].conformance_suite", "not in the host's kit index"}}},
		{name: "suite climbing out", tree: func(m map[string]any) { search(m)["conformance_suite"] = "conformance/../../etc/passwd" },
			want: []want{{"capabilities[0].conformance_suite", "must be conformance/<port>/v<major>/<suite>"}}},
		{name: "suite climbing out after the form", tree: func(m map[string]any) {
			search(m)["conformance_suite"] = "conformance/knowledge/v1/basic/../../../../etc/passwd"
		}, want: []want{{"capabilities[0].conformance_suite", "must be conformance/<port>/v<major>/<suite>"}}},
		{name: "suite absolute", tree: func(m map[string]any) { search(m)["conformance_suite"] = "/etc/passwd" },
			want: []want{{"capabilities[0].conformance_suite", "must be conformance/<port>/v<major>/<suite>"}}},
		{name: "suite absolute under the form", tree: func(m map[string]any) { search(m)["conformance_suite"] = "/conformance/knowledge/v1/basic" },
			want: []want{{"capabilities[0].conformance_suite", "must be conformance/<port>/v<major>/<suite>"}}},
		{name: "suite with a backslash", tree: func(m map[string]any) { search(m)["conformance_suite"] = `conformance\knowledge\v1\basic` },
			want: []want{{"capabilities[0].conformance_suite", "must be conformance/<port>/v<major>/<suite>"}}},
		{name: "suite hostile", model: func(m *manifest.Manifest) { m.Capabilities[0].ConformanceSuite = marker },
			want: []want{{"capabilities[0].conformance_suite", "must be conformance/<port>/v<major>/<suite>"}}},
		// unimplemented side-effecting method
		{name: "side-effecting method without a capability", tree: func(m map[string]any) {
			m["capabilities"] = []any{search(m), restore(m)}
		}, want: []want{{"ports[0]", "side-effecting method purge has no capability implementing it"}}},
		{name: "a read method may go without a capability", tree: func(m map[string]any) {
			m["capabilities"] = []any{purge(m), restore(m)}
		}},
		// more caution than the port requires is fine
		{name: "more caution", tree: func(m map[string]any) {
			s := search(m)
			s["risk"], s["side_effects"], s["idempotency"], s["evidence"] = "high", "system", "none", []any{"audit.search"}
			p := purge(m)
			p["side_effects"], p["dry_run"], p["evidence"] = "system", false, []any{"audit.purge", "audit.more"}
			restore(m)["compensation"] = "knowledge.org.example.kb.purge"
		}},
	}
	r := loadRegistry(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := baseTree(t)
			if tt.tree != nil {
				tt.tree(tree)
			}
			m, _ := parse(t, tree)
			if tt.model != nil {
				tt.model(m)
			}
			got := port.Check(m, r)
			for _, p := range got {
				if strings.Contains(p.Rule, marker) || strings.Contains(p.Path, marker) {
					t.Errorf("problem repeats the offending value: %v", p)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems %v, want %d %v", len(got), got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if got[i].Path != w.path || !strings.Contains(got[i].Rule, w.rule) {
					t.Errorf("problem %d = %q, want path %q and a rule with %q", i, got[i], w.path, w.rule)
				}
			}
		})
	}
}

// A manifest without ports is not bounded by any: its capabilities need no implements.
func TestCheckManifestWithoutPorts(t *testing.T) {
	tree := baseTree(t)
	delete(tree, "ports")
	for i := range 3 {
		delete(capAt(tree, i), "implements")
	}
	m, ps := parse(t, tree)
	if len(ps) != 0 {
		t.Fatalf("manifest problems: %v", ps)
	}
	if got := port.Check(m, loadRegistry(t)); len(got) != 0 {
		t.Fatalf("Check: %v", got)
	}
	// Its conformance suites are still looked up in the kit index.
	m.Capabilities[0].ConformanceSuite = "conformance/knowledge/v1/advanced"
	got := port.Check(m, loadRegistry(t))
	if len(got) != 1 || got[0].Path != "capabilities[0].conformance_suite" || got[0].Rule != "not in the host's kit index" {
		t.Fatalf("Check: %v", got)
	}
}

// A conformance suite is a name in the kit index, never a path: a suite that names an existing
// file, absolutely or relatively, is refused by its form, and Check reads no file.
func TestCheckSuiteIsNeverAPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "basic")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A registry built without any folder, so nothing could be read relative to one.
	r, err := port.New([]*port.Port{{Name: "knowledge", Major: 1, Methods: map[string]port.Method{
		"search": {Risk: manifest.RiskLow, SideEffects: manifest.SideEffectRead, Idempotent: true},
	}}}, []string{"conformance/knowledge/v1/basic"})
	if err != nil {
		t.Fatal(err)
	}
	tree := baseTree(t)
	tree["capabilities"] = []any{capAt(tree, 0)}
	m, _ := parse(t, tree)
	if got := port.Check(m, r); len(got) != 0 {
		t.Fatalf("Check: %v", got)
	}
	rel, err := filepath.Rel(".", file)
	if err != nil {
		rel = "../" + file
	}
	for _, s := range []string{file, rel, "conformance/" + file, "./conformance/knowledge/v1/basic", "conformance/knowledge/v1/./basic"} {
		m.Capabilities[0].ConformanceSuite = s
		got := port.Check(m, r)
		if len(got) != 1 || got[0].Path != "capabilities[0].conformance_suite" || !strings.Contains(got[0].Rule, "must be conformance/") {
			t.Errorf("suite %q: %v", s, got)
		}
	}
}

func TestCheckNilRegistrySupportsNothing(t *testing.T) {
	m, _ := parse(t, baseTree(t))
	got := port.Check(m, nil)
	if len(got) == 0 || got[0] != (manifest.Problem{Path: "ports[0]", Rule: "not a port this host supports"}) {
		t.Fatalf("Check with a nil registry: %v", got)
	}
	for _, p := range got {
		if strings.HasPrefix(p.Path, "capabilities[") && p.Path != "capabilities[0].conformance_suite" {
			t.Errorf("unexpected problem: %v", p)
		}
	}
	if port.Check(nil, nil) != nil {
		t.Fatal("Check(nil) has problems")
	}
}

// The files port comes from the YAML descriptor; its floors apply the same way.
func TestCheckYAMLDescribedPort(t *testing.T) {
	const files = `{
  "app_id": "org.example.drive", "version": "0.1.0", "manifest_version": "1.0",
  "ports": ["files.v1"],
  "capabilities": [
    {"id": "files.org.example.drive.read", "name": "Read", "description": "Reads a file.",
     "category": "FILE_OPERATION", "parameters": {"type": "object"}, "returns": {"type": "object"},
     "side_effects": "read", "implements": "files.read@1.0", "conformance_suite": "conformance/files/v1/basic"},
    {"id": "files.org.example.drive.write", "name": "Write", "description": "Writes a file.",
     "category": "FILE_OPERATION", "parameters": {"type": "object"}, "returns": {"type": "object"},
     "side_effects": "write", "idempotency": "keyed", "dry_run": true, "evidence": ["files.write"],
     "implements": "files.write@1.0"},
    {"id": "files.org.example.drive.delete", "name": "Delete", "description": "Deletes a file.",
     "category": "FILE_OPERATION", "parameters": {"type": "object"}, "returns": {"type": "object"},
     "side_effects": "destructive", "evidence": ["files.delete"], "implements": "files.delete@1.0"}
  ]}`
	doc, err := manifest.Parse([]byte(files))
	if err != nil {
		t.Fatal(err)
	}
	if ps := doc.Validate(); len(ps) != 0 {
		t.Fatalf("manifest problems: %v", ps)
	}
	r := loadRegistry(t)
	if ps := port.Check(doc.Manifest(), r); len(ps) != 0 {
		t.Fatalf("Check: %v", ps)
	}
	m := doc.Manifest()
	m.Capabilities[2].Idempotency = manifest.IdempotencyNatural
	m.Capabilities[2].Evidence = nil
	want := []manifest.Problem{
		{Path: "capabilities[2].idempotency", Rule: "must be none: the port's method is not idempotent"},
		{Path: "capabilities[2].evidence", Rule: "must include every evidence record of the port's method (missing files.delete)"},
	}
	got := port.Check(m, r)
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Check = %v, want %v", got, want)
	}
}
