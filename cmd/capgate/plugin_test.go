package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginWorkflow is the README's plugin walk-through on the example packages: a new plugin
// and a widening upgrade wait for approval, a narrowing applies, a rollback waits.
func TestPluginWorkflow(t *testing.T) {
	data := t.TempDir()
	env := []string{"CAPGATE_DATA_DIR=" + data}
	cfg := "../../examples/plugins/host.yaml"
	run := func(args ...string) result {
		return capgate(t, "", env, append([]string{"--config", cfg}, args...)...)
	}
	version := func() (string, bool) {
		r := run("plugin", "list", "--json")
		mustCode(t, r, 0)
		var f struct {
			Plugins map[string]struct{ Version string }
			Pending map[string]json.RawMessage
		}
		if err := json.Unmarshal([]byte(r.stdout), &f); err != nil {
			t.Fatalf("list --json: %v\n%s", err, r.stdout)
		}
		_, pending := f.Pending["org.example.kb"]
		return f.Plugins["org.example.kb"].Version, pending
	}

	r := run("plugin", "install", "../../examples/plugins/kb-1.0.0")
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, "verdict: widening") || !strings.Contains(r.stdout, "pending approval") {
		t.Fatalf("new plugin: %s", r.stdout)
	}
	if v, pending := version(); v != "" || !pending {
		t.Fatalf("after install: version %q pending %v", v, pending)
	}
	mustCode(t, run("plugin", "approve", "org.example.kb"), 0)
	if v, pending := version(); v != "1.0.0" || pending {
		t.Fatalf("after approve: version %q pending %v", v, pending)
	}

	r = run("plugin", "upgrade", "--json", "../../examples/plugins/kb-1.1.0")
	mustCode(t, r, 1)
	var out struct {
		Pending bool
		Diff    struct {
			Verdict string
			Changes []struct {
				Path     string
				Widening bool
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !out.Pending || out.Diff.Verdict != "widening" {
		t.Fatalf("widening upgrade: %s", r.stdout)
	}
	if v, _ := version(); v != "1.0.0" {
		t.Fatalf("a widening applied without approval: %s", v)
	}
	mustCode(t, run("plugin", "upgrade", "--approve", "../../examples/plugins/kb-1.1.0"), 0)

	r = run("plugin", "upgrade", "../../examples/plugins/kb-1.2.0")
	mustCode(t, r, 0)
	if v, _ := version(); v != "1.2.0" || !strings.Contains(r.stdout, "verdict: narrowing") {
		t.Fatalf("narrowing upgrade: version %s\n%s", v, r.stdout)
	}

	r = run("plugin", "upgrade", "../../examples/plugins/kb-1.0.0")
	mustCode(t, r, 1)
	if v, pending := version(); v != "1.2.0" || !pending || !strings.Contains(r.stdout, "rollback") {
		t.Fatalf("rollback: version %s pending %v\n%s", v, pending, r.stdout)
	}
	mustCode(t, run("plugin", "approve", "org.example.kb"), 0)
	if v, _ := version(); v != "1.0.0" {
		t.Fatalf("approved rollback: %s", v)
	}

	mustCode(t, run("plugin", "install", "../../examples/plugins/kb-1.1.0"), 1) // already installed
	mustCode(t, run("plugin", "remove", "org.example.kb"), 0)
	mustCode(t, run("plugin", "remove", "org.example.kb"), 1)
	mustCode(t, run("plugin", "upgrade", "../../examples/plugins/kb-1.1.0"), 1) // not installed
	if _, err := os.Stat(filepath.Join(data, "capgate.lock")); err != nil {
		t.Fatal(err)
	}
}

func TestManifestDiff(t *testing.T) {
	r := capgate(t, "", nil, "manifest", "diff", "--json", "../../examples/plugins/kb-1.1.0/manifest.json", "../../examples/plugins/kb-1.2.0/manifest.json")
	mustCode(t, r, 0)
	var out struct {
		Verdict string `json:"verdict"`
		Changes []struct {
			Path     string `json:"path"`
			Change   string `json:"change"`
			Widening bool   `json:"widening"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Verdict != "narrowing" || len(out.Changes) == 0 {
		t.Fatalf("narrowing diff: %s", r.stdout)
	}
	r = capgate(t, "", nil, "manifest", "diff", "../../examples/plugins/kb-1.0.0/manifest.json", "../../examples/plugins/kb-1.1.0/manifest.json")
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, "verdict: widening") || !strings.Contains(r.stdout, "mirror.kb.example.com") {
		t.Fatalf("widening diff: %s", r.stdout)
	}
	same := "../../examples/plugins/kb-1.0.0/manifest.json"
	r = capgate(t, "", nil, "manifest", "diff", "--json", same, same)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, `"verdict": "unchanged"`) {
		t.Fatalf("self diff: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", nil, "manifest", "diff", same), 2)
}

func TestLintChecksIntents(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "m.json")
	writeFile(t, bad, `{"app_id":"org.example.x","version":"1.0.0","manifest_version":"1.0","capabilities":[{"id":"x.org.example.x.get","name":"n","description":"d","category":"SYSTEM","parameters":{},"returns":{},
		"network_intents":[{"host":"2852039166","port":80},{"host":"api.example.com","port":443}],
		"filesystem_intents":[{"path":"/sandbox/../etc/shadow"},{"path":"/srv/data/x"}]}]}`)
	r := capgate(t, "", nil, "manifest", "lint", "--json", bad)
	mustCode(t, r, 1)
	for _, want := range []string{"capabilities[0].network_intents[0].host", "capabilities[0].filesystem_intents[0].path", "capabilities[0].filesystem_intents[1].path"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no problem at %s: %s", want, r.stdout)
		}
	}
	for _, secret := range []string{"2852039166", "shadow", "/srv/data"} {
		if strings.Contains(r.stdout, secret) {
			t.Errorf("lint echoes %q: %s", secret, r.stdout)
		}
	}
	// With another sandbox root, /srv/data/x is inside it.
	r = capgate(t, "", nil, "manifest", "lint", "--sandbox-root", "/srv/data", bad)
	if strings.Contains(r.stdout, "filesystem_intents[1]") {
		t.Errorf("--sandbox-root ignored: %s", r.stdout)
	}
}

// A private destination passes only under the host's signed policy.
func TestSignedPolicyAllowsPrivateDestinations(t *testing.T) {
	dir := t.TempDir()
	trusted := filepath.Join(dir, "trusted")
	key := filepath.Join(dir, "policy.key")
	mustCode(t, capgate(t, "", nil, "keygen", "--app-id", "capgate.policy", "--out", key, "--pub", filepath.Join(trusted, "capgate.policy.pub")), 0)
	m := filepath.Join(dir, "m.json")
	writeFile(t, m, `{"app_id":"org.example.x","version":"1.0.0","manifest_version":"1.0","capabilities":[{"id":"x.org.example.x.get","name":"n","description":"d","category":"SYSTEM","parameters":{},"returns":{},
		"network_intents":[{"host":"10.20.1.5","port":443}]}]}`)
	cfg := filepath.Join(dir, "host.yaml")
	writeFile(t, cfg, "trusted_dir: trusted\n")
	mustCode(t, capgate(t, "", nil, "--config", cfg, "manifest", "lint", m), 1)

	policy := filepath.Join(dir, "policy.json")
	writeFile(t, policy, `{"policy_version": "1.0", "allow_private": ["10.20.0.0/16"]}`)
	writeFile(t, cfg, "trusted_dir: trusted\npolicy_file: policy.json\n")
	r := capgate(t, "", nil, "--config", cfg, "manifest", "lint", m)
	mustCode(t, r, 2) // an unsigned policy is refused, not ignored
	if !strings.Contains(r.stderr, "not signed") {
		t.Fatalf("unsigned policy: %s", r.stderr)
	}
	mustCode(t, capgate(t, "", nil, "policy", "sign", "--key", key, "-o", policy, policy), 0)
	mustCode(t, capgate(t, "", nil, "policy", "verify", "--trusted-dir", trusted, policy), 0)
	mustCode(t, capgate(t, "", nil, "--config", cfg, "manifest", "lint", m), 0)

	// A policy edited after signing is refused.
	signed, _ := os.ReadFile(policy)
	writeFile(t, policy, strings.Replace(string(signed), "10.20.0.0/16", "10.0.0.0/8", 1))
	mustCode(t, capgate(t, "", nil, "policy", "verify", "--trusted-dir", trusted, policy), 1)
	mustCode(t, capgate(t, "", nil, "--config", cfg, "manifest", "lint", m), 2)
}

// With a store in the data folder (a gateway ran on it), what the operator does to plugins
// is in its audit log, before and after, naming the app and what came of it; with none (the
// workflow above), plugins are managed all the same.
func TestPluginChangesAreAudited(t *testing.T) {
	data := t.TempDir()
	env := []string{"CAPGATE_DATA_DIR=" + data}
	run := func(args ...string) result {
		return capgate(t, "", env, append([]string{"--config", "../../examples/plugins/host.yaml"}, args...)...)
	}
	mustCode(t, capgate(t, "", nil, "client", "add", "alice", "--data", data), 0) // creates the store
	mustCode(t, run("plugin", "install", "../../examples/plugins/kb-1.0.0"), 1)   // a widening, pending
	mustCode(t, run("plugin", "approve", "org.example.kb"), 0)
	mustCode(t, run("plugin", "remove", "org.example.kb"), 0)
	mustCode(t, run("plugin", "remove", "org.example.kb"), 1)
	var got []string
	for _, r := range auditRecords(t, data) {
		if !strings.HasPrefix(r.Action, "plugin.") {
			continue
		}
		if !strings.HasPrefix(r.ClientID, "cli") {
			t.Errorf("%s names %q, not the operator", r.Action, r.ClientID)
		}
		line := strings.Join([]string{r.Action, r.Kind, r.Result, r.Code, r.App}, "|")
		for _, s := range []string{"waits for approval", "applied"} {
			if r.Kind == "outcome" && strings.Contains(r.Explanation, s) {
				line += "|" + s
			}
		}
		got = append(got, line)
	}
	want := []string{
		"plugin.install|decision|install requested||",
		"plugin.install|outcome|success||org.example.kb|waits for approval",
		"plugin.approve|decision|approve requested||org.example.kb",
		"plugin.approve|outcome|success||org.example.kb|applied",
		"plugin.remove|decision|remove requested||org.example.kb",
		"plugin.remove|outcome|success||org.example.kb",
		"plugin.remove|decision|remove requested||org.example.kb",
		"plugin.remove|outcome|error|INVALID_REQUEST|org.example.kb",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("plugin records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
