package manifest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capgate/capgate/manifest"
)

// base returns the valid test manifest as a mutable tree.
func base(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("testdata/notes.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func capAt(m map[string]any, i int) map[string]any {
	return m["capabilities"].([]any)[i].(map[string]any)
}

func encode(t *testing.T, m any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lint returns every problem of data, a parse failure as one problem.
func lint(t *testing.T, data []byte) manifest.Problems {
	t.Helper()
	doc, err := manifest.Parse(data)
	if err != nil {
		se, ok := err.(*manifest.SyntaxError)
		if !ok {
			t.Fatalf("Parse: %v", err)
		}
		return manifest.Problems{se.Problem()}
	}
	return doc.Validate()
}

// The marker is put where a hostile value would go; no problem may repeat it.
const marker = "EVIL\u202eVALUE"

func TestBaseManifestIsValid(t *testing.T) {
	if ps := lint(t, encode(t, base(t))); len(ps) != 0 {
		t.Fatalf("problems in the valid manifest: %v", ps)
	}
}

func TestLintRules(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(m map[string]any)
		path   string
		rule   string // a substring of the rule
	}{
		{"missing app_id", func(m map[string]any) { delete(m, "app_id") }, "app_id", "required"},
		{"missing version", func(m map[string]any) { delete(m, "version") }, "version", "required"},
		{"missing manifest_version", func(m map[string]any) { delete(m, "manifest_version") }, "manifest_version", "required"},
		{"missing capabilities", func(m map[string]any) { delete(m, "capabilities") }, "capabilities", "required"},
		{"null app_id", func(m map[string]any) { m["app_id"] = nil }, "app_id", "must not be null"},
		{"app_id one label", func(m map[string]any) { m["app_id"] = "notes" }, "app_id", "reverse-DNS"},
		{"app_id upper case", func(m map[string]any) { m["app_id"] = "org.Example.notes" }, "app_id", "reverse-DNS"},
		{"app_id trailing hyphen", func(m map[string]any) { m["app_id"] = "org.example-" }, "app_id", "reverse-DNS"},
		{"app_id too long", func(m map[string]any) { m["app_id"] = "a" + strings.Repeat(".bcdefghij", 26) }, "app_id", "longer than 253"},
		{"version not semver", func(m map[string]any) { m["version"] = "1.4" }, "version", "SemVer"},
		{"version leading zero", func(m map[string]any) { m["version"] = "01.4.0" }, "version", "SemVer"},
		{"manifest_version pattern", func(m map[string]any) { m["manifest_version"] = "1" }, "manifest_version", `\d+\.\d+`},
		{"capabilities not array", func(m map[string]any) { m["capabilities"] = "x" }, "capabilities", "must be an array"},
		{"capability not object", func(m map[string]any) { m["capabilities"].([]any)[1] = 3 }, "capabilities[1]", "must be an object"},
		{"capability missing id", func(m map[string]any) { delete(capAt(m, 2), "id") }, "capabilities[2].id", "required"},
		{"capability missing name", func(m map[string]any) { delete(capAt(m, 0), "name") }, "capabilities[0].name", "required"},
		{"capability missing description", func(m map[string]any) { delete(capAt(m, 0), "description") }, "capabilities[0].description", "required"},
		{"capability missing category", func(m map[string]any) { delete(capAt(m, 0), "category") }, "capabilities[0].category", "required"},
		{"capability missing parameters", func(m map[string]any) { delete(capAt(m, 0), "parameters") }, "capabilities[0].parameters", "required"},
		{"capability missing returns", func(m map[string]any) { delete(capAt(m, 0), "returns") }, "capabilities[0].returns", "required"},
		{"two-part id", func(m map[string]any) { capAt(m, 0)["id"] = "notes.search" }, "capabilities[0].id", "{domain}.{app_id}.{action}"},
		{"id of another app", func(m map[string]any) { capAt(m, 0)["id"] = "notes.org.other.notes.search" }, "capabilities[0].id", "this manifest's app_id"},
		{"id with upper case action", func(m map[string]any) { capAt(m, 0)["id"] = "notes.org.example.notes.Search" }, "capabilities[0].id", "{domain}"},
		{"id domain with underscore", func(m map[string]any) { capAt(m, 0)["id"] = "no_tes.org.example.notes.search" }, "capabilities[0].id", "{domain}"},
		{"id app prefix only", func(m map[string]any) { capAt(m, 0)["id"] = "notes.org.example.notesx.search" }, "capabilities[0].id", "this manifest's app_id"},
		{"duplicate id", func(m map[string]any) { capAt(m, 2)["id"] = capAt(m, 0)["id"] }, "capabilities[2].id", "duplicate capability id (first at capabilities[0])"},
		{"category enum", func(m map[string]any) { capAt(m, 0)["category"] = "text_query" }, "capabilities[0].category", "must be one of"},
		{"side effect enum", func(m map[string]any) { capAt(m, 0)["side_effects"] = "DELETE" }, "capabilities[0].side_effects", "must be one of"},
		{"auth level enum", func(m map[string]any) { capAt(m, 0)["auth_level"] = "admin" }, "capabilities[0].auth_level", "must be one of"},
		{"capability version pattern", func(m map[string]any) { capAt(m, 0)["version"] = "1.0.0" }, "capabilities[0].version", `\d+\.\d+`},
		{"undo window negative", func(m map[string]any) { capAt(m, 1)["undo_window_ms"] = -1 }, "capabilities[1].undo_window_ms", "between 0"},
		{"undo window fraction", func(m map[string]any) { capAt(m, 1)["undo_window_ms"] = 1.5 }, "capabilities[1].undo_window_ms", "integer"},
		{"confirmation not bool", func(m map[string]any) { capAt(m, 1)["confirmation_required"] = "yes" }, "capabilities[1].confirmation_required", "boolean"},
		{"description too long", func(m map[string]any) { capAt(m, 0)["description"] = strings.Repeat("é", 1025) }, "capabilities[0].description", "2048 bytes"},
		{"parameters not object", func(m map[string]any) { capAt(m, 0)["parameters"] = []any{} }, "capabilities[0].parameters", "JSON Schema object"},
		{"parameters bad type keyword", func(m map[string]any) { capAt(m, 0)["parameters"] = map[string]any{"type": "objekt"} }, "capabilities[0].parameters.type", "meta-schema"},
		{"returns bad regex", func(m map[string]any) { capAt(m, 0)["returns"] = map[string]any{"type": "string", "pattern": "(["} }, "capabilities[0].returns.pattern", "regular expression"},
		{"unknown dialect", func(m map[string]any) {
			capAt(m, 0)["parameters"] = map[string]any{"$schema": "https://example.com/dialect", "type": "object"}
		}, "capabilities[0].parameters.$schema", "dialect"},
		{"remote ref", func(m map[string]any) {
			capAt(m, 0)["parameters"] = map[string]any{"$ref": "https://schemas.example.com/p.json"}
		}, "capabilities[0].parameters", "never fetched"},
		{"file ref", func(m map[string]any) { capAt(m, 0)["returns"] = map[string]any{"$ref": "file:///etc/passwd"} }, "capabilities[0].returns", "never fetched"},
		{"relative ref", func(m map[string]any) { capAt(m, 0)["returns"] = map[string]any{"$ref": "other.json#/x"} }, "capabilities[0].returns", "never fetched"},
		{"remote ref by $id", func(m map[string]any) {
			capAt(m, 0)["returns"] = map[string]any{"$id": "http://127.0.0.1:9/base.json", "$ref": "sibling.json"}
		}, "capabilities[0].returns", "never fetched"},
		{"dangling local ref", func(m map[string]any) { capAt(m, 0)["parameters"] = map[string]any{"$ref": "#/definitions/nope"} }, "capabilities[0].parameters", "points to nothing"},
		{"events entry missing event_type", func(m map[string]any) { delete(m["events"].([]any)[0].(map[string]any), "event_type") }, "events[0].event_type", "required"},
		{"events entry missing description", func(m map[string]any) { delete(m["events"].([]any)[0].(map[string]any), "description") }, "events[0].description", "required"},
		{"events payload not schema", func(m map[string]any) {
			m["events"].([]any)[0].(map[string]any)["payload_schema"] = map[string]any{"type": 5}
		}, "events[0].payload_schema.type", "meta-schema"},
		{"events duplicate type", func(m map[string]any) { m["events"] = append(m["events"].([]any), m["events"].([]any)[0]) }, "events[1].event_type", "duplicate"},
		{"compensation unknown", func(m map[string]any) { capAt(m, 1)["compensation"] = "notes.org.example.notes.nope" }, "capabilities[1].compensation", "another capability"},
		{"compensation self", func(m map[string]any) { capAt(m, 1)["compensation"] = capAt(m, 1)["id"] }, "capabilities[1].compensation", "another capability"},
		{"compensable without compensation", func(m map[string]any) { capAt(m, 2)["reversibility"] = "compensable" }, "capabilities[2].compensation", "compensable"},
		{"risk enum", func(m map[string]any) { capAt(m, 0)["risk"] = "HIGH" }, "capabilities[0].risk", "must be one of"},
		{"permission grammar", func(m map[string]any) { capAt(m, 0)["permission"] = "fs" }, "capabilities[0].permission", "at least two segments"},
		{"permission wildcard", func(m map[string]any) { capAt(m, 0)["permission"] = "fs.*" }, "capabilities[0].permission", "segment"},
		{"autonomy enum", func(m map[string]any) { capAt(m, 0)["autonomy_ceiling"] = "always" }, "capabilities[0].autonomy_ceiling", "must be one of"},
		{"idempotency enum", func(m map[string]any) { capAt(m, 0)["idempotency"] = "NATURAL" }, "capabilities[0].idempotency", "must be one of"},
		{"kind enum", func(m map[string]any) { m["kind"] = "CAPABILITY_PROVIDER" }, "kind", "must be one of"},
		{"skill with capabilities", func(m map[string]any) { m["kind"] = "skill" }, "capabilities", "only a capability_provider"},
		{"digest upper hex", func(m map[string]any) { m["digest"] = "sha256:" + strings.Repeat("A", 64) }, "digest", "lowercase hex"},
		{"timeout negative", func(m map[string]any) { capAt(m, 0)["timeout_ms"] = -5 }, "capabilities[0].timeout_ms", "between 0"},
		{"network port zero", func(m map[string]any) {
			capAt(m, 0)["network_intents"] = []any{map[string]any{"host": "api.example.com", "port": 0}}
		}, "capabilities[0].network_intents[0].port", "between 1 and 65535"},
		{"network port missing", func(m map[string]any) {
			capAt(m, 0)["network_intents"] = []any{map[string]any{"host": "api.example.com"}}
		}, "capabilities[0].network_intents[0].port", "required"},
		{"filesystem relative", func(m map[string]any) { capAt(m, 0)["filesystem_intents"] = []any{map[string]any{"path": "data"}} }, "capabilities[0].filesystem_intents[0].path", "absolute"},
		{"filesystem mode", func(m map[string]any) {
			capAt(m, 0)["filesystem_intents"] = []any{map[string]any{"path": "/sandbox/x", "mode": "rw"}}
		}, "capabilities[0].filesystem_intents[0].mode", "must be one of"},
		{"credential intent grammar", func(m map[string]any) { capAt(m, 0)["credential_intents"] = []any{"Scm.GitHub"} }, "capabilities[0].credential_intents[0]", "must match"},
		{"environment scope empty", func(m map[string]any) { capAt(m, 0)["environment_scope"] = []any{} }, "capabilities[0].environment_scope", "never read as all"},
		{"environment scope all", func(m map[string]any) { capAt(m, 0)["environment_scope"] = []any{"dev", "ALL"} }, "capabilities[0].environment_scope[1]", `never "all"`},
		{"implements grammar", func(m map[string]any) { capAt(m, 0)["implements"] = "notes.search" }, "capabilities[0].implements", "@major.minor"},
		{"deprecated_after", func(m map[string]any) { m["deprecated_after"] = "tomorrow" }, "deprecated_after", "RFC 3339"},
		{"signature wrong type", func(m map[string]any) { m["signature"] = 5 }, "signature", "string or null"},
		{"case variant of a known field", func(m map[string]any) { m["App_ID"] = "org.example.notes" }, "app_id", "only by case"},
		{"case variant by Kelvin sign", func(m map[string]any) { m["\u212aind"] = "skill" }, "kind", "only by case"},
		{"case variant inside a capability", func(m map[string]any) { capAt(m, 1)["Side_Effects"] = "none" }, "capabilities[1].side_effects", "only by case"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base(t)
			tt.mutate(m)
			ps := lint(t, encode(t, m))
			found := false
			for _, p := range ps {
				if p.Path == tt.path && strings.Contains(p.Rule, tt.rule) {
					found = true
				}
			}
			if !found {
				t.Fatalf("want a problem at %q with rule containing %q; got %v", tt.path, tt.rule, ps)
			}
		})
	}
}

