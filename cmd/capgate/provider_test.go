package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

	// A program that lies about its manifest: registered, never working.
	data := t.TempDir()
	env := []string{"CAPGATE_DATA_DIR=" + data}
	rep := serveWith(t, data)
	mustCode(t, capgate(t, "", env, "app", "register", man, "--alias", "echo", "--command", bin, "--", "-lie"), 0)
	key, agent := agentOn(t, env, rep.url)
	r := capgate(t, "", agent, "call", "echo", "echo", "--params", `{}`, "--json")
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
