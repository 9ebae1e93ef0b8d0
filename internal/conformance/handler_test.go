package conformance_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// testManifest is a knowledge provider of four capabilities: search (a read, tested by the
// basic suite), reindex (a write with a dry run, tested by it), publish (a write without a dry
// run, which the suite cannot test) and fetch (a read that declares no suite).
const testManifest = `{"app_id": "org.example.testkb", "version": "1.0.0", "manifest_version": "1.0",
 "ports": ["knowledge.v1"],
 "capabilities": [
  {"id": "kb.org.example.testkb.search", "name": "Search", "description": "Searches the documents.", "category": "TEXT_QUERY",
   "parameters": {"type": "object", "required": ["query"], "properties": {"query": {"type": "string", "minLength": 1}}, "additionalProperties": false},
   "returns": {"type": "object", "required": ["hits"], "properties": {"hits": {"type": "array", "items": {"type": "string"}}}, "additionalProperties": {"type": "string"}},
   "side_effects": "read", "implements": "knowledge.search@1.0", "idempotency": "natural", "environment_scope": ["dev"],
   "conformance_suite": "conformance/knowledge/v1/basic"},
  {"id": "kb.org.example.testkb.reindex", "name": "Reindex", "description": "Rebuilds the index.", "category": "SYSTEM",
   "parameters": {"type": "object", "additionalProperties": false},
   "returns": {"type": "object", "required": ["documents"], "properties": {"documents": {"type": "integer"}}},
   "side_effects": "write", "implements": "knowledge.reindex@1.0", "dry_run": true, "evidence": ["audit.reindex"], "environment_scope": ["dev"],
   "conformance_suite": "conformance/knowledge/v1/basic"},
  {"id": "kb.org.example.testkb.publish", "name": "Publish", "description": "Publishes a document.", "category": "SYSTEM",
   "parameters": {"type": "object", "properties": {"doc": {"type": "string"}}},
   "returns": {"type": "object"},
   "side_effects": "write", "implements": "knowledge.publish@1.0", "evidence": ["audit.publish"], "environment_scope": ["dev"],
   "conformance_suite": "conformance/knowledge/v1/basic"},
  {"id": "kb.org.example.testkb.fetch", "name": "Fetch", "description": "Reads a document.", "category": "TEXT_QUERY",
   "parameters": {"type": "object"}, "returns": {"type": "object"},
   "side_effects": "read", "implements": "knowledge.fetch@1.0", "environment_scope": ["dev"]}
 ]}`

const (
	searchID  = "kb.org.example.testkb.search"
	reindexID = "kb.org.example.testkb.reindex"
	publishID = "kb.org.example.testkb.publish"
	fetchID   = "kb.org.example.testkb.fetch"
)

// The host's copy of the port, its kit index and the basic suite.
const (
	knowledgePort = `{"port": "knowledge.v1", "methods": {
  "search": {"risk": "low", "side_effects": "read", "idempotent": true, "dry_run": false},
  "fetch": {"risk": "low", "side_effects": "read", "idempotent": true, "dry_run": false},
  "reindex": {"risk": "medium", "side_effects": "write", "idempotent": false, "dry_run": true, "evidence": ["audit.reindex"]},
  "publish": {"risk": "medium", "side_effects": "write", "idempotent": false, "dry_run": false, "evidence": ["audit.publish"]}}}`
	kits       = `{"suites": ["conformance/knowledge/v1/basic", "conformance/knowledge/v1/nofile", "conformance/files/v1/basic"]}`
	basicSuite = `{"suite": "conformance/knowledge/v1/basic", "cases": [
  {"name": "finds-onboarding", "method": "search", "params": {"query": "onboarding"}, "expect": {"max_effect": "read"}},
  {"name": "refuses-a-blank-query", "method": "search", "params": {"query": "   "}, "expect": {"error": "invalid_params", "max_effect": "read"}},
  {"name": "reindexes-in-a-dry-run", "method": "reindex", "expect": {"max_effect": "read"}},
  {"name": "publishes", "method": "publish", "params": {"doc": "a"}, "expect": {"max_effect": "read"}}]}`
)

