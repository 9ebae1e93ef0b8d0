package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

const (
	kbID     = "org.example.kb"
	kbSearch = "kb.org.example.kb.search"
	kbFetch  = "kb.org.example.kb.fetch"
)

// kbManifest is a small knowledge base: a search that names the host's basic suite, and a
// fetch that names none.
const kbManifest = `{"app_id":"org.example.kb","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"kb.org.example.kb.search","name":"Search the documents","description":"Searches the knowledge base's documents by their words.","category":"TEXT_QUERY",
  "parameters":{"type":"object","required":["query"],"properties":{"query":{"type":"string","minLength":1}},"additionalProperties":false},
  "returns":{"type":"object","required":["hits"],"properties":{"hits":{"type":"array","items":{"type":"string"}}}},
  "side_effects":"read","auth_level":"public","conformance_suite":"conformance/knowledge/v1/basic"},
 {"id":"kb.org.example.kb.fetch","name":"Fetch a document","description":"Reads one document of the knowledge base.","category":"TEXT_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","auth_level":"public"}
]}`

// kbApp answers its search right, or, once broken, with hits that are not a list: the
// suite's first case then fails on the returns schema.
type kbApp struct {
	doc    atomic.Pointer[manifest.Document]
	broken atomic.Bool
}

func (k *kbApp) Manifest() *manifest.Document { return k.doc.Load() }

func (k *kbApp) Invoke(_ context.Context, id string, params json.RawMessage, _ sdk.InvocationContext) (sdk.Result, error) {
	if id == kbFetch {
		return sdk.Result{Success: true, Data: json.RawMessage(`{"text":"Onboarding checklist"}`)}, nil
	}
	var p struct{ Query string }
	_ = json.Unmarshal(params, &p)
	if strings.TrimSpace(p.Query) == "" {
		return sdk.Result{}, &sdk.Error{Code: sdk.CodeInvalidParams, Reason: "a blank query"}
	}
	if k.broken.Load() {
		return sdk.Result{Success: true, Data: json.RawMessage(`{"hits":"Onboarding checklist"}`)}, nil
	}
	return sdk.Result{Success: true, Data: json.RawMessage(`{"hits":["Onboarding checklist"]}`)}, nil
}

// kbSuites is the host's kit index with the knowledge port's basic suite.
func kbSuites(t *testing.T) *port.Registry {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"knowledge.v1.json": `{"port": "knowledge.v1", "methods": {"search": {"risk": "low", "side_effects": "read", "idempotent": true, "dry_run": false}}}`,
		"kits.json":         `{"suites": ["conformance/knowledge/v1/basic"]}`,
		"conformance/knowledge/v1/basic.json": `{"suite": "conformance/knowledge/v1/basic", "cases": [
  {"name": "finds-onboarding", "method": "search", "params": {"query": "onboarding"}, "expect": {"max_effect": "read"}},
  {"name": "refuses-a-blank-query", "method": "search", "params": {"query": "   "}, "expect": {"error": "invalid_params", "max_effect": "read"}}]}`,
	}
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := port.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// listed is what GET /v1/capabilities (with all=1: shown ones too) says of each capability.
func (e *env) listed(a agent, all bool) map[string]ipc.Tool {
	e.t.Helper()
	path := "/v1/capabilities"
	if all {
		path += "?all=1"
	}
	status, raw := e.do(a, "GET", path, nil)
	var l struct{ Capabilities []ipc.Tool }
	if status != http.StatusOK || json.Unmarshal(raw, &l) != nil {
		e.t.Fatalf("%s: HTTP %d: %s", path, status, raw)
	}
	out := map[string]ipc.Tool{}
	for _, c := range l.Capabilities {
		out[c.ID] = c
	}
	return out
}

// candidates are the capability ids POST /v1/plan/candidates returns for task.
func (e *env) candidates(a agent, task string) []string {
	e.t.Helper()
	status, raw := e.do(a, "POST", "/v1/plan/candidates", []byte(`{"task":`+jsonString(task)+`,"limit":10}`))
	var ans struct {
		Candidates []struct {
			ID string `json:"id"`
		} `json:"candidates"`
	}
	if status != http.StatusOK || json.Unmarshal(raw, &ans) != nil {
		e.t.Fatalf("candidates: HTTP %d: %s", status, raw)
	}
	var ids []string
	for _, c := range ans.Candidates {
		ids = append(ids, c.ID)
	}
	return ids
}

// mcpSession connects an MCP client as a; the caller closes it.
func (e *env) mcpSession(a agent) *mcpsdk.ClientSession {
	e.t.Helper()
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := c.Connect(e.ctx, &mcpsdk.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{a.Key}}}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return cs
}

// mcpTools are the tool names an MCP client of a sees.
func (e *env) mcpTools(a agent) map[string]bool {
	e.t.Helper()
	cs := e.mcpSession(a)
	defer cs.Close()
	names := map[string]bool{}
	for tool, err := range cs.Tools(e.ctx, nil) {
		if err != nil {
			e.t.Fatal(err)
		}
		names[tool.Name] = true
	}
	return names
}

