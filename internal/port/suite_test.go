package port_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

const (
	basic      = "conformance/knowledge/v1/basic"
	basicFile  = "conformance/knowledge/v1/basic.json"
	knowledge  = `{"port": "knowledge.v1", "methods": {"search": {"risk": "low", "side_effects": "read", "idempotent": true, "dry_run": false}, "reindex": {"risk": "medium", "side_effects": "write", "idempotent": false, "dry_run": true}}}`
	goodSuite  = `{"suite": "conformance/knowledge/v1/basic", "cases": [{"name": "finds", "method": "search", "params": {"query": "a"}, "expect": {"max_effect": "read"}}]}`
	kitsOfBase = `{"suites": ["conformance/knowledge/v1/basic"]}`
)

// suiteDir lays out a descriptor folder with the knowledge port, a kit index listing basic,
// and the suite files given, by path inside the folder.
func suiteDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "knowledge.v1.json", knowledge)
	write(t, dir, "kits.json", kitsOfBase)
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Dir(p), filepath.Base(p), text)
	}
	return dir
}

func load(t *testing.T, dir string) *port.Registry {
	t.Helper()
	r, err := port.LoadDir(dir)
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	return r
}

// The example host's suite loads, and its cases are the knowledge port's.
func TestSuiteExample(t *testing.T) {
	r := load(t, "../../examples/plugins/ports")
	s, err := r.Suite(basic)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != basic || s.Port != "knowledge" || s.Major != 1 || len(s.Cases) == 0 {
		t.Fatalf("suite = %+v", s)
	}
	for _, c := range s.Cases {
		if c.Method != "search" || c.Expect.MaxEffect != manifest.SideEffectRead || c.Expect.Error != "" {
			t.Errorf("case %s = %+v", c.Name, c)
		}
		var params map[string]any
		if err := json.Unmarshal(c.Params, &params); err != nil || params["query"] == "" {
			t.Errorf("case %s params %s", c.Name, c.Params)
		}
	}
	// Each call reads the file again and hands out a suite of its own.
	s.Cases[0].Name = "changed"
	if again, _ := r.Suite(basic); again.Cases[0].Name == "changed" {
		t.Fatal("Suite handed out a shared value")
	}
}

