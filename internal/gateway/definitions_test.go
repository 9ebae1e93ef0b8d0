package gateway_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// TestRegisterHeldToItsDefinition starts a gateway whose data folder holds a signed
// definition, and registers apps whose capability implements it: one whose schemas fit, one
// whose parameters require more than the definition's input gives, and one naming a minor
// the gateway does not have.
func TestRegisterHeldToItsDefinition(t *testing.T) {
	ctx := context.Background()
	dataDir, trusted := t.TempDir(), t.TempDir()
	pub, key, _ := ed25519.GenerateKey(nil)
	if err := keys.WritePublicKey(filepath.Join(trusted, "org.capgate.pub"), pub, true); err != nil {
		t.Fatal(err)
	}
	def, _, err := definition.ReadFile("../definition/testdata/ride.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	signed, err := definition.Sign(def, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dataDir, gateway.DefinitionsFolder), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, gateway.DefinitionsFolder, "ride.json"), signed, 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Open(ctx, gateway.Config{DataDir: dataDir, Listen: "-", Socket: "-", TrustedDir: trusted,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Definitions.Get("org.capgate.transport.ride.request@1.2") == nil {
		t.Fatal("the signed definition was not loaded")
	}

	app := func(implements string, required []string) []byte {
		req, _ := json.Marshal(required)
		return []byte(`{"app_id":"com.example.rides","version":"1.0.0","manifest_version":"1.0","capabilities":[{
			"id":"transport.com.example.rides.book","name":"Book","description":"Books a ride.","category":"APP_MANAGEMENT",
			"side_effects":"write","implements":"` + implements + `",
			"parameters":{"type":"object","required":` + string(req) + `,"properties":{"pickup":{"type":"string"},"destination":{"type":"string"},"seats":{"type":"integer"},"coupon":{"type":"string"}}},
			"returns":{"type":"object","required":["ride_id","status"],"properties":{"ride_id":{"type":"string"},"status":{"type":"string"}}}}]}`)
	}
	const ref = "org.capgate.transport.ride.request@1.0"
	var ps manifest.Problems
	if _, err := g.Registry.Register(ctx, app(ref, []string{"pickup", "destination", "coupon"}), ""); !errors.As(err, &ps) ||
		len(ps) != 1 || ps[0].Path != "capabilities[0].parameters.required.coupon" {
		t.Fatalf("parameters that require more: %v", err)
	}
	if _, err := g.Registry.Register(ctx, app("org.capgate.transport.ride.request@1.4", []string{"pickup"}), ""); !errors.As(err, &ps) ||
		!strings.Contains(ps.Error(), "not 1.4") {
		t.Fatalf("a minor the gateway does not have: %v", err)
	}
	if _, err := g.Registry.Register(ctx, app(ref, []string{"pickup"}), ""); err != nil {
		t.Fatalf("a compatible capability: %v", err)
	}
}

// TestNegotiateOverIPC puts a signed definition and an extension of it in the data folder and
// negotiates over POST /v1/definitions/negotiate: the definition is offered, with its signed
// document; the extension goes when its parent is not supported; a handle is never a name.
func TestNegotiateOverIPC(t *testing.T) {
	e := newEnv(t, options{before: func(dataDir string) {
		dir := filepath.Join(dataDir, gateway.DefinitionsFolder)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for ns, file := range map[string]string{"org.capgate": "ride", "com.example": "pet"} {
			pub, key, _ := ed25519.GenerateKey(nil)
			if err := keys.WritePublicKey(filepath.Join(dataDir, gateway.LocalTrustDir, ns+".pub"), pub, true); err != nil {
				t.Fatal(err)
			}
			def, ps, err := definition.ReadFile("../definition/testdata/"+file+".yaml", "")
			if err != nil || len(ps) > 0 {
				t.Fatal(err, ps)
			}
			signed, err := definition.Sign(def, key)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, file+".json"), signed, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}})
	a := e.addClient("planner", "user")
	negotiate := func(body string) (int, definition.Answer) {
		t.Helper()
		status, data := e.do(a, "POST", "/v1/definitions/negotiate", []byte(body))
		var ans definition.Answer
		if status == 200 {
			if err := json.Unmarshal(data, &ans); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
		}
		return status, ans
	}
	status, ans := negotiate(`{"supports":["org.capgate.transport.ride.request@1.9","com.example.transport.ride.request_with_pet@1.0","@org.capgate.transport.ride.request"]}`)
	if status != 200 || len(ans.Offered) != 2 || len(ans.Choices) != 3 || ans.Choices[2].Kept {
		t.Fatalf("negotiate: %d %+v", status, ans)
	}
	var doc struct{ Name, Version, Signature string }
	if err := json.Unmarshal(ans.Offered[1], &doc); err != nil || doc.Name != "org.capgate.transport.ride.request" || doc.Version != "1.2" || doc.Signature == "" {
		t.Errorf("offered document: %s", ans.Offered[1])
	}
	status, ans = negotiate(`{"supports":["com.example.transport.ride.request_with_pet@1.0"]}`)
	if status != 200 || len(ans.Offered) != 0 || !strings.Contains(ans.Choices[0].Why, "not in the intersection") {
		t.Fatalf("without the parent: %d %+v", status, ans)
	}
	for _, bad := range []string{`{}`, `{"supports":"x"}`, `{"supports":[],"extra":1}`, `{"supports":[1]}`, `not json`} {
		if status, _ := negotiate(bad); status != 400 {
			t.Errorf("%s: status %d, want 400", bad, status)
		}
	}
	if status, _ := e.do(agent{}, "POST", "/v1/definitions/negotiate", []byte(`{"supports":[]}`)); status != 401 {
		t.Errorf("without a key: %d", status)
	}
}