func TestLintReportsEveryProblemAtOnce(t *testing.T) {
	m := base(t)
	delete(m, "version")
	capAt(m, 0)["category"] = "NOPE"
	capAt(m, 1)["undo_window_ms"] = -3
	capAt(m, 2)["id"] = "x.y"
	ps := lint(t, encode(t, m))
	want := []string{"version", "capabilities[0].category", "capabilities[1].undo_window_ms", "capabilities[2].id"}
	for _, w := range want {
		found := false
		for _, p := range ps {
			found = found || p.Path == w
		}
		if !found {
			t.Errorf("no problem at %s in %v", w, ps)
		}
	}
}

func TestProblemsNeverEchoTheValue(t *testing.T) {
	m := base(t)
	m["app_id"] = marker
	m["version"] = marker
	m["kind"] = marker
	m["digest"] = marker
	c := capAt(m, 0)
	for _, f := range []string{"id", "category", "side_effects", "auth_level", "version", "permission", "risk", "implements", "compensation", "conformance_suite"} {
		c[f] = marker
	}
	c["credential_intents"] = []any{marker}
	c["environment_scope"] = []any{marker + "all"}
	c["parameters"] = map[string]any{"type": marker, "pattern": marker + "(["}
	c["returns"] = map[string]any{"$schema": marker}
	capAt(m, 1)["Side_Effects"] = marker
	ps := lint(t, encode(t, m))
	if len(ps) < 10 {
		t.Fatalf("too few problems: %v", ps)
	}
	for _, p := range ps {
		if strings.Contains(p.String(), "EVIL") || strings.Contains(p.String(), "\u202e") {
			t.Errorf("problem echoes the value: %q", p)
		}
	}
}

