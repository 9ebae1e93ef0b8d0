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
)

func TestLoadDirExample(t *testing.T) {
	r := loadRegistry(t)
	if got, want := r.Ports(), []string{"files.v1", "knowledge.v1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Ports = %v, want %v", got, want)
	}
	k, ok := r.Port("knowledge", 1)
	if !ok {
		t.Fatal("knowledge.v1 missing")
	}
	want := port.Method{Risk: manifest.RiskHigh, SideEffects: manifest.SideEffectDestructive, DryRun: true,
		Evidence: []string{"audit.purge"}, CompensatingAction: "restore"}
	if got := k.Methods["purge"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("purge = %+v, want %+v", got, want)
	}
	f, ok := r.Port("files", 1)
	if !ok || len(f.Methods) != 3 || f.Methods["delete"].SideEffects != manifest.SideEffectDestructive || f.Methods["delete"].Idempotent {
		t.Fatalf("files.v1 = %+v, %v", f, ok)
	}
	if _, ok := r.Port("knowledge", 2); ok {
		t.Fatal("knowledge.v2 found")
	}
	if !r.HasSuite("conformance/knowledge/v1/basic") || r.HasSuite("conformance/knowledge/v1/other") {
		t.Fatal("HasSuite")
	}
	// Port returns a copy: changing it leaves the floors as loaded.
	k.Methods["purge"] = port.Method{Risk: manifest.RiskLow}
	if again, _ := r.Port("knowledge", 1); again.Methods["purge"].Risk != manifest.RiskHigh {
		t.Fatal("Port handed out the registry's own map")
	}
	var nilReg *port.Registry
	if _, ok := nilReg.Port("knowledge", 1); ok || nilReg.HasSuite("conformance/knowledge/v1/basic") || nilReg.Ports() != nil {
		t.Fatal("a nil registry supports something")
	}
}

func TestLoadDirWithoutKitIndex(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "knowledge.v1.json", readExample(t, "knowledge.v1.json"))
	r, err := port.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.HasSuite("conformance/knowledge/v1/basic") {
		t.Fatal("an absent kit index lists a suite")
	}
}

const goodMethod = `{"risk": "low", "side_effects": "read", "idempotent": true, "dry_run": false}`

