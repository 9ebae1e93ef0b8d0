package main

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/egress/egresstest"
)

// A published MCP server that knows nothing of proxies (@modelcontextprotocol/server-gitlab
// calls its API with Node's HTTP client, which ignores HTTP_PROXY) runs sandboxed behind a
// running `capgate serve`, added with `toolserver add --allow`: it reaches its declared
// destination, a GitLab stand-in on an address in the test's own network namespace under a
// name the test's DNS server answers, through its sandbox's tunnel and capgate's egress
// proxy, which audits the connection; another port of the same name reaches nothing, and the
// stand-in never hears of it.
func TestPublishedServerReachesOnlyWhatItDeclared(t *testing.T) {
	entry, node := npmPart(t, "@modelcontextprotocol/server-gitlab/dist/index.js")
	egresstest.Need(t)
	n := egresstest.New(t)
	dns := egresstest.NewDNS(t)
	dns.Static("gitlab.example.com", n.NS.String())

	// The stand-in answers a project search, and remembers who asked.
	var mu sync.Mutex
	var seen []string
	api := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path != "/api/v4/projects" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Total", "1")
		_ = json.NewEncoder(w).Encode([]map[string]any{{
			"id": 7, "name": "capgate-stand-in", "path_with_namespace": "tests/capgate-stand-in", "visibility": "public",
			"web_url": "http://gitlab.example.com/tests/capgate-stand-in", "description": "found through the egress proxy",
			"ssh_url_to_repo": "git@gitlab.example.com:tests/capgate-stand-in.git", "http_url_to_repo": "http://gitlab.example.com/tests/capgate-stand-in.git",
			"created_at": "2026-12-01T00:00:00Z", "last_activity_at": "2026-12-01T00:00:00Z", "default_branch": "main",
		}})
	})}
	go api.Serve(n.Listen(t, netip.AddrPortFrom(n.NS, 80)))
	t.Cleanup(func() { api.Close() })
	requests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}

	// The namespace's address is private: the host's signed policy allows it, and the proxy
	// asks the test's DNS server.
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	trusted := filepath.Join(dir, "trusted")
	polKey := filepath.Join(dir, "policy.key")
	mustCode(t, capgate(t, "", nil, "keygen", "--app-id", "capgate.policy", "--out", polKey, "--pub", filepath.Join(trusted, "capgate.policy.pub")), 0)
	policy := filepath.Join(dir, "policy.json")
	writeFile(t, policy, `{"policy_version": "1.0", "allow_private": ["`+n.Prefix.String()+`"]}`)
	mustCode(t, capgate(t, "", nil, "policy", "sign", "--key", polKey, "-o", policy, policy), 0)
	cfg := filepath.Join(dir, "host.yaml")
	writeFile(t, cfg, "trusted_dir: trusted\npolicy_file: policy.json\negress_resolver: "+dns.Addr()+"\n")

	key := strings.TrimSpace(capgate(t, "", nil, "client", "add", "agent", "--data", data).stdout)
	const secret = "glpat-capgate-test-token"
	url := serveChild(t, data, serveOptions{args: []string{"--config", cfg}, home: t.TempDir(), live: true, grace: 20 * time.Second,
		env: []string{"GITLAB_API_URL=http://gitlab.example.com/api/v4", "GITLAB_PERSONAL_ACCESS_TOKEN=" + secret}}).url
	env := []string{"CAPGATE_SERVER=" + url, "CAPGATE_CLIENT_KEY=" + key}

	modules, _ := filepath.Abs(filepath.Join(npmDir, "node_modules"))
	add := func(name, allow string) {
		t.Helper()
		r := capgate(t, "", nil, "toolserver", "add", name, "--data", data, "--bind", modules, "--allow", allow,
			"--env", "GITLAB_API_URL", "--env", "GITLAB_PERSONAL_ACCESS_TOKEN", "--", node, entry)
		mustCode(t, r, 0)
		if !strings.Contains(r.stdout, "tool.mcp."+name+".search_repositories") {
			t.Fatalf("toolserver add %s lists no search_repositories:\n%s", name, r.stdout)
		}
	}
	add("gitlab", "gitlab.example.com:80")
	add("elsewhere", "gitlab.example.com:8080") // the same API, declared on another port
	r := capgate(t, "", nil, "toolserver", "list", "--data", data)
	if !strings.Contains(r.stdout, "gitlab.example.com:80") {
		t.Errorf("toolserver list does not show what gitlab may reach:\n%s", r.stdout)
	}

	search := func(server string) (string, string) {
		t.Helper()
		r := answered(t, data, "call", "approve", func() result {
			return capgate(t, "", env, "call", server, "search_repositories", "--params", `{"search":"capgate"}`, "--json")
		})
		var resp struct {
			Body struct {
				Status string          `json:"status"`
				Result json.RawMessage `json:"result"`
			} `json:"body"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil {
			t.Fatalf("call %s printed %q (stderr %q)", server, r.stdout, r.stderr)
		}
		return resp.Body.Status, string(resp.Body.Result)
	}
	status, out := search("gitlab")
	var labelled struct {
		Untrusted bool `json:"untrusted_output"`
	}
	_ = json.Unmarshal([]byte(out), &labelled)
	if status != "success" || !strings.Contains(out, "capgate-stand-in") || !labelled.Untrusted {
		t.Fatalf("search through the declared destination: %s %s", status, out)
	}
	if got := requests(); len(got) != 1 || got[0] != "gitlab.example.com /api/v4/projects?search=capgate&page=1&per_page=20 Bearer "+secret {
		t.Fatalf("the stand-in saw %q", got)
	}

	// Declared on another port, the same request reaches nothing: the server's call fails,
	// and the stand-in hears nothing.
	if _, out := search("elsewhere"); strings.Contains(out, "capgate-stand-in") {
		t.Errorf("a server declared on port 8080 reached port 80: %s", out)
	}
	if got := requests(); len(got) != 1 {
		t.Errorf("the stand-in heard from a server that did not declare it: %q", got)
	}

	// The connection is capgate's own record, naming the server and the destination.
	var connects []string
	for _, rec := range auditRecords(t, data) {
		if rec.Action == "egress.connect" {
			connects = append(connects, rec.App+" "+rec.Result+" "+rec.Explanation)
		}
	}
	if len(connects) != 1 || !strings.Contains(connects[0], "gitlab") || !strings.Contains(connects[0], "gitlab.example.com:80") {
		t.Errorf("egress records: %q", connects)
	}
	mustCode(t, capgate(t, "", nil, "audit", "verify", "--data", data), 0)
}
