package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/providers/providertest"
)

// An app registered with --command runs out of process: the gateway starts its program and
// calls it, whether the app was registered before the gateway started (on the store) or while
// it serves (through it, started before the command returns); a program that reports another
// manifest is registered but not working, and says so. It runs in the sandbox (the default).
func TestAppRegisterCommand(t *testing.T) {
	bin := providertest.Build(t)
	man := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(man, providertest.Manifest(t), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCode(t, capgate(t, "", nil, "app", "register", man, "--data", t.TempDir(), "--", "x"), 2)

	for _, before := range []bool{true, false} {
		data := t.TempDir()
		env := []string{"CAPGATE_DATA_DIR=" + data}
		register := func(args ...string) result {
			return capgate(t, "", env, append([]string{"app", "register", man, "--alias", "echo", "--command", bin}, args...)...)
		}
		if before {
			mustCode(t, register(), 0)
		}
		rep := serveWith(t, data)
		if !before {
			mustCode(t, register(), 0)
		}
		key, agent := agentOn(t, env, rep.url)
		if listed := capabilitiesOf(t, rep.url, key); !strings.Contains(listed, "tools.org.example.echo.echo") {
			t.Errorf("the capabilities of a working provider are not listed: %s", listed)
		}
		// A Tier 2 app's call waits for the person: answered from the command line. The
		// provider runs in its sandbox, where the data folder is not to be seen.
		probe := filepath.Join(data, "probe")
		if err := os.WriteFile(probe, []byte("capgate's own"), 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan result, 1)
		go func() {
			done <- capgate(t, "", agent, "call", "echo", "echo", "--params", `{"text":"hello","look":"`+probe+`"}`, "--json")
		}()
		mustCode(t, capgate(t, "", env, "approvals", "approve", waitPendingEnv(t, env)), 0)
		r := <-done
		mustCode(t, r, 0)
		if !strings.Contains(r.stdout, `hello`) || !strings.Contains(r.stdout, `"success"`) || !strings.Contains(r.stdout, `"seen": false`) {
			t.Errorf("registered before the serve %v: the call answered %s", before, r.stdout)
		}
		rep.stop(t)
	}

	// A program that reports an effect above its declaration: the call fails, and the
	// program is stopped for good, which app list and the audit log say.
	data := t.TempDir()
	env := []string{"CAPGATE_DATA_DIR=" + data}
	rep := serveWith(t, data)
	mustCode(t, capgate(t, "", env, "app", "register", man, "--alias", "echo", "--command", bin, "--", "-overreach"), 0)
	_, agent := agentOn(t, env, rep.url)
	done := make(chan result, 1)
	go func() { done <- capgate(t, "", agent, "call", "echo", "save", "--params", `{"text":"x"}`, "--json") }()
	mustCode(t, capgate(t, "", env, "approvals", "approve", waitPendingEnv(t, env)), 0)
	r := <-done
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, "EXECUTION_FAILED") || !strings.Contains(r.stdout, "system effect, above") {
		t.Errorf("an overreaching call answered %s", r.stdout)
	}
	var listed string
	for range 100 {
		if listed = capgate(t, "", env, "app", "list").stdout; strings.Contains(listed, "not working") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(listed, "above its declaration") {
		t.Errorf("app list of a provider stopped for overreaching:\n%s", listed)
	}
	rep.stop(t)
	stops := 0
	for _, rec := range auditRecords(t, data) {
		if rec.Action == "provider.stop" && rec.Decision == "deny" && strings.Contains(rec.Explanation, "above its declaration") {
			stops++
		}
	}
	if stops != 1 {
		t.Errorf("%d provider.stop records, want 1", stops)
	}

	// A program that lies about its manifest: registered, never working.
	data = t.TempDir()
	env = []string{"CAPGATE_DATA_DIR=" + data}
	rep = serveWith(t, data)
	mustCode(t, capgate(t, "", env, "app", "register", man, "--alias", "echo", "--command", bin, "--", "-lie"), 0)
	key, agent := agentOn(t, env, rep.url)
	r = capgate(t, "", agent, "call", "echo", "echo", "--params", `{}`, "--json")
	mustCode(t, r, 1)
	// Its capabilities are not listed while it is not working.
	if listed := capabilitiesOf(t, rep.url, key); strings.Contains(listed, "org.example.echo") {
		t.Errorf("the capabilities of a provider that is not working are listed: %s", listed)
	}
	if !strings.Contains(r.stdout, `"status": "error"`) || !strings.Contains(r.stdout, "not working right now") {
		t.Errorf("a lying provider's call answered %s", r.stdout)
	}
	rep.stop(t)
	// The refusal is in the audit log, with why.
	var refused []string
	for _, rec := range auditRecords(t, data) {
		if rec.Action == "provider.start" {
			refused = append(refused, rec.Decision+"|"+rec.App+"|"+rec.Explanation)
		}
	}
	if len(refused) != 1 || !strings.HasPrefix(refused[0], "deny|org.example.echo|") || !strings.Contains(refused[0], "manifest other than the one installed") {
		t.Errorf("the refusal's records: %q", refused)
	}
}

// capabilitiesOf is GET /v1/capabilities of the gateway at url as the client with key.
func capabilitiesOf(t *testing.T, url, key string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/v1/capabilities", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/capabilities: HTTP %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// pluginPackage lays out a plugin package of the test provider: its program (or a script
// that runs it with args), SBOM and provenance, and its unsigned manifest with the digests.
func pluginPackage(t *testing.T, args ...string) string {
	t.Helper()
	pkg := t.TempDir()
	src, err := os.ReadFile(providertest.Build(t))
	if err != nil {
		t.Fatal(err)
	}
	prog := "provider"
	if len(args) > 0 {
		prog = "real-provider"
		script := "#!/bin/sh\nexec ./real-provider " + strings.Join(args, " ") + "\n"
		if err := os.WriteFile(filepath.Join(pkg, "provider"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string][]byte{prog: src, "sbom.spdx.json": []byte(`{"spdxVersion":"SPDX-2.3"}`), "provenance.json": []byte(`{"builder":"test"}`)} {
		mode := os.FileMode(0o644)
		if name == prog {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(pkg, name), body, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pkg, "manifest.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := capgate(t, "", nil, "plugin", "digest", pkg)
	mustCode(t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	files := map[string]string{}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) == 2 {
			files[f[1]] = f[0]
		}
	}
	var m map[string]any
	if err := json.Unmarshal(providertest.Manifest(t), &m); err != nil {
		t.Fatal(err)
	}
	m["kind"] = "capability_provider"
	m["digest"] = strings.TrimSpace(lines[0])
	m["sbom_ref"] = map[string]string{"path": "sbom.spdx.json", "digest": files["sbom.spdx.json"]}
	m["provenance_ref"] = map[string]string{"path": "provenance.json", "digest": files["provenance.json"]}
	raw, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(pkg, "manifest.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return pkg
}

// An installed plugin runs: the gateway starts the program of the package kept in the data
// folder (not the source, which is gone), in its sandbox, calls it, and shows it working;
// removed, it stops and its capabilities vanish. A plugin whose program lies about its
// manifest is installed but not working, and plugin list and the audit log say why.
func TestInstalledPluginRuns(t *testing.T) {
	data := t.TempDir()
	env := []string{"CAPGATE_DATA_DIR=" + data}
	pkg := pluginPackage(t)
	// The host's credential catalog names the test provider's intent.
	cfg := filepath.Join(t.TempDir(), "host.yaml")
	if err := os.WriteFile(cfg, []byte("credentials: [echo.api]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := capgate(t, "", env, "--config", cfg, "plugin", "install", pkg, "--allow-tier2-unsafe", "--approve")
	mustCode(t, r, 0)
	if err := os.RemoveAll(pkg); err != nil {
		t.Fatal(err)
	}
	rep := serveWith(t, data)
	key, agent := agentOn(t, env, rep.url)
	if listed := capabilitiesOf(t, rep.url, key); !strings.Contains(listed, "tools.org.example.echo.echo") {
		t.Fatalf("the installed plugin's capabilities are not listed: %s", listed)
	}
	done := make(chan result, 1)
	go func() {
		done <- capgate(t, "", agent, "call", "echo", "echo", "--params", `{"text":"from a plugin","credential":"scm.github.api","look":"`+filepath.Join(data, "capgate.lock")+`"}`, "--json")
	}()
	mustCode(t, capgate(t, "", env, "approvals", "approve", waitPendingEnv(t, env)), 0)
	r = <-done
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "from a plugin") || !strings.Contains(r.stdout, `"seen": false`) || !strings.Contains(r.stdout, `"hostname": "sandbox"`) ||
		!strings.Contains(r.stdout, "does not declare this credential intent") {
		t.Errorf("the plugin's call answered %s", r.stdout)
	}
	l := capgate(t, "", env, "plugin", "list")
	mustCode(t, l, 0)
	if !strings.Contains(l.stdout, "working") {
		t.Errorf("plugin list does not show it working:\n%s", l.stdout)
	}

	// Removed: stopped, its capabilities gone, its kept package removed.
	mustCode(t, capgate(t, "", env, "plugin", "remove", "org.example.echo"), 0)
	gone := false
	for range 100 {
		if !strings.Contains(capabilitiesOf(t, rep.url, key), "org.example.echo") {
			gone = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !gone {
		t.Error("the capabilities of a removed plugin are still listed")
	}
	for range 100 {
		if _, err := os.Stat(filepath.Join(data, "packages", "org.example.echo")); os.IsNotExist(err) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(data, "packages", "org.example.echo")); !os.IsNotExist(err) {
		t.Errorf("the removed plugin's package is kept: %v", err)
	}

	// A program that lies about its manifest, installed while the gateway serves.
	mustCode(t, capgate(t, "", env, "--config", cfg, "plugin", "install", pluginPackage(t, "-lie"), "--allow-tier2-unsafe", "--approve"), 0)
	var why string
	for range 100 {
		l = capgate(t, "", env, "plugin", "list")
		if strings.Contains(l.stdout, "not working") {
			why = l.stdout
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(why, "manifest other than the one installed") {
		t.Errorf("plugin list of a lying plugin:\n%s", l.stdout)
	}
	if a := capgate(t, "", env, "app", "list"); !strings.Contains(a.stdout, "org.example.echo") || !strings.Contains(a.stdout, "not working") ||
		!strings.Contains(a.stdout, "manifest other than the one installed") {
		t.Errorf("app list of a lying plugin:\n%s", a.stdout)
	}
	if listed := capabilitiesOf(t, rep.url, key); strings.Contains(listed, "org.example.echo") {
		t.Errorf("a lying plugin's capabilities are listed: %s", listed)
	}
	rep.stop(t)
	var refused, creds []string
	for _, rec := range auditRecords(t, data) {
		switch rec.Action {
		case "provider.start":
			refused = append(refused, rec.Decision+"|"+rec.Explanation)
		case "credential.request":
			creds = append(creds, rec.Decision+"|"+rec.Capability+"|"+rec.Explanation)
		}
	}
	if len(refused) != 1 || !strings.Contains(refused[0], "manifest other than the one installed") {
		t.Errorf("the refusal's records: %q", refused)
	}
	if len(creds) != 1 || !strings.HasPrefix(creds[0], "deny|tools.org.example.echo.echo|") || strings.Contains(creds[0], "scm.github") {
		t.Errorf("the refused credential's records: %q", creds)
	}
}

// A provider that succeeds without emitting the evidence its capability declares: the call
// answers, and its outcome is on record as PARTIAL, naming what is missing; with the evidence,
// it is a success.
func TestProviderWithoutEvidenceIsPartial(t *testing.T) {
	bin := providertest.Build(t)
	man := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(man, providertest.Manifest(t), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-no-evidence", "-print"} {
		data := t.TempDir()
		env := []string{"CAPGATE_DATA_DIR=" + data}
		mustCode(t, capgate(t, "", env, "app", "register", man, "--alias", "echo", "--command", bin, "--", flag), 0)
		rep := serveWith(t, data)
		_, agent := agentOn(t, env, rep.url)
		done := make(chan result, 1)
		go func() { done <- capgate(t, "", agent, "call", "echo", "save", "--params", `{"text":"x"}`, "--json") }()
		mustCode(t, capgate(t, "", env, "approvals", "approve", waitPendingEnv(t, env)), 0)
		mustCode(t, <-done, 0)
		rep.stop(t)
		var outcomes []string
		for _, rec := range auditRecords(t, data) {
			if rec.Kind == "outcome" && rec.Capability == "tools.org.example.echo.save" && rec.Action == "execute" {
				outcomes = append(outcomes, rec.Result+"|"+rec.Explanation)
			}
		}
		want := "success|"
		if flag == "-no-evidence" {
			want = "PARTIAL|the call did not emit its declared evidence: echo.saved"
		}
		if len(outcomes) != 1 || !strings.HasPrefix(outcomes[0], want) {
			t.Errorf("%s: the outcome is on record as %q, want %q", flag, outcomes, want)
		}
	}
}