func TestLoadDirRefusals(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		file  string // the file the error names
		path  string // the field
		rule  string // a substring of the rule
		is    error  // a cause beside ErrInvalidDescriptor, if any
	}{
		{name: "unknown member in a method",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {"search": {"risk": "low", "side_effects": "read", "idempotent": true, "dry_run": false, "riks": "low"}}}`},
			file:  "k.v1.json", path: "methods.search", rule: "unknown member"},
		{name: "definitions not a list",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "definitions": "org.capgate.k.search@1.0", "methods": {"search": ` + goodMethod + `}}`},
			file:  "k.v1.json", path: "definitions", rule: "must be an array"},
		{name: "a definition that is no reference",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "definitions": ["org.capgate.k.search"], "methods": {"search": ` + goodMethod + `}}`},
			file:  "k.v1.json", path: "definitions[0]", rule: "name@major.minor"},
		{name: "a definition listed twice",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "definitions": ["org.capgate.k.search@1.0", "org.capgate.k.search@1.0"], "methods": {"search": ` + goodMethod + `}}`},
			file:  "k.v1.json", path: "definitions[1]", rule: "listed twice"},
		{name: "a definition not a string",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "definitions": [1], "methods": {"search": ` + goodMethod + `}}`},
			file:  "k.v1.json", path: "definitions[0]", rule: "must be a string"},
		{name: "unknown member at the root",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "version": "1.0", "methods": {"search": ` + goodMethod + `}}`},
			file:  "k.v1.json", path: "", rule: "unknown member"},
		{name: "duplicate key",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {"search": ` + goodMethod + `, "search": ` + goodMethod + `}}`},
			file:  "k.v1.json", path: "methods", rule: "duplicate", is: jcs.ErrDuplicateKey},
		{name: "duplicate key in YAML",
			files: map[string]string{"k.v1.yaml": "port: k.v1\nport: k.v1\nmethods: {}\n"},
			file:  "k.v1.yaml", rule: "duplicate"},
		{name: "name mismatch",
			files: map[string]string{"files.v1.json": `{"port": "knowledge.v1", "methods": {"search": ` + goodMethod + `}}`},
			file:  "files.v1.json", path: "port", rule: "must be the port the file is named for"},
		{name: "major mismatch",
			files: map[string]string{"k.v2.yaml": "port: k.v1\nmethods:\n  search: " + goodMethod + "\n"},
			file:  "k.v2.yaml", path: "port", rule: "must be the port the file is named for"},
		{name: "bad risk",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {"search": {"risk": "severe", "side_effects": "read", "idempotent": true, "dry_run": false}}}`},
			file:  "k.v1.json", path: "methods.search.risk", rule: "must be one of low, medium, high"},
		{name: "bad side effect (the plugin document's word)",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {"search": {"risk": "low", "side_effects": "DELETE", "idempotent": true, "dry_run": false}}}`},
			file:  "k.v1.json", path: "methods.search.side_effects", rule: "must be one of none, read"},
		{name: "idempotent not a boolean",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {"search": {"risk": "low", "side_effects": "read", "idempotent": "yes", "dry_run": false}}}`},
			file:  "k.v1.json", path: "methods.search.idempotent", rule: "must be a boolean"},
		{name: "dry_run left to a default",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {"search": {"risk": "low", "side_effects": "read", "idempotent": true}}}`},
			file:  "k.v1.json", path: "methods.search.dry_run", rule: "required"},
		{name: "compensating action not a method",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {"purge": {"risk": "high", "side_effects": "destructive", "idempotent": false, "dry_run": false, "compensating_action": "restore"}}}`},
			file:  "k.v1.json", path: "methods.purge.compensating_action", rule: "must name another method of this port"},
		{name: "compensating action itself",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {"purge": {"risk": "high", "side_effects": "destructive", "idempotent": false, "dry_run": false, "compensating_action": "purge"}}}`},
			file:  "k.v1.json", path: "methods.purge.compensating_action", rule: "must name another method of this port"},
		{name: "bad evidence name",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {"purge": {"risk": "high", "side_effects": "destructive", "idempotent": false, "dry_run": false, "evidence": ["Audit"]}}}`},
			file:  "k.v1.json", path: "methods.purge.evidence[0]", rule: "must be a record type"},
		{name: "bad method name",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {"Search": ` + goodMethod + `}}`},
			file:  "k.v1.json", path: "methods", rule: "method names must match"},
		{name: "no methods",
			files: map[string]string{"k.v1.json": `{"port": "k.v1", "methods": {}}`},
			file:  "k.v1.json", path: "methods", rule: "at least one method"},
		{name: "bad port spelling",
			files: map[string]string{"k.v1.json": `{"port": "k.v0", "methods": {"search": ` + goodMethod + `}}`},
			file:  "k.v1.json", path: "port", rule: "must be a port name and major"},
		{name: "file not named for a port",
			files: map[string]string{"Knowledge.json": `{"port": "knowledge.v1", "methods": {"search": ` + goodMethod + `}}`},
			file:  "Knowledge.json", rule: "a descriptor's name must be <port>.v<major>.json"},
		{name: "one port in two files",
			files: map[string]string{
				"k.v1.json": `{"port": "k.v1", "methods": {"search": ` + goodMethod + `}}`,
				"k.v1.yaml": "port: k.v1\nmethods:\n  search: " + goodMethod + "\n",
			},
			file: "k.v1.yaml", rule: "describes the same port as k.v1.json"},
		{name: "not JSON",
			files: map[string]string{"k.v1.json": `{"port": "k.v1",`},
			file:  "k.v1.json", rule: "", is: jcs.ErrSyntax},
		{name: "kit index entry is a path",
			files: map[string]string{"kits.json": `{"suites": ["conformance/knowledge/v1/basic", "conformance/../../etc/passwd"]}`},
			file:  "kits.json", path: "suites[1]", rule: "must be conformance/<port>/v<major>/<suite>"},
		{name: "kit index unknown member",
			files: map[string]string{"kits.json": `{"suites": [], "extra": true}`},
			file:  "kits.json", path: "", rule: "unknown member"},
		{name: "kit index duplicate suite",
			files: map[string]string{"kits.json": `{"suites": ["conformance/k/v1/basic", "conformance/k/v1/basic"]}`},
			file:  "kits.json", path: "suites[1]", rule: "duplicate suite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				write(t, dir, name, text)
			}
			r, err := port.LoadDir(dir)
			if err == nil {
				t.Fatalf("LoadDir accepted it: %v", r.Ports())
			}
			if !errors.Is(err, port.ErrInvalidDescriptor) {
				t.Errorf("error does not wrap ErrInvalidDescriptor: %v", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error does not wrap %v: %v", tt.is, err)
			}
			for _, fe := range fileErrors(err) {
				if fe.File == tt.file && fe.Path == tt.path && strings.Contains(fe.Rule, tt.rule) {
					if !strings.Contains(fe.Error(), tt.file) {
						t.Errorf("error text does not name the file: %q", fe.Error())
					}
					return
				}
			}
			t.Fatalf("no error at %s %q with %q in: %v", tt.file, tt.path, tt.rule, err)
		})
	}
}

// Other files are ignored; a descriptor reached by a symbolic link out of the folder is refused.
func TestLoadDirFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "README.md", "# ports")
	write(t, dir, "knowledge.v1.json~", "backup")
	if err := os.Mkdir(filepath.Join(dir, "old"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := port.LoadDir(dir); err != nil {
		t.Fatalf("LoadDir: %v", err)
	}

	outside := t.TempDir()
	write(t, outside, "knowledge.v1.json", readExample(t, "knowledge.v1.json"))
	if err := os.Symlink(filepath.Join(outside, "knowledge.v1.json"), filepath.Join(dir, "knowledge.v1.json")); err != nil {
		t.Skip("no symbolic links:", err)
	}
	_, err := port.LoadDir(dir)
	if fes := fileErrors(err); len(fes) != 1 || fes[0].File != "knowledge.v1.json" {
		t.Fatalf("a link out of the folder: %v", err)
	}
	if _, err := port.LoadDir(filepath.Join(dir, "missing")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing folder: %v", err)
	}
}

// Every problem of every file is reported at once.
func TestLoadDirReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.v1.json", `{"port": "a.v1", "methods": {"m": {"risk": "x", "side_effects": "y", "idempotent": 1, "dry_run": null}}}`)
	write(t, dir, "b.v1.json", `{"port": "c.v1", "methods": {"m": `+goodMethod+`}}`)
	got := map[string]bool{}
	for _, fe := range fileErrors(mustFail(port.LoadDir(dir))) {
		got[fe.File+" "+fe.Path] = true
	}
	for _, want := range []string{"a.v1.json methods.m.risk", "a.v1.json methods.m.side_effects", "a.v1.json methods.m.idempotent",
		"a.v1.json methods.m.dry_run", "b.v1.json port"} {
		if !got[want] {
			t.Errorf("missing %s in %v", want, got)
		}
	}
}

func TestNew(t *testing.T) {
	r := loadRegistry(t)
	k, _ := r.Port("knowledge", 1)
	f, _ := r.Port("files", 1)
	r2, err := port.New([]*port.Port{k, f}, []string{"conformance/knowledge/v1/basic"})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := r2.Port("knowledge", 1); !reflect.DeepEqual(again, k) {
		t.Fatalf("New changed the port: %+v", again)
	}
	bad := &port.Port{Name: "k", Major: 1, Methods: map[string]port.Method{"m": {Risk: "severe", SideEffects: manifest.SideEffectRead}}}
	if _, err := port.New([]*port.Port{bad}, nil); !errors.Is(err, port.ErrInvalidDescriptor) {
		t.Fatalf("New accepted a bad risk: %v", err)
	}
	if _, err := port.New([]*port.Port{k, k}, nil); err == nil {
		t.Fatal("New accepted a port twice")
	}
	if _, err := port.New(nil, []string{"/etc/passwd"}); err == nil {
		t.Fatal("New accepted a path as a suite")
	}
}

func TestDescriptorRoundTrip(t *testing.T) {
	for _, name := range []string{"knowledge.v1.json", "files.v1.yaml"} {
		p, err := port.ParseDescriptor([]byte(readExample(t, name)), strings.HasSuffix(name, ".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := port.ParseDescriptor(data, false)
		if err != nil {
			t.Fatalf("%s: reading back %s: %v", name, data, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("%s: round trip changed %+v into %+v", name, p, q)
		}
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/ports", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustFail(_ *port.Registry, err error) error { return err }

// fileErrors flattens a LoadDir error into its *FileErrors.
func fileErrors(err error) []*port.FileError {
	var out []*port.FileError
	var walk func(error)
	walk = func(err error) {
		if fe, ok := err.(*port.FileError); ok {
			out = append(out, fe)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// A port is the set of definitions it names: they are read in order, kept through the
// registry's copy, and written back by MarshalJSON.
func TestDescriptorDefinitions(t *testing.T) {
	p, err := port.ParseDescriptor([]byte(`{"port": "k.v1", "definitions": ["org.capgate.k.search@1.0", "org.capgate.k.fetch@1.2"], "methods": {"search": `+goodMethod+`}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Definitions, []string{"org.capgate.k.search@1.0", "org.capgate.k.fetch@1.2"}) {
		t.Fatalf("definitions %v", p.Definitions)
	}
	data, _ := json.Marshal(p)
	q, err := port.ParseDescriptor(data, false)
	if err != nil || !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip of %s: %+v %v", data, q, err)
	}
	reg, err := port.New([]*port.Port{p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := reg.Port("k", 1)
	c.Definitions[0] = "changed"
	if again, _ := reg.Port("k", 1); !reflect.DeepEqual(again.Definitions, p.Definitions) {
		t.Error("the registry handed out its own list")
	}
}
