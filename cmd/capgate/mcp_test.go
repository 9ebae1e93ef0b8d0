package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// `capgate mcp` as an MCP client launches it: the real binary as a child process over stdio,
// through the SDK's CommandTransport, forwarding to a real `capgate serve` child.
func TestMCPStdio(t *testing.T) {
	data := t.TempDir()
	url := startServe(t, data)
	r := capgate(t, "", nil, "client", "add", "agent", "--data", data)
	mustCode(t, r, 0)
	key := strings.TrimSpace(r.stdout)
	ctx := context.Background()

	cmd := exec.Command(binary, "mcp", "--server", url)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "CAPGATE_CLIENT_KEY="+key)
	cmd.Stderr = os.Stderr
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	names := map[string]bool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tool.Name] = true
		if strings.Contains(tool.Description, key) {
			t.Errorf("%s: the client key in a description", tool.Name)
		}
	}
	for _, n := range []string{"calc__compute", "capgate__request_capability", "capgate__undo", "capgate__explain"} {
		if !names[n] {
			t.Errorf("%s not listed over stdio", n)
		}
	}
	call := func(name string, args any) *mcpsdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := json.Marshal(res)
		if strings.Contains(string(b), "cgt1.") || strings.Contains(string(b), key) {
			t.Errorf("%s: a token or the client key in the result: %s", name, b)
		}
		return res
	}
	// A low-risk read of a Tier 1 app needs no token: explain says so, and it runs.
	ex := call("capgate__explain", map[string]any{"app": "calc", "method": "compute", "params": map[string]any{"expression": "1"}})
	if text := ex.Content[0].(*mcpsdk.TextContent).Text; ex.IsError || !strings.Contains(text, `"outcome":"allow"`) || !strings.Contains(text, "so it needs none") {
		t.Errorf("explain: %+v", ex.Content[0])
	}
	if res := call("calc__compute", map[string]any{"expression": "6*7"}); res.IsError {
		t.Errorf("compute without a token: %+v", res.Content[0])
	}
	// A write would wait for the person; explain says so without asking.
	ex = call("capgate__explain", map[string]any{"app": "settings", "method": "set_setting", "params": map[string]any{"category": "appearance", "key": "theme", "value": "dark"}})
	if ex.IsError || !strings.Contains(ex.Content[0].(*mcpsdk.TextContent).Text, `"outcome":"ask"`) {
		t.Errorf("explain a write: %+v", ex.Content[0])
	}
	if res := call("capgate__request_capability", map[string]any{"capabilities": []string{"app.calc.compute"}, "duration": 60}); res.IsError {
		t.Fatalf("request: %+v", res.Content[0])
	}
	res := call("calc__compute", map[string]any{"expression": "123 + 456 * 2"})
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(b), `"result":1035`) {
		t.Fatalf("compute: %s %+v", b, res.Content)
	}
}

// With a key the gateway does not know, `capgate mcp` says so and exits 1.
func TestMCPStdioUnknownKey(t *testing.T) {
	data := t.TempDir()
	url := startServe(t, data)
	r := capgate(t, "", []string{"CAPGATE_SERVER=" + url, "CAPGATE_CLIENT_KEY=cgk_nope"}, "mcp")
	mustCode(t, r, 1)
	if !strings.Contains(r.stderr, "cannot connect to the gateway") || r.stdout != "" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	mustCode(t, capgate(t, "", []string{"CAPGATE_SERVER=" + url}, "mcp"), 2)
}
