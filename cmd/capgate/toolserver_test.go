package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/audit"
)

// toolserver add, list, accept and remove, against the toolserver package's test MCP
// server over stdio.
func TestToolServerCommands(t *testing.T) {
	server := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", server, "github.com/capgate/capgate/internal/toolserver/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("build the test MCP server: %v\n%s", err, out)
	}
	data := t.TempDir()
	control := filepath.Join(t.TempDir(), "control")
	if err := os.WriteFile(control, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mustCode(t, capgate(t, "", nil, "client", "add", "alice", "--data", data), 0) // creates the store

	mustCode(t, capgate(t, "", nil, "toolserver", "add", "Bad_Name", "--data", data, "--", server), 2)
	mustCode(t, capgate(t, "", nil, "toolserver", "add", "srv", "--data", data), 2)
	mustCode(t, capgate(t, "", nil, "toolserver", "add", "srv", "--data", data, "--env", "CAPGATE_CLIENT_KEY", "--", server), 2)

	r := capgate(t, "", nil, "toolserver", "add", "srv", "--data", data, "--bind", filepath.Dir(control), "--", server, "-control", control)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "2 tools accepted") || !strings.Contains(r.stdout, "tool.mcp.srv.echo") ||
		!strings.Contains(r.stdout, "MCP revision: 2026-07-28 (stateless, discovered)") {
		t.Errorf("add printed:\n%s", r.stdout)
	}
	mustCode(t, capgate(t, "", nil, "toolserver", "add", "srv", "--data", data, "--", server), 1)

	r = capgate(t, "", nil, "toolserver", "list", "--data", data, "--json")
	mustCode(t, r, 0)
	var list []struct {
		Name     string `json:"name"`
		AppID    string `json:"app_id"`
		Revision struct {
			Protocol  string `json:"protocol"`
			Stateless bool   `json:"stateless"`
		} `json:"revision"`
		Tools []struct {
			Tool, Capability, Hash string
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err, r.stdout)
	}
	if len(list) != 1 || list[0].AppID != "mcp.srv" || len(list[0].Tools) != 2 || !strings.HasPrefix(list[0].Tools[0].Hash, "sha256:") ||
		list[0].Revision.Protocol != "2026-07-28" || !list[0].Revision.Stateless {
		t.Fatalf("list --json: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", nil, "toolserver", "accept", "srv", "echo", "--data", data), 1) // unchanged

	if err := os.WriteFile(control, []byte("mutate"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = capgate(t, "", nil, "toolserver", "accept", "srv", "--dry-run", "--data", data)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "echo: changed") || !strings.Contains(r.stdout, "+ /description:") || !strings.Contains(r.stdout, "dry run") {
		t.Errorf("accept --dry-run printed:\n%s", r.stdout)
	}
	r = capgate(t, "", nil, "toolserver", "accept", "srv", "--data", data)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "accepted and pinned 1 tools") {
		t.Errorf("accept printed:\n%s", r.stdout)
	}
	r = capgate(t, "", nil, "toolserver", "list", "--data", data, "--json")
	if strings.Contains(r.stdout, list[0].Tools[0].Hash) == strings.Contains(r.stdout, list[0].Tools[1].Hash) {
		t.Errorf("after accept, exactly one pin should have changed:\n%s", r.stdout)
	}
	// Each add and accept, not the dry run, is in the audit log by the operator, before and
	// after; the refused add of a name taken too.
	kindResultCodeApp := func(rec audit.Record) string { return rec.Kind + "|" + rec.Result + "|" + rec.Code + "|" + rec.App }
	adds := recordsOf(t, data, "toolserver.add", kindResultCodeApp)
	if want := "decision|add requested||mcp.srv outcome|success||mcp.srv decision|add requested||mcp.srv outcome|error|INVALID_REQUEST|mcp.srv"; adds != want {
		t.Errorf("add records:\n%s\nwant:\n%s", adds, want)
	}
	accepts := recordsOf(t, data, "toolserver.accept", func(rec audit.Record) string {
		if !strings.HasPrefix(rec.ClientID, "cli") {
			t.Errorf("an accept names %q, not the operator", rec.ClientID)
		}
		return kindResultCodeApp(rec)
	})
	if want := "decision|accept requested||mcp.srv outcome|error|INVALID_REQUEST|mcp.srv decision|accept requested||mcp.srv outcome|success||mcp.srv"; accepts != want {
		t.Errorf("accept records:\n%s\nwant:\n%s", accepts, want)
	}
	mustCode(t, capgate(t, "", nil, "toolserver", "remove", "srv", "--data", data), 0)
	mustCode(t, capgate(t, "", nil, "toolserver", "remove", "srv", "--data", data), 1)
	removes := recordsOf(t, data, "toolserver.remove", func(rec audit.Record) string { return rec.Kind + "|" + rec.Result + "|" + rec.Code })
	if want := "decision|remove requested| outcome|success| decision|remove requested| outcome|error|INVALID_REQUEST"; removes != want {
		t.Errorf("remove records: %s, want %s", removes, want)
	}
	r = capgate(t, "", nil, "toolserver", "list", "--data", data)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "no tool servers") {
		t.Errorf("list after remove:\n%s", r.stdout)
	}

	// A server of the handshake revisions only: capgate falls back, and says so.
	r = capgate(t, "", nil, "toolserver", "add", "old", "--data", data, "--bind", filepath.Dir(control), "--", server, "-control", control,
		"-revisions", "2025-11-25,2025-06-18")
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "MCP revision: 2025-11-25 (handshake)") {
		t.Errorf("add of a 2025-11-25 server printed:\n%s", r.stdout)
	}
	r = capgate(t, "", nil, "toolserver", "list", "--data", data)
	if !strings.Contains(r.stdout, "MCP revision: 2025-11-25 (handshake)") {
		t.Errorf("list of a 2025-11-25 server:\n%s", r.stdout)
	}
}