// The evaluation gate: a capability whose suite fails when the host runs it disappears from
// every listing, from MCP's tools and from planning, its calls are refused as not working
// right now, and GET /v1/capabilities?all=1 shows it so, with the failed case; its sibling
// without a suite, and the app's other callers, are untouched. Once a run passes again it is
// back. The status is the host's own run, kept in the store.
func TestEvaluationGate(t *testing.T) {
	t.Parallel()
	kb := &kbApp{}
	e := newEnv(t, options{handlers: map[string]sdk.Handler{kbID: kb}, suites: kbSuites(t)})
	kb.doc.Store(e.register(kbID, kbManifest, "kb").Doc)
	alice := e.addClient("alice", "user")
	const task = "search the documents of the knowledge base"

	working := func(what string) {
		t.Helper()
		wantOK(t, what+": search", e.callApp(alice, "kb", "search", `{"query":"onboarding"}`, ""))
		if _, ok := e.listed(alice, false)[kbSearch]; !ok {
			t.Errorf("%s: GET /v1/capabilities does not list the search", what)
		}
		if c := e.candidates(alice, task); !contains(c, kbSearch) {
			t.Errorf("%s: the search is not a candidate for %q: %v", what, task, c)
		}
	}
	working("before any run")
	e.g.Evaluate(e.ctx)
	working("after a run that passed")

	kb.broken.Store(true)
	e.g.Evaluate(e.ctx)
	rec, err := conformance.Load(e.ctx, e.g.Store, kbID)
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := rec.Result(kbSearch); res.Status != conformance.StatusFailed || res.Case != "finds-onboarding" {
		t.Fatalf("the stored status is %v", res)
	}

	r := e.callApp(alice, "kb", "search", `{"query":"onboarding"}`, "")
	wantCode(t, "a call of the failed search", r, "APP_NOT_FOUND")
	if !strings.Contains(r.Body.ErrorMessage, "not working right now") {
		t.Errorf("the refusal %q does not say it is not working right now", r.Body.ErrorMessage)
	}
	wantOK(t, "the fetch, which has no suite", e.callApp(alice, "kb", "fetch", `{}`, ""))
	if l := e.listed(alice, false); contains(idsOf(l), kbSearch) || !contains(idsOf(l), kbFetch) {
		t.Errorf("GET /v1/capabilities lists %v", idsOf(l))
	}
	shown := e.listed(alice, true)[kbSearch]
	if shown.Status != "not working right now" || !strings.Contains(shown.Why, "last evaluation failed") || !strings.Contains(shown.Why, "finds-onboarding") {
		t.Errorf("?all=1 shows the failed search as %q (%q)", shown.Status, shown.Why)
	}
	if c := e.candidates(alice, task); contains(c, kbSearch) {
		t.Errorf("the failed search is still a candidate: %v", c)
	}
	tools := e.mcpTools(alice)
	if tools["kb__search"] || !tools["kb__fetch"] {
		t.Errorf("MCP lists %v", tools)
	}

	kb.broken.Store(false)
	e.g.Evaluate(e.ctx)
	working("after a run that passed again")
	if !e.mcpTools(alice)["kb__search"] {
		t.Error("MCP does not list the search once it passes again")
	}
}

// A status recorded elsewhere (capgate plugin test, another replica's run) reaches the
// running gateway with no run of its own: a failed record made for the manifest before its
// app is registered holds the capability back as soon as it is; a record of another
// manifest says nothing of this one.
func TestEvaluationRecordedElsewhere(t *testing.T) {
	t.Parallel()
	kb := &kbApp{}
	e := newEnv(t, options{handlers: map[string]sdk.Handler{kbID: kb}})
	alice := e.addClient("alice", "user")
	doc, err := manifest.Load([]byte(kbManifest))
	if err != nil {
		t.Fatal(err)
	}
	failed := []conformance.Result{{Capability: kbSearch, Suite: "conformance/knowledge/v1/basic", Status: conformance.StatusFailed, Case: "finds-onboarding", Reason: "hits: not an array", At: time.Now()}}
	if err := conformance.Save(e.ctx, e.g.Store, doc, failed); err != nil {
		t.Fatal(err)
	}
	kb.doc.Store(e.register(kbID, kbManifest, "kb").Doc)
	deadline := time.Now().Add(10 * time.Second)
	for contains(idsOf(e.listed(alice, false)), kbSearch) {
		if time.Now().After(deadline) {
			t.Fatal("the search failed elsewhere is still listed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantCode(t, "a call of the search failed elsewhere", e.callApp(alice, "kb", "search", `{"query":"onboarding"}`, ""), "APP_NOT_FOUND")

	// The same app at another version: the old record is not its status.
	other := strings.Replace(kbManifest, `"version":"1.0.0"`, `"version":"1.0.1"`, 1)
	kb.doc.Store(e.register(kbID, other, "kb").Doc)
	deadline = time.Now().Add(10 * time.Second)
	for !contains(idsOf(e.listed(alice, false)), kbSearch) {
		if time.Now().After(deadline) {
			t.Fatal("the record of another manifest still holds the search back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantOK(t, "the search of the new version", e.callApp(alice, "kb", "search", `{"query":"onboarding"}`, ""))
}

func idsOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