// TestPlanCandidates asks POST /v1/plan/candidates for tasks: the answer is a handful of the
// capabilities the client may use, best first, the fitting one among them; a public client
// is never offered what it may not use; a bad request says what is wrong.
func TestPlanCandidates(t *testing.T) {
	e := newEnv(t, options{})
	user, public := e.addClient("planner", "user"), e.addClient("kiosk", "public")
	usable := func(a agent) map[string]bool {
		_, data := e.do(a, "GET", "/v1/capabilities", nil)
		var list struct{ Capabilities []struct{ ID string } }
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, c := range list.Capabilities {
			out[c.ID] = true
		}
		return out
	}
	ask := func(a agent, body string) (int, []struct {
		ID, App, Method string
		Score           float64
	}) {
		t.Helper()
		status, data := e.do(a, "POST", "/v1/plan/candidates", []byte(body))
		var ans struct {
			Candidates []struct {
				ID, App, Method string
				Score           float64
			}
		}
		if status == 200 {
			if err := json.Unmarshal(data, &ans); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
		}
		return status, ans.Candidates
	}
	mine := usable(user)
	status, cands := ask(user, `{"task":"evaluate the arithmetic expression 2*(3+4)"}`)
	if status != 200 || len(cands) == 0 || len(cands) > 5 || cands[0].App != "calc" {
		t.Fatalf("a calculation: %d %+v", status, cands)
	}
	for i, c := range cands {
		if !mine[c.ID] {
			t.Errorf("%s is not usable by the client", c.ID)
		}
		if i > 0 && c.Score > cands[i-1].Score {
			t.Errorf("not best first: %+v", cands)
		}
	}
	if _, cands := ask(user, `{"task":"read the contents of a file","limit":2}`); len(cands) != 2 || cands[0].App != "files" {
		t.Errorf("limit 2: %+v", cands)
	}
	theirs := usable(public)
	_, cands = ask(public, `{"task":"delete a file"}`)
	for _, c := range cands {
		if !theirs[c.ID] {
			t.Errorf("a public client was offered %s", c.ID)
		}
	}
	for _, bad := range []string{`{}`, `{"task":""}`, `{"task":"x","limit":51}`, `{"task":"x","limit":-1}`, `{"task":"x","extra":1}`, `[]`} {
		if status, _ := ask(user, bad); status != 400 {
			t.Errorf("%s: %d, want 400", bad, status)
		}
	}
	if status, _ := e.do(agent{}, "POST", "/v1/plan/candidates", []byte(`{"task":"x"}`)); status != 401 {
		t.Errorf("without a key: %d", status)
	}
}