func TestStrictDecoding(t *testing.T) {
	valid, err := os.ReadFile("testdata/notes.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(s string) string
		path string
	}{
		{"duplicate top-level key", func(s string) string {
			return strings.Replace(s, `"app_id": "org.example.notes",`, `"app_id": "org.example.notes", "app_id": "org.evil.notes",`, 1)
		}, ""},
		{"duplicate key by escape", func(s string) string {
			return strings.Replace(s, `"version": "1.4.0",`, `"version": "1.4.0", "\u0076ersion": "9.9.9",`, 1)
		}, ""},
		{"duplicate key in a capability", func(s string) string {
			return strings.Replace(s, `"side_effects": "destructive",`, `"side_effects": "destructive", "side_effects": "none",`, 1)
		}, "capabilities[1]"},
		{"number beyond 2^53", func(s string) string {
			return strings.Replace(s, `"undo_window_ms": 30000`, `"undo_window_ms": 9007199254740993`, 1)
		}, "capabilities[1].undo_window_ms"},
		{"number with lost decimals", func(s string) string {
			return strings.Replace(s, `"minimum": 1,`, `"minimum": 1.00000000000000001,`, 1)
		}, "capabilities[0].parameters.properties.limit.minimum"},
		{"non-finite number", func(s string) string {
			return strings.Replace(s, `"undo_window_ms": 30000`, `"undo_window_ms": 1e400`, 1)
		}, "capabilities[1].undo_window_ms"},
		{"NaN literal", func(s string) string {
			return strings.Replace(s, `"undo_window_ms": 30000`, `"undo_window_ms": NaN`, 1)
		}, "capabilities[1].undo_window_ms"},
		{"lone surrogate", func(s string) string {
			return strings.Replace(s, `"Search notes"`, `"Search \ud800 notes"`, 1)
		}, "capabilities[0].name"},
		{"invalid UTF-8", func(s string) string {
			return strings.Replace(s, `"Search notes"`, "\"Search \xff notes\"", 1)
		}, "capabilities[0].name"},
		{"trailing comma", func(s string) string {
			return strings.Replace(s, `"auth_level": "public"`, `"auth_level": "public",`, 1)
		}, "capabilities[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.edit(string(valid)))
			if bytes.Equal(data, valid) {
				t.Fatal("edit did not apply")
			}
			_, err := manifest.Parse(data)
			se, ok := err.(*manifest.SyntaxError)
			if !ok {
				t.Fatalf("Parse = %v, want a *SyntaxError", err)
			}
			if se.Path != tt.path {
				t.Errorf("path = %q, want %q (%v)", se.Path, tt.path, se)
			}
			for _, bad := range []string{"org.evil", "9.9.9", "9007199254740993", "1e400", "\xff"} {
				if strings.Contains(se.Error(), bad) {
					t.Errorf("error echoes the value: %v", se)
				}
			}
		})
	}
}