// portsDir lays out the host's descriptor folder; suite, when not empty, replaces the basic
// suite's file.
func portsDir(t *testing.T, suite string) string {
	t.Helper()
	if suite == "" {
		suite = basicSuite
	}
	dir := t.TempDir()
	files := map[string]string{
		"knowledge.v1.json":                   knowledgePort,
		"files.v1.json":                       `{"port": "files.v1", "methods": {"read": {"risk": "low", "side_effects": "read", "idempotent": true, "dry_run": false}}}`,
		"kits.json":                           kits,
		"conformance/knowledge/v1/basic.json": suite,
		"conformance/files/v1/basic.json":     `{"suite": "conformance/files/v1/basic", "cases": [{"name": "reads", "method": "read", "expect": {"max_effect": "read"}}]}`,
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
	return dir
}

func registry(t *testing.T, suite string) *port.Registry {
	t.Helper()
	r, err := port.LoadDir(portsDir(t, suite))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// loadManifest loads testManifest after the replacements old → new, and checks it against
// the host's ports as an install would.
func loadManifest(t testing.TB, replacements ...string) *manifest.Document {
	t.Helper()
	text := strings.NewReplacer(replacements...).Replace(testManifest)
	doc, err := manifest.Load([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// kb is a small knowledge base: a search over a few documents and a reindex. Its behaviour
// names the way it misbehaves, "" for none.
type kb struct {
	doc       *manifest.Document
	behaviour string
	release   chan struct{} // "hang" blocks until it is closed
}

var (
	_ sdk.Handler        = (*kb)(nil)
	_ sdk.ParamValidator = (*kb)(nil)
)

var documents = []string{"Onboarding checklist", "Onboarding for contractors", "Release process", "The style guide"}

func (h *kb) Manifest() *manifest.Document { return h.doc }

// ValidateParams refuses a query of spaces, which the schema lets through.
func (h *kb) ValidateParams(id string, params json.RawMessage) error {
	if h.behaviour == "lenient" || id != searchID {
		return nil
	}
	var p struct{ Query string }
	if err := json.Unmarshal(params, &p); err != nil {
		return err
	}
	if strings.TrimSpace(p.Query) == "" {
		return sdk.InvalidParams(manifest.Problems{{Path: "query", Rule: "must hold a word"}})
	}
	return nil
}

func (h *kb) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	switch id {
	case searchID:
		return h.search(ctx, params)
	case reindexID:
		if sdk.IsDryRun(ctx) && h.behaviour != "dry-write" {
			sdk.ReportEffect(ctx, "read", "the documents")
		} else {
			sdk.ReportEffect(ctx, "write", "the index")
		}
		sdk.EmitEvidence(ctx, "audit.reindex", json.RawMessage(`{}`))
		return sdk.Result{Success: true, Data: json.RawMessage(`{"documents":4}`)}, nil
	case publishID:
		panic("publish must never be called by a suite")
	case fetchID:
		sdk.ReportEffect(ctx, "read", "a document")
		return sdk.Result{Success: true, Data: json.RawMessage(`{}`)}, nil
	}
	return sdk.Result{}, sdk.NotFound(id)
}

func (h *kb) search(ctx context.Context, params json.RawMessage) (sdk.Result, error) {
	var p struct{ Query string }
	if err := json.Unmarshal(params, &p); err != nil {
		return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Path: "", Rule: "must be an object"}})
	}
	effect := "read"
	switch h.behaviour {
	case "effect-above":
		effect = "write"
	case "effect-network":
		effect = "network"
	case "effect-unknown":
		effect = "format the disk\x1b[2J " + strings.Repeat("x", 10000)
	case "effect-none-declared":
		effect = "none"
	}
	sdk.ReportEffect(ctx, effect, "the documents")
	switch h.behaviour {
	case "hang":
		<-h.release // the deadline is ignored
	case "slow":
		<-ctx.Done()
		return sdk.Result{}, ctx.Err()
	case "panic":
		panic("the index is corrupt")
	case "fails":
		return sdk.Result{}, sdk.ExecutionFailed("the index at /srv/secret/kb is corrupt", false)
	case "odd-code":
		return sdk.Result{}, &sdk.Error{Code: "totally_fine\n", Reason: "x"}
	case "plain-error":
		return sdk.Result{}, os.ErrPermission
	}
	var hits []string
	for _, d := range documents {
		if strings.Contains(strings.ToLower(d), strings.ToLower(strings.TrimSpace(p.Query))) {
			hits = append(hits, d)
		}
	}
	data, _ := json.Marshal(map[string]any{"hits": hits})
	switch h.behaviour {
	case "wrong-shape":
		data, _ = json.Marshal(map[string]any{"hits": strings.Join(hits, ", ")})
	case "no-data":
		data = nil
	case "evil-member":
		data, _ = json.Marshal(map[string]any{"hits": hits, "\x07\x1b[31m" + strings.Repeat("evil", 1000): 1})
	case "not-success":
		return sdk.Result{Data: data}, nil
	}
	return sdk.Result{Success: true, Data: data}, nil
}

// plain is a search without implements or rules of its own, counting its calls.
type plain struct {
	doc   *manifest.Document
	calls int
}

func (h *plain) Manifest() *manifest.Document { return h.doc }

func (h *plain) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	h.calls++
	sdk.ReportEffect(ctx, "read", "nothing")
	return sdk.Result{Success: true, Data: json.RawMessage(`{"hits":[]}`)}, nil
}
