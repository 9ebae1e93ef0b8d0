package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// signFix is the command every refusal of YAML where JSON is needed names.
const signFix = "capgate manifest sign -o manifest.json manifest.yaml"

const notesYAML = "../../manifest/testdata/notes.yaml"

// YAML is the authoring form: lint, diff and sign read it, and sign writes JSON; verify, app
// register and plugin install take JSON only and refuse the YAML with the command that signs
// it. The JSON that sign wrote passes each of them.
func TestYAMLIsAnAuthoringForm(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "ed25519.key")
	trusted := filepath.Join(dir, "trusted")
	mustCode(t, capgate(t, "", nil, "keygen", "--app-id", "org.example.notes", "--out", key,
		"--pub", filepath.Join(trusted, "org.example.notes.pub")), 0)

	// Authoring reads YAML, in any spelling of its extension.
	yml := filepath.Join(dir, "Notes.YML")
	body, err := os.ReadFile(notesYAML)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(yml, body, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{notesYAML, yml} {
		mustCode(t, capgate(t, "", nil, "manifest", "lint", src), 0)
		mustCode(t, capgate(t, "", nil, "manifest", "diff", src, notes), 0)
	}
	signed := filepath.Join(dir, "manifest.json")
	mustCode(t, capgate(t, "", nil, "manifest", "sign", "--key", key, "-o", signed, notesYAML), 0)

	// verify: a YAML file is a usage error naming the fix; YAML inside a .json file is a
	// manifest that does not parse, its problem naming the fix.
	for _, src := range []string{notesYAML, yml} {
		r := capgate(t, "", nil, "manifest", "verify", "--trusted-dir", trusted, src)
		mustCode(t, r, 2)
		if !strings.Contains(r.stderr, signFix) {
			t.Errorf("verify %s: stderr does not name the fix: %s", src, r.stderr)
		}
	}
	yamlInJSON := filepath.Join(dir, "yaml.json")
	if err := os.WriteFile(yamlInJSON, body, 0o644); err != nil {
		t.Fatal(err)
	}
	r := capgate(t, "", nil, "manifest", "verify", "--trusted-dir", trusted, yamlInJSON)
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, "invalid_manifest") || !strings.Contains(r.stdout, signFix) {
		t.Errorf("verify YAML in a .json file: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", nil, "manifest", "verify", "--trusted-dir", trusted, signed), 0)

	// app register: refused, naming the fix, and nothing registered; the JSON registers.
	data := filepath.Join(dir, "data")
	r = capgate(t, "", nil, "app", "register", notesYAML, "--data", data, "--trusted-dir", trusted)
	mustCode(t, r, 1)
	if !strings.Contains(r.stderr, signFix) {
		t.Errorf("register YAML: stderr does not name the fix: %s", r.stderr)
	}
	r = capgate(t, "", nil, "app", "register", signed, "--data", data, "--trusted-dir", trusted)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "registered") || !strings.Contains(r.stdout, "Tier 1") {
		t.Errorf("register the JSON: %s", r.stdout)
	}
}

// plugin install refuses a package that carries manifest.yaml, naming the fix, and leaves the
// lock empty; the example package with its manifest.json installs (pending approval).
func TestPluginInstallRefusesYAML(t *testing.T) {
	data := t.TempDir()
	env := []string{"CAPGATE_DATA_DIR=" + data}
	run := func(args ...string) result {
		return capgate(t, "", env, append([]string{"--config", "../../examples/plugins/host.yaml"}, args...)...)
	}
	example := "../../examples/plugins/kb-1.0.0"
	pkg := filepath.Join(t.TempDir(), "kb-1.0.0")
	if err := os.CopyFS(pkg, os.DirFS(example)); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(pkg, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(pkg, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "manifest.yaml"), y, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"install", "upgrade"} {
		r := run("plugin", verb, "--approve", pkg)
		mustCode(t, r, 1)
		if !strings.Contains(r.stderr, signFix) {
			t.Errorf("plugin %s of manifest.yaml: stderr does not name the fix: %s", verb, r.stderr)
		}
	}
	r := run("plugin", "list")
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "no plugins installed") {
		t.Fatalf("after refusals: %s", r.stdout)
	}
	r = run("plugin", "install", example)
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, "pending approval") {
		t.Fatalf("the JSON package: %s", r.stdout)
	}
}
