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

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/apps/files"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// bearer sends a client key with every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// Issue 16: Working was hard-coded true, so a built-in app whose handler could not start was
// listed to agents and its calls went all the way to "registered but not running". It is not
// working right now: its calls are refused at step 1 (METHOD_NOT_FOUND, saying so), and
// neither GET /v1/capabilities nor MCP's tools/list shows it; the other apps run.
func TestBuiltinThatCannotStartIsNotWorking(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{before: func(data string) {
		// The files app keeps its undo area in DATA/apps/files: a file in the way of that
		// folder is a state folder it cannot open.
		if err := os.WriteFile(filepath.Join(data, gateway.AppsStateDir), []byte("not a folder"), 0o600); err != nil {
			t.Fatal(err)
		}
	}})
	alice := e.addClient("alice", "user")
	for _, method := range []string{"read_file", "write_file"} {
		r := e.callApp(alice, "files", method, `{"path":"a.txt","content":"x"}`, "")
		wantCode(t, method, r, "APP_NOT_FOUND")
		if !strings.Contains(r.Body.ErrorMessage, "not working right now") {
			t.Errorf("%s: %q does not say the app is not working", method, r.Body.ErrorMessage)
		}
	}
	if cs, _ := e.g.Store.ListConsents(e.ctx, ""); len(cs) != 0 {
		t.Errorf("the person was asked %d times about an app that cannot run", len(cs))
	}
	wantOK(t, "calc", e.callApp(alice, "calc", "compute", `{"expression":"1+2"}`, ""))

	status, raw := e.do(alice, "GET", "/v1/capabilities", nil)
	var l struct{ Capabilities []ipc.Tool }
	if status != http.StatusOK || json.Unmarshal(raw, &l) != nil {
		t.Fatalf("capabilities: HTTP %d", status)
	}
	apps := map[string]bool{}
	for _, c := range l.Capabilities {
		apps[c.App] = true
	}
	if apps["files"] || apps[files.AppID] || !apps["calc"] || !apps["notes"] {
		t.Errorf("GET /v1/capabilities lists the apps %v", apps)
	}

	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := c.Connect(e.ctx, &mcpsdk.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{alice.Key}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(e.ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	all := strings.Join(names, " ")
	if strings.Contains(all, "files") || strings.Contains(all, "read_file") || !strings.Contains(all, "compute") {
		t.Errorf("tools/list: %s", all)
	}
}

// ordersManifest is an app whose params have a rule its schema cannot say: an order's
// quantity must not exceed its stock.
const ordersManifest = `{"app_id":"org.example.orders","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"orders.org.example.orders.check","name":"Check an order","description":"Checks an order.","category":"STATE_QUERY",
  "parameters":{"type":"object","required":["qty","stock"],"additionalProperties":false,
   "properties":{"qty":{"type":"integer","minimum":1},"stock":{"type":"integer","minimum":0}}},
  "returns":{"type":"object"},"side_effects":"read","auth_level":"public"}
]}`

// orders is the orders app: it checks its own rule, and counts what it was asked and ran.
type orders struct {
	doc         atomic.Pointer[manifest.Document]
	asked, runs atomic.Int64
}

func (o *orders) Manifest() *manifest.Document { return o.doc.Load() }

func (o *orders) ValidateParams(id string, params json.RawMessage) error {
	o.asked.Add(1)
	var p struct{ Qty, Stock int }
	if err := json.Unmarshal(params, &p); err != nil {
		return sdk.InvalidParams(nil)
	}
	if p.Qty > p.Stock {
		return sdk.InvalidParams(manifest.Problems{{Path: "qty", Rule: "must not exceed stock"}})
	}
	return nil
}

func (o *orders) Invoke(context.Context, string, json.RawMessage, sdk.InvocationContext) (sdk.Result, error) {
	o.runs.Add(1)
	return sdk.Result{Success: true, Data: json.RawMessage(`{"ok":true}`)}, nil
}

// Issue 16: sdk.ParamValidator was promised and never called. Through the gateway's IPC
// API, a Go app's own rule refuses params that pass the schema, as INVALID_REQUEST at its
// field path, and the app never runs them; params that break the schema are refused before
// the app is asked.
func TestParamValidatorThroughTheGateway(t *testing.T) {
	t.Parallel()
	app := &orders{}
	e := newEnv(t, options{handlers: map[string]sdk.Handler{"org.example.orders": app}})
	reg := e.register("org.example.orders", ordersManifest, "orders")
	app.doc.Store(reg.Doc)
	alice := e.addClient("alice", "user")

	r := e.callApp(alice, "orders", "check", `{"qty":0,"stock":5}`, "")
	wantCode(t, "below the schema's minimum", r, "INVALID_REQUEST")
	if app.asked.Load() != 0 {
		t.Errorf("the app was asked about params that break the schema")
	}
	r = e.callApp(alice, "orders", "check", `{"qty":9,"stock":5}`, "")
	wantCode(t, "above the stock", r, "INVALID_REQUEST")
	if !strings.Contains(r.Body.ErrorMessage, "params.qty") || strings.Contains(r.Body.ErrorMessage, "9") {
		t.Errorf("the app's refusal: %q", r.Body.ErrorMessage)
	}
	if app.runs.Load() != 0 {
		t.Fatal("params the app's rule refuses ran")
	}
	wantOK(t, "within the stock", e.callApp(alice, "orders", "check", `{"qty":2,"stock":5}`, ""))
	if app.asked.Load() != 2 || app.runs.Load() != 1 {
		t.Errorf("asked %d times, ran %d times", app.asked.Load(), app.runs.Load())
	}
}

// A tool server's app that this gateway has not connected (registered by another process,
// its connection not yet made) is not working right now either, while an app registered
// without a handler anywhere else is decided in full and answers APP_NOT_FOUND.
func TestToolServerNotConnectedIsNotWorking(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	e.register("mcp.later", strings.ReplaceAll(strings.ReplaceAll(ghostManifest, "org.example.ghost", "mcp.later"), "ghost.mcp.later", "tool.mcp.later"), "later")
	e.register("org.example.ghost", ghostManifest, "ghost")
	r := e.callApp(alice, "later", "ping", `{}`, "")
	wantCode(t, "a tool server not connected", r, "APP_NOT_FOUND")
	if !strings.Contains(r.Body.ErrorMessage, "not working right now") {
		t.Errorf("%q does not say the tool server is not working", r.Body.ErrorMessage)
	}
	r = e.callApp(alice, "ghost", "ping", `{}`, "")
	wantCode(t, "an app with no handler", r, "APP_NOT_FOUND")
	if !strings.Contains(r.Body.ErrorMessage, "not running") {
		t.Errorf("%q does not say the app is not running", r.Body.ErrorMessage)
	}
}
