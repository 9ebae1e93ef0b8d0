package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The official TypeScript SDK v2 client, @modelcontextprotocol/client from the npm registry
// (pinned in testdata/npm), as an agent of a real `capgate serve` under MCP 2026-07-28
// (testdata/npm/mcp2026/client.mjs): it discovers, lists, calls, requests a token and calls
// under it by handle, and a call and a token request that need the person each come back as
// an input request to the approval page, whose retry completes once the person approved
// there (here through `capgate approvals approve`, as on the page). The client's own "accept"
// approves nothing: each request is still pending until the person answers.
func TestTypeScriptSDKv2Client(t *testing.T) {
	script, node := npmPart(t, "../mcp2026/client.mjs")
	if _, err := exec.LookPath(node); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	url := startServe(t, data)
	key := strings.TrimSpace(capgate(t, "", nil, "client", "add", "agent", "--require-token", "--data", data).stdout)
	if !strings.HasPrefix(key, "cgk_") {
		t.Fatalf("client add printed %q", key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	got := make(chan result, 1)
	go func() {
		r, err := runClean(t, exec.CommandContext(ctx, node, script, url, key), nil)
		if err != nil {
			t.Errorf("the client did not run: %v", err)
		}
		got <- r
	}()
	// The person answers on the page: first the call, then the token request.
	for _, kind := range []string{"call", "token"} {
		id := waitPendingKind(t, data, kind)
		mustCode(t, capgate(t, "", nil, "approvals", "approve", id, "--data", data), 0)
	}
	checkTSv2(t, <-got, url, key)
	mustCode(t, capgate(t, "", nil, "audit", "verify", "--data", data), 0)
}

// tsSeen is what testdata/npm/mcp2026/client.mjs prints: what it saw of capgate.
type tsSeen struct {
	Error           string
	ProtocolVersion string
	Era             string
	Discover        struct {
		SupportedVersions []string
		CacheScope        string
	}
	Tools    []string
	Requests []struct {
		HTTPMethod, Method, Version, McpMethod, McpName, SessionID, ResponseSessionID, CacheScope string
		Status, TTLMs                                                                             int
	}
	Elicitations []struct {
		Mode, URL, Message string
		ElicitationID      string `json:"elicitationId"`
	}
	Steps map[string]struct {
		IsError    bool
		Structured map[string]any
		Body       map[string]any
	}
}

// checkTSv2 checks what client.mjs saw of the gateway at url as the client whose key is key:
// 2026-07-28 throughout, no session, truthful cache hints, every step's result, and input
// requests that point to the approval page at url.
func checkTSv2(t *testing.T, r result, url, key string) tsSeen {
	t.Helper()
	if strings.Contains(r.stdout, key) || strings.Contains(r.stdout, "cgt1.") {
		t.Errorf("a token or the client key reached the client: %s", r.stdout)
	}
	var seen tsSeen
	if err := json.Unmarshal([]byte(r.stdout), &seen); err != nil {
		t.Fatalf("the client printed %q (stderr %q): %v", r.stdout, r.stderr, err)
	}
	if seen.Error != "" {
		t.Fatalf("the client failed: %s\nstderr: %s", seen.Error, r.stderr)
	}
	if seen.ProtocolVersion != "2026-07-28" {
		t.Errorf("negotiated %q (era %q), want 2026-07-28", seen.ProtocolVersion, seen.Era)
	}
	if !strings.Contains(strings.Join(seen.Discover.SupportedVersions, ","), "2025-11-25") {
		t.Errorf("server/discover's versions: %v", seen.Discover.SupportedVersions)
	}
	for _, want := range []string{"calc__compute", "capgate__request_capability", "files__write_file"} {
		if !strings.Contains(","+strings.Join(seen.Tools, ",")+",", ","+want+",") {
			t.Errorf("tools/list lacks %s: %v", want, seen.Tools)
		}
	}
	listed := false
	for _, q := range seen.Requests {
		if q.Method == "initialize" {
			t.Errorf("an initialize under 2026-07-28")
		}
		if q.SessionID != "" || q.ResponseSessionID != "" {
			t.Errorf("%s: a session id under 2026-07-28 (sent %q, got %q)", q.Method, q.SessionID, q.ResponseSessionID)
		}
		if q.Method != "" && (q.Version != "2026-07-28" || q.McpMethod != q.Method) {
			t.Errorf("%s: headers version %q method %q", q.Method, q.Version, q.McpMethod)
		}
		if q.Method == "tools/list" {
			listed = true
			if q.CacheScope != "private" || q.TTLMs <= 0 {
				t.Errorf("tools/list cache hints: scope %q ttl %d, want private and positive", q.CacheScope, q.TTLMs)
			}
		}
	}
	if !listed {
		t.Errorf("no tools/list went over the wire")
	}
	call := seen.Steps["consentedCall"]
	if call.IsError || call.Structured["result"] != float64(1035) {
		t.Errorf("the call the person approved: %+v", call)
	}
	req := seen.Steps["request"]
	handle, _ := req.Body["token_handle"].(string)
	if req.IsError || !strings.HasPrefix(handle, "cgh_") {
		t.Errorf("request_capability: %+v", req)
	}
	by := seen.Steps["byHandle"]
	if by.IsError || by.Structured["result"] != float64(42) || by.Body["token_handle"] != handle {
		t.Errorf("the call naming the handle: %+v", by)
	}
	tok := seen.Steps["consentedToken"]
	if tok.IsError || tok.Body["status"] != "issued" || !strings.HasPrefix(tok.Body["token_handle"].(string), "cgh_") {
		t.Errorf("the token the person approved: %+v", tok)
	}
	if len(seen.Elicitations) < 2 {
		t.Fatalf("%d input requests, want one for the call and one for the token: %+v", len(seen.Elicitations), seen.Elicitations)
	}
	for _, el := range seen.Elicitations {
		id := el.URL[strings.LastIndex(el.URL, "/")+1:]
		if el.Mode != "url" || !strings.HasPrefix(id, "req_") || el.URL != url+"/ui/requests/"+id || el.ElicitationID != "" {
			t.Errorf("input request %+v: want a URL elicitation to %s/ui/requests/<id> (the revision has no elicitationId)", el, url)
		}
	}
	return seen
}