func TestSuiteParse(t *testing.T) {
	s, err := port.ParseSuite([]byte(`{"suite": "conformance/knowledge/v1/basic", "cases": [
		{"name": "finds", "method": "search", "params": {"z": 1, "a": ["x", {"b": true}]}, "expect": {"max_effect": "read"}},
		{"name": "no-params", "method": "search", "expect": {"error": "invalid_params", "max_effect": "none"}},
		{"name": "held", "method": "search", "expect": {"max_effect": "read", "reversibility": "compensable", "data_classes": ["memory.entries", "contacts"], "surface": ["strong_auth", "screen"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &port.Suite{Name: basic, Port: "knowledge", Major: 1, Cases: []port.Case{
		{Name: "finds", Method: "search", Params: json.RawMessage(`{"a":["x",{"b":true}],"z":1}`), Expect: port.Expect{MaxEffect: manifest.SideEffectRead}},
		{Name: "no-params", Method: "search", Params: json.RawMessage(`{}`), Expect: port.Expect{Error: sdk.CodeInvalidParams, MaxEffect: manifest.SideEffectNone}},
		{Name: "held", Method: "search", Params: json.RawMessage(`{}`), Expect: port.Expect{MaxEffect: manifest.SideEffectRead, Reversibility: manifest.Compensable,
			DataClasses: []string{"memory.entries", "contacts"}, Surface: []string{"strong_auth", "screen"}}},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := port.ParseSuite(data)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("round trip of %s: %+v, %v", data, back, err)
	}
}

func TestSuiteParseRefusals(t *testing.T) {
	c := func(body string) string {
		return `{"suite": "conformance/knowledge/v1/basic", "cases": [` + body + `]}`
	}
	const ok = `{"name": "a", "method": "search", "expect": {"max_effect": "read"}}`
	tests := []struct {
		name, text, path, rule string
		is                     error
	}{
		{"not JSON", `{"suite":`, "", "", jcs.ErrSyntax},
		{"not an object", `[]`, "", "must be an object", nil},
		{"unknown root member", `{"suite": "conformance/knowledge/v1/basic", "cases": [` + ok + `], "run": "rm -rf /"}`, "", "unknown member", nil},
		{"duplicate member", `{"suite": "conformance/knowledge/v1/basic", "suite": "conformance/knowledge/v1/basic", "cases": [` + ok + `]}`, "", "duplicate", jcs.ErrDuplicateKey},
		{"suite missing", `{"cases": [` + ok + `]}`, "suite", "required", nil},
		{"suite a path", `{"suite": "conformance/knowledge/v1/../x", "cases": [` + ok + `]}`, "suite", "must be conformance/", nil},
		{"cases missing", `{"suite": "conformance/knowledge/v1/basic"}`, "cases", "required", nil},
		{"cases empty", c(""), "cases", "at least one case", nil},
		{"cases not an array", `{"suite": "conformance/knowledge/v1/basic", "cases": {}}`, "cases", "must be an array", nil},
		{"too many cases", c(strings.TrimSuffix(strings.Repeat(ok+",", port.MaxCases+1), ",")), "cases", "more than", nil},
		{"unknown case member", c(`{"name": "a", "method": "search", "expect": {"max_effect": "read"}, "command": "x"}`), "cases[0]", "unknown member", nil},
		{"case name missing", c(`{"method": "search", "expect": {"max_effect": "read"}}`), "cases[0].name", "required", nil},
		{"case name spelled badly", c(`{"name": "A b", "method": "search", "expect": {"max_effect": "read"}}`), "cases[0].name", "must match", nil},
		{"case name twice", c(ok + "," + ok), "cases[1].name", "duplicate case name (first at cases[0])", nil},
		{"method missing", c(`{"name": "a", "expect": {"max_effect": "read"}}`), "cases[0].method", "required", nil},
		{"method a path", c(`{"name": "a", "method": "../search", "expect": {"max_effect": "read"}}`), "cases[0].method", "must be a method name", nil},
		{"params not an object", c(`{"name": "a", "method": "search", "params": "q", "expect": {"max_effect": "read"}}`), "cases[0].params", "must be an object", nil},
		{"params inexact number", c(`{"name": "a", "method": "search", "params": {"n": 9007199254740993}, "expect": {"max_effect": "read"}}`), "cases[0].params.n", "", jcs.ErrPrecision},
		{"expect missing", c(`{"name": "a", "method": "search"}`), "cases[0].expect", "required", nil},
		{"expect unknown member", c(`{"name": "a", "method": "search", "expect": {"max_effect": "read", "result": {}}}`), "cases[0].expect", "unknown member", nil},
		{"max effect missing", c(`{"name": "a", "method": "search", "expect": {}}`), "cases[0].expect.max_effect", "required", nil},
		{"max effect write", c(`{"name": "a", "method": "search", "expect": {"max_effect": "write"}}`), "cases[0].expect.max_effect", "must be none or read", nil},
		{"max effect unknown", c(`{"name": "a", "method": "search", "expect": {"max_effect": "READ"}}`), "cases[0].expect.max_effect", "must be none or read", nil},
		{"error timeout", c(`{"name": "a", "method": "search", "expect": {"error": "timeout", "max_effect": "read"}}`), "cases[0].expect.error", "must be one of", nil},
		{"error not a string", c(`{"name": "a", "method": "search", "expect": {"error": 1, "max_effect": "read"}}`), "cases[0].expect.error", "must be a string", nil},
		{"reversibility unknown", c(`{"name": "a", "method": "search", "expect": {"max_effect": "read", "reversibility": "mostly"}}`), "cases[0].expect.reversibility", "must be reversible, compensable or irreversible", nil},
		{"data classes not a list", c(`{"name": "a", "method": "search", "expect": {"max_effect": "read", "data_classes": "memory"}}`), "cases[0].expect.data_classes", "must be an array", nil},
		{"data class spelled badly", c(`{"name": "a", "method": "search", "expect": {"max_effect": "read", "data_classes": ["Memory"]}}`), "cases[0].expect.data_classes[0]", "must match", nil},
		{"data class twice", c(`{"name": "a", "method": "search", "expect": {"max_effect": "read", "data_classes": ["memory", "memory"]}}`), "cases[0].expect.data_classes[1]", "listed twice", nil},
		{"data class not a string", c(`{"name": "a", "method": "search", "expect": {"max_effect": "read", "data_classes": [1]}}`), "cases[0].expect.data_classes[0]", "must be a string", nil},
		{"surface unknown", c(`{"name": "a", "method": "search", "expect": {"max_effect": "read", "surface": ["telepathy"]}}`), "cases[0].expect.surface[0]", "must be screen, voice or strong_auth", nil},
		{"too deep", c(`{"name": "a", "method": "search", "params": {"a":` + strings.Repeat("[", port.MaxSuiteDepth) + strings.Repeat("]", port.MaxSuiteDepth) + `}, "expect": {"max_effect": "read"}}`), "", "", jcs.ErrTooDeep},
		{"too large", c(`{"name": "a", "method": "search", "params": {"q": "` + strings.Repeat("x", port.MaxSuiteBytes) + `"}, "expect": {"max_effect": "read"}}`), "", "larger than", jcs.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := port.ParseSuite([]byte(tt.text))
			if err == nil {
				t.Fatalf("accepted: %+v", s)
			}
			if !errors.Is(err, port.ErrInvalidDescriptor) {
				t.Errorf("does not wrap ErrInvalidDescriptor: %v", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("does not wrap %v: %v", tt.is, err)
			}
			for _, fe := range fileErrors(err) {
				if (fe.Path == tt.path || tt.is != nil && tt.path == "") && strings.Contains(fe.Rule, tt.rule) {
					return
				}
			}
			t.Fatalf("no error at %q with %q in: %v", tt.path, tt.rule, err)
		})
	}
}

// No spelling of a name reaches a file the kit index does not list: every one is refused as
// not found before anything is opened, even when a file lies where a path reading of it
// would lead.
func TestSuiteAdversarialNames(t *testing.T) {
	dir := suiteDir(t, map[string]string{basicFile: goodSuite,
		"conformance/knowledge/v1/other.json": strings.Replace(goodSuite, "/basic", "/other", 1)})
	write(t, filepath.Dir(dir), "secret.json", goodSuite) // beside the folder, outside it
	r := load(t, dir)
	for _, name := range []string{
		"",
		"conformance/knowledge/v1/other", // a file exists, but the index does not list it
		"conformance/knowledge/v1/basic.json",
		"conformance/knowledge/v1/basic/",
		"/conformance/knowledge/v1/basic",
		"./conformance/knowledge/v1/basic",
		"conformance/knowledge/v1/../v1/basic",
		"conformance/knowledge/v1/../../../secret",
		"../secret",
		"../../etc/passwd",
		"/etc/passwd",
		"conformance\\knowledge\\v1\\basic",
		"conformance/knowledge/v1/basic\x00",
		"conformance/knowledge/v1/%2e%2e",
		"conformance/knowledge/v1/Basic",
		"CONFORMANCE/knowledge/v1/basic",
		"conformance/knowledge/v01/basic",
		"conformance//v1/basic",
		"conformance/knowledge/v1/ba\u017fic", // a long s, which folds to s
		"conformance/knowledge/v1/basic ",
		"conformance/knowledge/v1/basic\n",
		"kits",
	} {
		s, err := r.Suite(name)
		if !errors.Is(err, port.ErrSuiteNotFound) {
			t.Errorf("%q: %+v, %v", name, s, err)
			continue
		}
		if name != "" && strings.Contains(err.Error(), name) {
			t.Errorf("%q: the error echoes the name: %v", name, err)
		}
	}
	if _, err := r.Suite(basic); err != nil {
		t.Fatalf("the listed suite: %v", err)
	}
	var nilReg *port.Registry
	if _, err := nilReg.Suite(basic); !errors.Is(err, port.ErrSuiteNotFound) {
		t.Fatalf("nil registry: %v", err)
	}
	k, _ := r.Port("knowledge", 1)
	built, err := port.New([]*port.Port{k}, []string{basic})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := built.Suite(basic); !errors.Is(err, port.ErrSuiteNotFound) {
		t.Fatalf("New's registry, which has no folder: %v", err)
	}
}

func TestSuiteFiles(t *testing.T) {
	big := `{"suite": "conformance/knowledge/v1/basic", "cases": [{"name": "a", "method": "search", "params": {"q": "` +
		strings.Repeat("x", port.MaxSuiteBytes) + `"}, "expect": {"max_effect": "read"}}]}`
	tests := []struct {
		name  string
		files map[string]string
		path  string
		rule  string
		is    error
	}{
		{name: "missing", files: nil, is: port.ErrSuiteNotFound},
		{name: "folder missing on the way", files: map[string]string{"conformance/README": "x"}, is: port.ErrSuiteNotFound},
		{name: "too large", files: map[string]string{basicFile: big}, rule: "larger than", is: jcs.ErrTooLarge},
		{name: "not JSON", files: map[string]string{basicFile: "suite: x"}, is: jcs.ErrSyntax},
		{name: "unknown member", files: map[string]string{basicFile: strings.Replace(goodSuite, `"cases"`, `"exec": 1, "cases"`, 1)}, path: "", rule: "unknown member"},
		{name: "listed under another name", files: map[string]string{basicFile: strings.Replace(goodSuite, "/basic", "/other", 1)}, path: "suite", rule: "must be the name the suite is listed under"},
		{name: "a method the port lacks", files: map[string]string{basicFile: strings.Replace(goodSuite, `"search"`, `"purge"`, 1)}, path: "cases[0].method", rule: "not a method of the host's copy of knowledge.v1"},
		{name: "a folder, not a file", files: map[string]string{basicFile + "/x": "x"}, rule: "must be a regular file"},
		{name: "a file where a folder should be", files: map[string]string{"conformance/knowledge": "x"}, rule: "conformance/knowledge must be a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := load(t, suiteDir(t, tt.files))
			s, err := r.Suite(basic)
			if err == nil {
				t.Fatalf("accepted: %+v", s)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("does not wrap %v: %v", tt.is, err)
			}
			if errors.Is(err, port.ErrSuiteNotFound) {
				return
			}
			if !errors.Is(err, port.ErrInvalidDescriptor) {
				t.Errorf("does not wrap ErrInvalidDescriptor: %v", err)
			}
			for _, fe := range fileErrors(err) {
				if fe.File == basicFile && (tt.rule == "" || fe.Path == tt.path && strings.Contains(fe.Rule, tt.rule)) {
					return
				}
			}
			t.Fatalf("no error in %s at %q with %q: %v", basicFile, tt.path, tt.rule, err)
		})
	}
}

// A suite file that is a symbolic link is refused, wherever it points, as is one reached
// through a linked folder: the suite is a file of the folder.
func TestSuiteSymlinks(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "basic.json", goodSuite)
	link := func(t *testing.T, target, name string) {
		t.Helper()
		if err := os.Symlink(target, name); err != nil {
			t.Skip("no symbolic links:", err)
		}
	}
	t.Run("file out of the folder", func(t *testing.T) {
		dir := suiteDir(t, map[string]string{"conformance/knowledge/v1/README": ""})
		link(t, filepath.Join(outside, "basic.json"), filepath.Join(dir, filepath.FromSlash(basicFile)))
		wantRefused(t, dir, "conformance/knowledge/v1/basic.json must not be a symbolic link")
	})
	t.Run("file inside the folder", func(t *testing.T) {
		dir := suiteDir(t, map[string]string{"conformance/knowledge/v1/real.json": goodSuite})
		link(t, "real.json", filepath.Join(dir, filepath.FromSlash(basicFile)))
		wantRefused(t, dir, "conformance/knowledge/v1/basic.json must not be a symbolic link")
	})
	t.Run("linked folder", func(t *testing.T) {
		dir := suiteDir(t, map[string]string{"conformance/knowledge/README": ""})
		link(t, outside, filepath.Join(dir, "conformance", "knowledge", "v1"))
		wantRefused(t, dir, "conformance/knowledge/v1 must not be a symbolic link")
	})
	t.Run("linked conformance folder", func(t *testing.T) {
		dir := suiteDir(t, nil)
		other := t.TempDir()
		if err := os.MkdirAll(filepath.Join(other, "knowledge", "v1"), 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(other, "knowledge", "v1"), "basic.json", goodSuite)
		link(t, other, filepath.Join(dir, "conformance"))
		wantRefused(t, dir, "conformance must not be a symbolic link")
	})
}

func wantRefused(t *testing.T, dir, rule string) {
	t.Helper()
	s, err := load(t, dir).Suite(basic)
	if err == nil {
		t.Fatalf("accepted: %+v", s)
	}
	for _, fe := range fileErrors(err) {
		if fe.File == basicFile && fe.Rule == rule {
			return
		}
	}
	t.Fatalf("want %q, got %v", rule, err)
}

func TestSplitSuite(t *testing.T) {
	p, major, s, ok := port.SplitSuite("conformance/acme/v12/smoke-test")
	if !ok || p != "acme" || major != 12 || s != "smoke-test" {
		t.Fatalf("SplitSuite = %q %d %q %v", p, major, s, ok)
	}
	if f, ok := port.SuiteFile("conformance/acme/v12/smoke-test"); !ok || f != "conformance/acme/v12/smoke-test.json" {
		t.Fatalf("SuiteFile = %q %v", f, ok)
	}
	for _, bad := range []string{"conformance/acme/v0/x", "conformance/acme/v1", "conformance/acme/v1/x/y", "conformance/a.b/v1/x", "conformance/acme/v1/.."} {
		if _, _, _, ok := port.SplitSuite(bad); ok {
			t.Errorf("SplitSuite(%q) accepted", bad)
		}
		if _, ok := port.SuiteFile(bad); ok {
			t.Errorf("SuiteFile(%q) accepted", bad)
		}
	}
}
