package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/examples/plugins/kb/kbtest"
)

// examplePorts copies the example host's ports folder to a new one, with the knowledge port's
// basic suite replaced by suite when it is not "", and returns a host configuration using it.
func examplePorts(t *testing.T, suite string) string {
	t.Helper()
	dir := t.TempDir()
	ports := filepath.Join(dir, "ports")
	if err := os.CopyFS(ports, os.DirFS("../../examples/plugins/ports")); err != nil {
		t.Fatal(err)
	}
	if suite != "" {
		if err := os.WriteFile(filepath.Join(ports, "conformance", "knowledge", "v1", "basic.json"), []byte(suite), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	trusted, _ := filepath.Abs("../../examples/trusted")
	cfg := filepath.Join(dir, "host.yaml")
	body := "trusted_dir: " + trusted + "\nports_dir: ports\ncredentials: [kb.search.api]\nenvironments: [dev, staging, prod]\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// An install runs the conformance suites of the package's capabilities against its program,
// started from the kept package in its sandbox: a failing case refuses the install, naming
// the case, and the lock is unchanged; a passing suite installs, the example knowledge base
// is called through the IPC API and MCP, and plugin test runs its suite again, the results
// shown by plugin list.
func TestPluginConformance(t *testing.T) {
	pkg := kbtest.Build(t)
	data := t.TempDir()
	env := []string{"CAPGATE_DATA_DIR=" + data}

	failing := `{"suite":"conformance/knowledge/v1/basic","cases":[
	 {"name":"search-answers-with-hits","method":"search","params":{"query":"onboarding"},"expect":{"max_effect":"read"}},
	 {"name":"search-refuses-a-known-word","method":"search","params":{"query":"capgate"},"expect":{"error":"invalid_params","max_effect":"read"}}]}`
	cfg := examplePorts(t, failing)
	r := capgate(t, "", env, "--config", cfg, "plugin", "install", "--approve", pkg)
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, "search-refuses-a-known-word") || !strings.Contains(r.stdout, "refused; the lock is unchanged") {
		t.Errorf("a failing suite's install said:\n%s", r.stdout)
	}
	if l := capgate(t, "", env, "--config", cfg, "plugin", "list"); !strings.Contains(l.stdout, "no plugins installed") {
		t.Errorf("a refused install changed the lock:\n%s", l.stdout)
	}

	cfg = examplePorts(t, "")
	r = capgate(t, "", env, "--config", cfg, "plugin", "install", "--approve", pkg)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "conformance kb.org.example.kb.search: passed") {
		t.Errorf("a passing suite's install said:\n%s", r.stdout)
	}
	rep := serveWith(t, data, "--config", cfg)
	defer rep.stop(t)
	// Called through the IPC API and through MCP: a Tier 1 read needs no token.
	_, agent := agentOn(t, env, rep.url)
	r = capgate(t, "", agent, "call", "kb", "search", "--params", `{"query":"lockfile"}`, "--json")
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, `"plugin-lockfile"`) {
		t.Errorf("search through the IPC API answered %s", r.stdout)
	}
	mcpCall(t, agent, rep.url, "kb__read", map[string]any{"id": "plugin-lockfile"}, "plugin-lockfile")
	r = capgate(t, "", env, "--config", cfg, "plugin", "test", "org.example.kb")
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "kb.org.example.kb.search: passed") {
		t.Errorf("plugin test said:\n%s", r.stdout)
	}
	l := capgate(t, "", env, "--config", cfg, "plugin", "list")
	if !strings.Contains(l.stdout, "test kb.org.example.kb.search: passed") {
		t.Errorf("plugin list does not show the test status:\n%s", l.stdout)
	}
	mustCode(t, capgate(t, "", env, "--config", cfg, "plugin", "test", "org.example.nope"), 1)
}

// mcpCall calls the tool name with args through capgate mcp as the agent of env, and checks
// that it succeeded with want in its result.
func mcpCall(t *testing.T, env []string, url, name string, args any, want string) {
	t.Helper()
	ctx := context.Background()
	cmd := exec.Command(binary, "mcp", "--server", url)
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir()), env...)
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test-agent", Version: "1"}, nil).Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, _ := json.Marshal(res)
	if res.IsError || !strings.Contains(string(b), want) {
		t.Errorf("%s through MCP: %s", name, b)
	}
}