// What the person keeps to themselves is never a candidate: with a mandate of handoff for
// a permission (set on the mandates page), the capabilities needing it leave planning, over
// the IPC API and MCP alike, though they stay listed (a call hands off); a pattern mandate
// covers every permission under it, and removing the mandate brings them back.
func TestPlanLeavesOutWhatThePersonKeeps(t *testing.T) {
	e := newEnv(t, options{})
	a := e.addClient("planner", "user")
	const task = "write a note with this text"
	has := func(ids []string) bool { return contains(ids, "notes.org.example.notes.write") }
	if c := e.candidates(a, task); !has(c) {
		t.Fatalf("the note's write is not a candidate for %q: %v", task, c)
	}
	for _, perm := range []string{"app.notes.write", "app.notes.*"} {
		if err := e.g.Broker.PutMandate(e.ctx, store.Mandate{Permission: perm, Autonomy: "handoff", Updated: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if c := e.candidates(a, task); has(c) {
			t.Errorf("%s handed off: the write is still a candidate: %v", perm, c)
		}
		if c := e.mcpCandidates(a, task); contains(c, "notes.org.example.notes.write") || len(c) == 0 {
			t.Errorf("%s handed off: MCP's capgate__find_capabilities offers %v", perm, c)
		}
		if !contains(idsOf(e.listed(a, false)), "notes.org.example.notes.write") {
			t.Errorf("%s handed off: the write is no longer listed", perm)
		}
		if err := e.g.Broker.DeleteMandate(e.ctx, perm); err != nil {
			t.Fatal(err)
		}
	}
	if c := e.candidates(a, task); !has(c) {
		t.Errorf("the mandates removed: the write is not a candidate: %v", c)
	}
}

// mcpCandidates are the capability ids MCP's capgate__find_capabilities returns for task.
func (e *env) mcpCandidates(a agent, task string) []string {
	e.t.Helper()
	cs := e.mcpSession(a)
	defer cs.Close()
	res, err := cs.CallTool(e.ctx, &mcpsdk.CallToolParams{Name: "capgate__find_capabilities", Arguments: map[string]any{"task": task, "limit": 10}})
	if err != nil || res.IsError {
		e.t.Fatalf("capgate__find_capabilities: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var ans struct {
		Candidates []struct {
			Capability string `json:"capability"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		e.t.Fatalf("%s: %v", raw, err)
	}
	var ids []string
	for _, c := range ans.Candidates {
		ids = append(ids, c.Capability)
	}
	return ids
}

// TestCapabilitiesAllShowsNotWorking disables an app: GET /v1/capabilities leaves its
// capabilities out, ?all=1 shows them as not working right now with why, and planning never
// offers them.
func TestCapabilitiesAllShowsNotWorking(t *testing.T) {
	e := newEnv(t, options{})
	a := e.addClient("planner", "user")
	if err := e.g.Registry.SetEnabled(e.ctx, "org.capgate.calc", false); err != nil {
		t.Fatal(err)
	}
	list := func(path string) map[string][2]string {
		status, data := e.do(a, "GET", path, nil)
		if status != 200 {
			t.Fatalf("%s: %d %s", path, status, data)
		}
		var l struct {
			Capabilities []struct{ ID, Status, Why string }
		}
		if err := json.Unmarshal(data, &l); err != nil {
			t.Fatal(err)
		}
		out := map[string][2]string{}
		for _, c := range l.Capabilities {
			out[c.ID] = [2]string{c.Status, c.Why}
		}
		return out
	}
	const compute = "calc.org.capgate.calc.compute"
	if _, ok := list("/v1/capabilities")[compute]; ok {
		t.Error("a disabled app's capability is listed")
	}
	all := list("/v1/capabilities?all=1")
	if got := all[compute]; got[0] != "not working right now" || got[1] != "the app is disabled" {
		t.Errorf("?all=1: %q", got)
	}
	if got := all["files.org.capgate.files.read_file"]; got[0] != "" {
		t.Errorf("a working capability is marked %q", got)
	}
	status, data := e.do(a, "POST", "/v1/plan/candidates", []byte(`{"task":"evaluate the arithmetic expression 2*(3+4)"}`))
	if status != 200 || strings.Contains(string(data), compute) {
		t.Errorf("planning offered a disabled app's capability: %d %s", status, data)
	}
	if status, _ := e.do(a, "GET", "/v1/capabilities?all=yes", nil); status != 400 {
		t.Errorf("?all=yes: %d", status)
	}
}

// TestPlanRoute registers two providers of the ride definition, one on its API path and one
// through a browser (as the definition names them), and asks POST /v1/plan/route: the API
// comes first; with its app disabled the browser is chosen and the API is left out with why;
// with both disabled the route is a hand-off.
func TestPlanRoute(t *testing.T) { testPlanRoute(t, definition.Policy{}) }

// TestPlanRouteUnderPolicy is TestPlanRoute with a host policy that denies the API provider:
// the browser is chosen while both work.
func TestPlanRouteUnderPolicy(t *testing.T) {
	testPlanRoute(t, definition.Policy{Denied: []string{"com.example.rides"}})
}

// signRideDefinition puts the ride definition, signed with a key the data folder trusts
// for org.capgate, in the data folder's definitions.
func signRideDefinition(t *testing.T, dataDir string) {
	t.Helper()
	dir := filepath.Join(dataDir, gateway.DefinitionsFolder)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	pub, key, _ := ed25519.GenerateKey(nil)
	if err := keys.WritePublicKey(filepath.Join(dataDir, gateway.LocalTrustDir, "org.capgate.pub"), pub, true); err != nil {
		t.Fatal(err)
	}
	def, _, err := definition.ReadFile("../definition/testdata/ride.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	signed, _ := definition.Sign(def, key)
	if err := os.WriteFile(filepath.Join(dir, "ride.json"), signed, 0o600); err != nil {
		t.Fatal(err)
	}
}

// rideManifest is a provider of the ride definition: one capability that books a ride.
func rideManifest(appID string) string {
	return `{"app_id":"` + appID + `","version":"1.0.0","manifest_version":"1.0","capabilities":[{
			"id":"transport.` + appID + `.book","name":"Book","description":"Books a ride.","category":"APP_MANAGEMENT",
			"side_effects":"write","auth_level":"user","implements":"org.capgate.transport.ride.request@1.0",
			"parameters":{"type":"object","required":["pickup","destination"],"properties":{"pickup":{"type":"string"},"destination":{"type":"string"},"seats":{"type":"integer"}}},
			"returns":{"type":"object","required":["ride_id","status"],"properties":{"ride_id":{"type":"string"},"status":{"type":"string"}}}}]}`
}

// registerRide registers a provider of the ride definition (unsigned: Tier 2).
func (e *env) registerRide(appID string) registry.App {
	e.t.Helper()
	app, err := e.g.Registry.Register(e.ctx, []byte(rideManifest(appID)), "")
	if err != nil {
		e.t.Fatalf("%s: %v", appID, err)
	}
	return app
}

func testPlanRoute(t *testing.T, policy definition.Policy) {
	e := newEnv(t, options{providers: policy, before: func(dataDir string) { signRideDefinition(t, dataDir) }})
	e.registerRide("com.example.rides.web")
	e.registerRide("com.example.rides")
	a := e.addClient("planner", "user")
	route := func() definition.Route {
		t.Helper()
		status, data := e.do(a, "POST", "/v1/plan/route", []byte(`{"definition":"org.capgate.transport.ride.request@1.0"}`))
		var r definition.Route
		if status != 200 || json.Unmarshal(data, &r) != nil {
			t.Fatalf("route: %d %s", status, data)
		}
		return r
	}
	r := route()
	if len(policy.Denied) > 0 {
		if len(r.Order) != 1 || r.Path != definition.PathBrowser || len(r.Left) != 1 || r.Left[0].Why != "the host's policy does not take this provider" {
			t.Fatalf("under the policy: %+v", r)
		}
		return
	}
	if len(r.Order) != 2 || r.Order[0].Provider != "com.example.rides" || r.Path != definition.PathAPI || r.Order[1].Path != definition.PathBrowser {
		t.Fatalf("both working: %+v", r)
	}
	if err := e.g.Registry.SetEnabled(e.ctx, "com.example.rides", false); err != nil {
		t.Fatal(err)
	}
	r = route()
	if len(r.Order) != 1 || r.Path != definition.PathBrowser || len(r.Left) != 1 || r.Left[0].Why != "the app is disabled" {
		t.Fatalf("the API disabled: %+v", r)
	}
	if err := e.g.Registry.SetEnabled(e.ctx, "com.example.rides.web", false); err != nil {
		t.Fatal(err)
	}
	if r = route(); !r.Handoff || r.Path != definition.PathHandoff || len(r.Left) != 2 {
		t.Fatalf("nothing working: %+v", r)
	}
	for _, bad := range []string{`{"definition":"org.capgate.unknown.thing@1.0"}`, `{"definition":"nope"}`, `{}`} {
		if status, _ := e.do(a, "POST", "/v1/plan/route", []byte(bad)); status != 400 {
			t.Errorf("%s: %d", bad, status)
		}
	}
}

// rideApp books rides, and counts them.
type rideApp struct {
	doc   atomic.Pointer[manifest.Document]
	rides atomic.Int64
}

func (r *rideApp) Manifest() *manifest.Document { return r.doc.Load() }

func (r *rideApp) Invoke(context.Context, string, json.RawMessage, sdk.InvocationContext) (sdk.Result, error) {
	n := r.rides.Add(1)
	return sdk.Result{Success: true, Data: json.RawMessage(fmt.Sprintf(`{"ride_id":"r%d","status":"booked"}`, n))}, nil
}

// TestCallByDefinition calls the ride definition by meaning, POST /v1/plan/call: the API
// provider runs while it works, then, with it disabled, the browser one; each call is decided
// as any (a Tier 2 write: the person is asked) and its audit records name the path. With no
// provider working the answer is HANDOFF with what was prepared and why each was left out,
// recorded as a handoff, and nothing runs. A bad body says what is wrong.
func TestCallByDefinition(t *testing.T) {
	api, web := &rideApp{}, &rideApp{}
	e := newEnv(t, options{before: func(dataDir string) { signRideDefinition(t, dataDir) },
		handlers: map[string]sdk.Handler{"com.example.rides": api, "com.example.rides.web": web}})
	web.doc.Store(e.registerRide("com.example.rides.web").Doc)
	api.doc.Store(e.registerRide("com.example.rides").Doc)
	a := e.addClient("rider", "user")
	const body = `{"request_id":"ride-1","definition":"org.capgate.transport.ride.request@1.0","params":{"pickup":"Kadıköy","destination":"Beşiktaş"}}`
	call := func() ipc.Response {
		t.Helper()
		got := e.answerNext("call", func(ctx context.Context, id string) error { return e.g.Consent.Approve(ctx, id, "person", false) })
		status, data := e.do(a, "POST", "/v1/plan/call", []byte(body))
		var r ipc.Response
		if status != 200 || json.Unmarshal(data, &r) != nil {
			t.Fatalf("call: %d %s", status, data)
		}
		if id := <-got; id == "" {
			t.Fatal("the person was not asked")
		}
		if r.Body.Status == "success" {
			e.successes.Add(1) // held against the audit log at the end
		}
		return r
	}
	explained := func(callID string) []string {
		var out []string
		for _, rec := range gatewaytest.AuditRecords(t, e.g.Store) {
			if rec.CallID == callID {
				out = append(out, rec.Explanation)
			}
		}
		return out
	}
	r := call()
	wantOK(t, "by definition, the API working", r)
	if r.Body.Details["path"] != "api" || r.Body.Details["capability"] != "transport.com.example.rides.book" || api.rides.Load() != 1 || web.rides.Load() != 0 {
		t.Fatalf("the API working: %+v, %d %d rides", r.Body.Details, api.rides.Load(), web.rides.Load())
	}
	var callID string
	for _, rec := range gatewaytest.AuditRecords(t, e.g.Store) {
		if rec.Capability == "transport.com.example.rides.book" && rec.Kind == "outcome" {
			callID = rec.CallID
		}
	}
	recs := explained(callID)
	if len(recs) < 2 {
		t.Fatalf("the call's records: %q", recs)
	}
	for _, ex := range recs {
		if !strings.HasPrefix(ex, "by definition org.capgate.transport.ride.request@1.0 on the api path: ") {
			t.Errorf("a record of the call says %q", ex)
		}
	}

	if err := e.g.Registry.SetEnabled(e.ctx, "com.example.rides", false); err != nil {
		t.Fatal(err)
	}
	r = call()
	wantOK(t, "by definition, the API disabled", r)
	if r.Body.Details["path"] != "browser" || web.rides.Load() != 1 || api.rides.Load() != 1 {
		t.Fatalf("the API disabled: %+v", r.Body.Details)
	}

	if err := e.g.Registry.SetEnabled(e.ctx, "com.example.rides.web", false); err != nil {
		t.Fatal(err)
	}
	status, data := e.do(a, "POST", "/v1/plan/call", []byte(body))
	r = ipc.Response{}
	if err := json.Unmarshal(data, &r); status != 200 || err != nil {
		t.Fatalf("nothing working: %d %s", status, data)
	}
	wantCode(t, "nothing working", r, "HANDOFF")
	prepared, _ := r.Body.Details["prepared"].(map[string]any)
	left, _ := r.Body.Details["left"].([]any)
	if r.Body.Details["decision"] != "handoff" || r.Body.Details["path"] != "handoff" || prepared["definition"] != "org.capgate.transport.ride.request@1.0" || len(left) != 2 {
		t.Fatalf("nothing working: %+v", r.Body.Details)
	}
	if p, _ := prepared["params"].(map[string]any); p["pickup"] != "Kadıköy" {
		t.Errorf("prepared: %+v", prepared)
	}
	if api.rides.Load()+web.rides.Load() != 2 {
		t.Error("a provider ran on a handoff")
	}
	recs = explained(r.Body.Details["call_id"].(string))
	if len(recs) != 1 || !strings.HasPrefix(recs[0], "by definition org.capgate.transport.ride.request@1.0 on the handoff path: ") {
		t.Errorf("the handoff's records: %q", recs)
	}
	for _, rec := range gatewaytest.AuditRecords(t, e.g.Store) {
		if rec.CallID == r.Body.Details["call_id"] && (rec.Decision != "handoff" || rec.Code != "HANDOFF" || rec.ParamsHash == "") {
			t.Errorf("the handoff's record: %+v", rec)
		}
	}

	for _, bad := range []string{`{}`, `{"definition":"nope"}`, `{"definition":"org.capgate.unknown.thing@1.0"}`,
		`{"definition":"org.capgate.transport.ride.request@1.0","params":[]}`, `{"definition":"org.capgate.transport.ride.request@1.0","extra":1}`,
		`{"definition":"org.capgate.transport.ride.request@1.0","request_id":"bad id"}`, `{"definition":"org.capgate.transport.ride.request@1.0","params":{"a":1,"a":2}}`} {
		if status, _ := e.do(a, "POST", "/v1/plan/call", []byte(bad)); status != 400 {
			t.Errorf("%s: %d", bad, status)
		}
	}
	if status, _ := e.do(agent{}, "POST", "/v1/plan/call", []byte(body)); status != 401 {
		t.Errorf("without a key: %d", status)
	}
}

// The definitions of the host's plugin ports (the ports folder's definitions) are loaded
// beside the definitions folder's, as one set: a capability of a port implements them, a
// client negotiates them; a port's definition also in the definitions folder is a duplicate,
// left out, and the first kept.
func TestPortDefinitionsLoaded(t *testing.T) {
	ports := t.TempDir()
	e := newEnv(t, options{portsDir: ports, before: func(dataDir string) {
		signRideDefinition(t, dataDir)
		if err := os.MkdirAll(filepath.Join(ports, gateway.DefinitionsFolder), 0o700); err != nil {
			t.Fatal(err)
		}
		// The port's own definition, signed with the org.capgate key signRideDefinition
		// trusted, and the ride definition again (a duplicate).
		pub, key, _ := ed25519.GenerateKey(nil)
		if err := keys.WritePublicKey(filepath.Join(dataDir, gateway.LocalTrustDir, "org.capgate.d", "ports.pub"), pub, true); err != nil {
			t.Fatal(err)
		}
		def, _, err := definition.ReadFile("../definition/testdata/ride.yaml", "")
		if err != nil {
			t.Fatal(err)
		}
		signed, _ := definition.Sign(def, key)
		if err := os.WriteFile(filepath.Join(ports, gateway.DefinitionsFolder, "ride-again.json"), signed, 0o600); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile("../definition/testdata/ride.yaml")
		if err != nil {
			t.Fatal(err)
		}
		other := strings.Replace(string(raw), "org.capgate.transport.ride.request", "org.capgate.transport.ride.cancel", 1)
		path := filepath.Join(t.TempDir(), "cancel.yaml")
		if err := os.WriteFile(path, []byte(other), 0o600); err != nil {
			t.Fatal(err)
		}
		cancelDef, ps, err := definition.ReadFile(path, "")
		if err != nil || len(ps) > 0 {
			t.Fatalf("%v %v", ps, err)
		}
		signed, _ = definition.Sign(cancelDef, key)
		if err := os.WriteFile(filepath.Join(ports, gateway.DefinitionsFolder, "cancel.json"), signed, 0o600); err != nil {
			t.Fatal(err)
		}
	}})
	for _, ref := range []string{"org.capgate.transport.ride.request@1.2", "org.capgate.transport.ride.cancel@1.2"} {
		if e.g.Definitions.Get(ref) == nil {
			t.Errorf("%s is not loaded", ref)
		}
	}
	if n := len(e.g.Definitions.All()); n != 2 {
		t.Errorf("%d definitions loaded, want 2 (the duplicate left out)", n)
	}
	a := e.addClient("planner", "user")
	status, data := e.do(a, "POST", "/v1/definitions/negotiate", []byte(`{"supports":["org.capgate.transport.ride.cancel@1.2"]}`))
	if status != 200 || !strings.Contains(string(data), `"org.capgate.transport.ride.cancel"`) {
		t.Errorf("negotiate: %d %s", status, data)
	}
}