func TestExactNumbersAccepted(t *testing.T) {
	m := base(t)
	capAt(m, 1)["undo_window_ms"] = json.Number("9007199254740992")
	capAt(m, 0)["parameters"].(map[string]any)["properties"].(map[string]any)["limit"].(map[string]any)["maximum"] = json.Number("1e2")
	if ps := lint(t, encode(t, m)); len(ps) != 0 {
		t.Fatalf("exact numbers refused: %v", ps)
	}
}

func TestDefaults(t *testing.T) {
	doc, err := manifest.Load(encode(t, base(t)))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Manifest()
	if m.Kind != manifest.KindCapabilityProvider {
		t.Errorf("kind = %q", m.Kind)
	}
	search, del, restore := m.Capabilities[0], m.Capabilities[1], m.Capabilities[2]
	checks := []struct {
		name      string
		got, want any
	}{
		{"search auth", search.AuthLevel, manifest.AuthPublic},
		{"restore auth", restore.AuthLevel, manifest.AuthUser},
		{"search version", search.Version, "1.0"},
		{"search permission", search.Permission, search.ID},
		{"search risk", search.Risk, manifest.RiskLow},
		{"restore risk", restore.Risk, manifest.RiskMedium},
		{"delete risk", del.Risk, manifest.RiskHigh},
		{"delete reversibility", del.Reversibility, manifest.Reversible},
		{"restore reversibility", restore.Reversibility, manifest.Irreversible},
		{"search autonomy", search.AutonomyCeiling, manifest.AutonomyAct},
		{"search idempotency", search.Idempotency, manifest.IdempotencyNone},
		{"search timeout", search.TimeoutMS, int64(0)},
		{"search confirmation", search.ConfirmationRequired, false},
		{"search undo", search.UndoWindowMS == nil, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	m2 := base(t)
	delete(capAt(m2, 0), "side_effects")
	doc2, err := manifest.Load(encode(t, m2))
	if err != nil {
		t.Fatal(err)
	}
	if got := doc2.Manifest().Capabilities[0]; got.SideEffects != manifest.SideEffectSystem || got.Risk != manifest.RiskHigh {
		t.Errorf("undeclared side effects read as %q/%q, want the worst case", got.SideEffects, got.Risk)
	}
}

// No $ref, $schema or $id makes the validator reach a server: the test server counts requests.
func TestSchemasAreNeverFetched(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/schema+json")
		w.Write([]byte(`{"type":"object"}`))
	}))
	defer srv.Close()
	m := base(t)
	capAt(m, 0)["parameters"] = map[string]any{"$ref": srv.URL + "/p.json"}
	capAt(m, 1)["parameters"] = map[string]any{"$schema": srv.URL + "/dialect", "type": "object"}
	capAt(m, 2)["parameters"] = map[string]any{"$id": srv.URL + "/base.json", "properties": map[string]any{"a": map[string]any{"$ref": "other.json"}}}
	ps := lint(t, encode(t, m))
	if len(ps) != 3 {
		t.Errorf("want 3 problems, got %v", ps)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the schema compiler made %d requests", n)
	}
}
