package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Published MCP servers of each revision behind a real `capgate serve` (issue 19, items 4
// and 6): @takescake/1password-mcp, built on the TypeScript SDK v2, speaks 2026-07-28 over
// stdio (discovered, no handshake); @modelcontextprotocol/server-everything, on the
// TypeScript SDK v1, speaks the handshake revisions only, so capgate falls back to
// 2025-11-25. `toolserver add` and `list` say which revision each speaks; the 2026-07-28
// server's tools are pinned like any other's and listed again unchanged on another
// connection (nothing to accept), and a call of one runs through the person's consent and
// comes back labelled untrusted. (Its password tool needs no 1Password account: it
// generates the password itself.)
func TestPublishedServersOfEachRevision(t *testing.T) {
	opEntry, node := npmPart(t, "@takescake/1password-mcp/bin/1password-mcp.js")
	evEntry, _ := npmPart(t, "@modelcontextprotocol/server-everything/dist/index.js")
	data := t.TempDir()
	key := strings.TrimSpace(capgate(t, "", nil, "client", "add", "agent", "--data", data).stdout)
	if !strings.HasPrefix(key, "cgk_") {
		t.Fatalf("client add printed %q", key)
	}
	url := startServe(t, data)
	env := []string{"CAPGATE_SERVER=" + url, "CAPGATE_CLIENT_KEY=" + key}
	modules, _ := filepath.Abs(filepath.Join(npmDir, "node_modules"))

	r := capgate(t, "", nil, "toolserver", "add", "op", "--data", data, "--bind", modules, "--", node, opEntry)
	mustCode(t, r, 0)
	for _, want := range []string{"MCP revision: 2026-07-28 (stateless, discovered)", "tool.mcp.op.password_generate"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("toolserver add of the 2026-07-28 server does not say %q:\n%s", want, r.stdout)
		}
	}
	r = capgate(t, "", nil, "toolserver", "add", "everything", "--data", data, "--bind", modules, "--", node, evEntry, "stdio")
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "MCP revision: 2025-11-25 (handshake)") {
		t.Fatalf("toolserver add of server-everything does not say it fell back to 2025-11-25:\n%s", r.stdout)
	}

	r = capgate(t, "", nil, "toolserver", "list", "--data", data, "--json")
	mustCode(t, r, 0)
	var list []struct {
		Name     string
		Revision struct {
			Protocol  string `json:"protocol"`
			Stateless bool   `json:"stateless"`
		} `json:"revision"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err, r.stdout)
	}
	got := map[string]string{}
	for _, s := range list {
		got[s.Name] = s.Revision.Protocol
		if s.Revision.Stateless != (s.Revision.Protocol == "2026-07-28") {
			t.Errorf("%s: stateless %v at %s", s.Name, s.Revision.Stateless, s.Revision.Protocol)
		}
	}
	if got["op"] != "2026-07-28" || got["everything"] != "2025-11-25" {
		t.Fatalf("list --json revisions: %v\n%s", got, r.stdout)
	}

	// The running gateway connects to both and offers the 2026-07-28 server's pinned tools.
	var listed bool
	for i := 0; i < 100 && !listed; i++ {
		req, _ := http.NewRequest("GET", url+"/v1/capabilities", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var caps struct{ Capabilities []struct{ ID string } }
		json.NewDecoder(resp.Body).Decode(&caps)
		resp.Body.Close()
		listed = slices.ContainsFunc(caps.Capabilities, func(c struct{ ID string }) bool { return c.ID == "tool.mcp.op.password_generate" })
		if !listed {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if !listed {
		t.Fatal("the gateway does not list the 2026-07-28 server's password_generate tool")
	}

	// A call asks the person (the tool's side effects count as the worst case until
	// classified); approved, it runs on the 2026-07-28 session and its output comes back
	// labelled untrusted.
	r = answered(t, data, "call", "approve", func() result {
		return capgate(t, "", env, "call", "op", "password_generate", "--params", `{"length":24,"includeSymbols":false}`, "--json")
	})
	mustCode(t, r, 0)
	var resp struct {
		Body struct {
			Status string `json:"status"`
			Result struct {
				Untrusted bool   `json:"untrusted_output"`
				Server    string `json:"server"`
				Tool      string `json:"tool"`
				Content   []struct{ Type, Text string }
			} `json:"result"`
		} `json:"body"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil {
		t.Fatalf("call --json printed %q: %v", r.stdout, err)
	}
	out := resp.Body.Result
	if resp.Body.Status != "success" || !out.Untrusted || out.Server != "op" || out.Tool != "password_generate" || len(out.Content) != 1 {
		t.Fatalf("password_generate: %s", r.stdout)
	}
	var pw struct{ Password string }
	if err := json.Unmarshal([]byte(out.Content[0].Text), &pw); err != nil || len(pw.Password) != 24 {
		t.Errorf("password_generate's output %q is not a 24-character password", out.Content[0].Text)
	}

	// Another connection lists the same definitions: every pin holds, nothing to accept.
	r = capgate(t, "", nil, "toolserver", "accept", "op", "--dry-run", "--data", data)
	mustCode(t, r, 0)
	if strings.Contains(r.stdout, ": changed") || strings.Contains(r.stdout, ": new") || !strings.Contains(r.stdout, "MCP revision: 2026-07-28") {
		t.Errorf("accept --dry-run of the 2026-07-28 server:\n%s", r.stdout)
	}
}
