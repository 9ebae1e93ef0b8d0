package gateway_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

const notesID = "org.example.notes"

// notesManifest is the test app: a public search, a read that fails on a missing note, a
// reversible write, a destructive delete with an undo window, an irreversible publish, a run
// with a command param and two path params, all classified ("format": "command", "path"),
// a slow public read with a 50 ms timeout, and a privileged admin read.
const notesManifest = `{"app_id":"org.example.notes","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"notes.org.example.notes.search","name":"Search notes","description":"Finds notes by their text.","category":"TEXT_QUERY",
  "parameters":{"type":"object","required":["query"],"properties":{"query":{"type":"string","format":"text"}},"additionalProperties":false},
  "returns":{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string"}}}},"side_effects":"read","auth_level":"public"},
 {"id":"notes.org.example.notes.read","name":"Read a note","description":"Reads one note.","category":"STATE_QUERY",
  "parameters":{"type":"object","required":["id"],"additionalProperties":false,"properties":{"id":{"type":"string","format":"text"}}},"returns":{"type":"object"},
  "side_effects":"read","permission":"app.notes.read"},
 {"id":"notes.org.example.notes.write","name":"Write a note","description":"Writes a note.","category":"TEXT_INPUT",
  "parameters":{"type":"object","required":["id","text"],"properties":{"id":{"type":"string","format":"text"},"text":{"type":"string","format":"text"}},"additionalProperties":false},
  "returns":{"type":"object"},"side_effects":"write","permission":"app.notes.write","undo_window_ms":60000},
 {"id":"notes.org.example.notes.delete","name":"Delete a note","description":"Deletes a note.","category":"FILE_OPERATION",
  "parameters":{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}},"returns":{"type":"object"},
  "side_effects":"destructive","undo_window_ms":60000,"permission":"app.notes.delete"},
 {"id":"notes.org.example.notes.publish","name":"Publish","description":"Publishes a note; cannot be taken back.","category":"COMMUNICATION",
  "parameters":{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}},"returns":{"type":"object"},
  "side_effects":"write","permission":"app.notes.publish"},
 {"id":"notes.org.example.notes.run","name":"Run","description":"Runs a command over the notes.","category":"SYSTEM",
  "parameters":{"type":"object","required":["command"],"additionalProperties":false,"properties":{"command":{"type":"string","format":"command"},"path":{"type":"string","format":"path"},"dest":{"type":"string","format":"path"}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.notes.run"},
 {"id":"notes.org.example.notes.slow","name":"Slow","description":"Takes its time.","category":"STATE_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","auth_level":"public","timeout_ms":50},
 {"id":"notes.org.example.notes.admin","name":"Admin","description":"Reads the notes' internals.","category":"STATE_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","auth_level":"privileged","permission":"app.notes.admin"}
]}`

// ghostManifest is an app registered without a handler: it is installed but not running.
const ghostManifest = `{"app_id":"org.example.ghost","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"ghost.org.example.ghost.ping","name":"Ping","description":"Answers.","category":"STATE_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","auth_level":"public"}
]}`

// notesApp is a real little app on its own data model: a map of notes. It counts every
// invocation by action, so a test can say that a refused call never reached it.
type notesApp struct {
	doc atomic.Pointer[manifest.Document]

	mu        sync.Mutex
	notes     map[string]string
	trash     map[string]string
	published map[string]bool
	calls     map[string]int
}

func newNotesApp() *notesApp {
	return &notesApp{notes: map[string]string{"1": "milk", "2": "bread", "3": "eggs"}, trash: map[string]string{},
		published: map[string]bool{}, calls: map[string]int{}}
}

func (n *notesApp) Manifest() *manifest.Document { return n.doc.Load() }

func (n *notesApp) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	var p struct{ Query, ID, Text, Command, Path string }
	if err := json.Unmarshal(params, &p); err != nil {
		return sdk.Result{}, sdk.InvalidParams(nil)
	}
	action := id[len("notes.org.example.notes."):]
	n.mu.Lock()
	n.calls[action]++
	n.mu.Unlock()
	if action == "slow" {
		<-ctx.Done()
		return sdk.Result{}, ctx.Err()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	ok := func(v any) (sdk.Result, error) {
		data, _ := json.Marshal(v)
		return sdk.Result{Success: true, Data: data}, nil
	}
	switch action {
	case "search":
		ids := []string{}
		for k, v := range n.notes {
			if v == p.Query {
				ids = append(ids, k)
			}
		}
		slices.Sort(ids)
		return ok(map[string]any{"ids": ids})
	case "read":
		v, found := n.notes[p.ID]
		if !found {
			return sdk.Result{}, sdk.ExecutionFailed("no such note", false)
		}
		return ok(map[string]any{"text": v})
	case "write":
		n.notes[p.ID] = p.Text
		return ok(map[string]any{})
	case "delete":
		v, found := n.notes[p.ID]
		if !found {
			return sdk.Result{}, sdk.ExecutionFailed("no such note", false)
		}
		delete(n.notes, p.ID)
		n.trash[p.ID] = v
		return sdk.Result{Success: true, Data: json.RawMessage(`{}`), UndoToken: "restore:" + p.ID}, nil
	case "publish":
		n.published[p.ID] = true
		return ok(map[string]any{})
	case "run", "admin":
		return ok(map[string]any{"ran": true})
	}
	return sdk.Result{}, sdk.NotFound(id)
}

func (n *notesApp) Undo(ctx context.Context, id, undoToken string, ic sdk.InvocationContext) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := undoToken[len("restore:"):]
	n.notes[key] = n.trash[key]
	delete(n.trash, key)
	return nil
}

// count is how many times the action was invoked.
func (n *notesApp) count(action string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[action]
}

// total is how many times the notes app was invoked, whatever the capability.
func (n *notesApp) total() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := 0
	for _, c := range n.calls {
		s += c
	}
	return s
}

func (n *notesApp) note(id string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.notes[id]
	return v, ok
}

// options of a test gateway; zero durations take the test defaults below.
type options struct {
	consentTTL    time.Duration          // default: the gateway's (5 minutes)
	consentWait   time.Duration          // default 5 s
	delayedCommit time.Duration          // default none
	logLevel      slog.Level             // the level of capgate's own log (default info); it goes nowhere but the syslog ring
	requireToken  bool                   // the host requires a token for every call
	handlers      map[string]sdk.Handler // more apps' handlers, beside the notes app's
	before        func(dataDir string)   // prepares the data folder before the gateway opens it
	providers     definition.Policy      // the host's rule on providers (ProviderPolicy)
	suites        *port.Registry         // the host's kit index, which the evaluations run
	portsDir      string                 // the host's ports folder, whose definitions are loaded
}

// env is one gateway opened on its own data folder, the notes app registered at Tier 1 with a
// key the test trusts, and its HTTP API served by httptest. At the end of the test it is
// closed, and its audit log is verified and checked against the answers the test saw.
type env struct {
	t       *testing.T
	ctx     context.Context
	g       *gateway.Gateway
	srv     *httptest.Server
	dataDir string
	trusted string
	appKey  ed25519.PrivateKey
	app     *notesApp

	reqSeq    atomic.Int64
	successes atomic.Int64 // execute/query calls answered with success

	mu      sync.Mutex
	refused []string // call ids of calls answered with an error
	secrets []string // client keys and token wire forms: never in an answer's audit record
}

func newEnv(t *testing.T, o options) *env {
	t.Helper()
	if o.consentWait == 0 {
		o.consentWait = 5 * time.Second
	}
	if o.delayedCommit == 0 {
		o.delayedCommit = -1
	}
	ctx := context.Background()
	e := &env{t: t, ctx: ctx, dataDir: t.TempDir(), trusted: t.TempDir(), app: newNotesApp()}
	e.appKey = gatewaytest.NewKey(t)
	if o.before != nil {
		o.before(e.dataDir)
	}
	handlers := map[string]sdk.Handler{notesID: e.app}
	for id, h := range o.handlers {
		handlers[id] = h
	}
	var err error
	e.g, err = gateway.Open(ctx, gateway.Config{
		DataDir: e.dataDir, Listen: "-", Socket: "-", TrustedDir: e.trusted, RequireToken: o.requireToken,
		Handlers:   handlers,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: o.logLevel})),
		ConsentTTL: o.consentTTL, ConsentWait: o.consentWait, DelayedCommit: o.delayedCommit,
		ProviderPolicy: o.providers, Suites: o.suites, PortsDir: o.portsDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	app := e.register(notesID, notesManifest, "notes")
	e.app.doc.Store(app.Doc)
	e.srv = httptest.NewServer(e.g.Handler())
	t.Cleanup(e.closeAndVerify)
	return e
}

// sandboxEnv is the env of a parallel test that runs terminal commands or python scripts,
// with the user client name: without an enforcing sandbox the test is skipped (failed in CI).
func sandboxEnv(t *testing.T, o options, name string) (*env, agent) {
	t.Helper()
	sandboxtest.Open(t)
	t.Parallel()
	e := newEnv(t, o)
	return e, e.addClient(name, "user")
}

// register signs the manifest with the app key, trusts its public half for appID, and
// registers it; it must come out at Tier 1.
func (e *env) register(appID, doc, alias string) registry.App {
	e.t.Helper()
	app := gatewaytest.Register(e.t, e.g.Registry, e.trusted, e.appKey, doc, alias)
	if string(app.Doc.Manifest().AppID) != appID {
		e.t.Fatalf("registered %s, want %s", app.Doc.Manifest().AppID, appID)
	}
	return app
}

// closeAndVerify stops serving, closes the gateway (a final checkpoint), reopens its store
// and checks the audit log: it verifies with the gateway's key; every call answered with
// success has an outcome record with result success, itself preceded by an allow decision
// of the same call; every refused call has a record; and no record holds a client key or a
// token.
func (e *env) closeAndVerify() {
	t := e.t
	e.srv.Close()
	pub := e.g.PublicKey()
	if err := e.g.Close(); err != nil {
		t.Errorf("closing the gateway: %v", err)
	}
	st, err := sqlite.Open(e.ctx, filepath.Join(e.dataDir, gateway.DBFile))
	if err != nil {
		t.Fatalf("reopening the store: %v", err)
	}
	defer st.Close()
	rep, err := audit.Verify(e.ctx, st, pub)
	if err != nil || !rep.OK() {
		t.Fatalf("audit verify: %+v %v", rep, err)
	}
	if rep.LastCheckpointSeq != rep.Entries {
		t.Errorf("the final checkpoint covers %d of %d entries", rep.LastCheckpointSeq, rep.Entries)
	}
	entries, err := st.AuditRange(e.ctx, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	seen := map[string]bool{}
	successes := int64(0)
	e.mu.Lock()
	secrets := slices.Clone(e.secrets)
	refused := slices.Clone(e.refused)
	e.mu.Unlock()
	for _, en := range entries {
		r, err := audit.DecodeRecord(en.Body)
		if err != nil {
			t.Fatalf("seq %d: %v", en.Seq, err)
		}
		for _, s := range secrets {
			if bytes.Contains(en.Body, []byte(s)) {
				t.Errorf("seq %d holds a client key or a token", en.Seq)
			}
		}
		seen[r.CallID] = true
		switch {
		case r.Kind == audit.KindDecision && r.Decision == audit.DecisionAllow:
			allowed[r.CallID] = true
		case r.Kind == audit.KindOutcome && r.Result == "success" && (r.Action == "execute" || r.Action == "query"):
			successes++
			if !allowed[r.CallID] {
				t.Errorf("seq %d: the outcome of %s has no allow decision before it", en.Seq, r.CallID)
			}
		}
	}
	if want := e.successes.Load(); successes != want {
		t.Errorf("%d success outcomes in the audit log, %d calls answered with success", successes, want)
	}
	for _, id := range refused {
		if !seen[id] {
			t.Errorf("refused call %s has no audit record", id)
		}
	}
}

// agent is a client of the gateway.
type agent struct {
	ID, Name, Key string
}

// addClient adds a client through the store, as `capgate client add` does.
func (e *env) addClient(name string, trust manifest.AuthLevel) agent {
	e.t.Helper()
	return e.putClientAs(store.Client{Name: name, Trust: trust})
}

// putClientAs adds the client c, whose id is "cl_" and its name, with a new key, as `capgate
// client add` does.
func (e *env) putClientAs(c store.Client) agent {
	e.t.Helper()
	c.ID = "cl_" + c.Name
	a := agent{ID: c.ID, Name: c.Name, Key: gatewaytest.AddClient(e.t, e.g.Store, c)}
	e.secret(a.Key)
	return a
}

func (e *env) putClient(a agent, trust manifest.AuthLevel) {
	e.t.Helper()
	if err := e.g.Store.PutClient(e.ctx, store.Client{ID: a.ID, Name: a.Name, KeyHash: ipc.KeyHash(a.Key), Trust: trust, Created: time.Now()}); err != nil {
		e.t.Fatal(err)
	}
	e.secret(a.Key)
}

func (e *env) secret(s string) {
	e.mu.Lock()
	e.secrets = append(e.secrets, s)
	e.mu.Unlock()
}

// do sends one HTTP request as a (no Authorization header when a.Key is empty).
func (e *env) do(a agent, method, path string, body []byte) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if a.Key != "" {
		req.Header.Set("Authorization", "Bearer "+a.Key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Error(err)
	}
	return resp.StatusCode, data
}

func (e *env) nextRequestID() string { return "req-" + strconv.FormatInt(e.reqSeq.Add(1), 10) }

// envelope is an llm_request to the app's method with params (JSON text) and a token.
func envelope(requestID, app, method, params, tok string) []byte {
	return envelopeAction(requestID, "execute", app, method, params, tok)
}

// envelopeAction is envelope with the body's action: execute or query.
func envelopeAction(requestID, action, app, method, params, tok string) []byte {
	body := map[string]any{"action": action, "app": app, "method": method, "params": json.RawMessage(params)}
	if tok != "" {
		body["capability_token"] = tok
	}
	data, _ := json.Marshal(map[string]any{
		"header": map[string]any{"msg_type": "llm_request", "version": "1.0", "request_id": requestID, "timestamp": time.Now().Unix()},
		"body":   body,
	})
	return data
}

// ipcRaw posts an envelope to /v1/ipc and decodes the answer; a success or an error with a
// call id is remembered for the audit check at the end.
func (e *env) ipcRaw(a agent, data []byte) (int, ipc.Response) {
	e.t.Helper()
	status, raw := e.do(a, "POST", "/v1/ipc", data)
	var resp ipc.Response
	if status == 0 {
		return 0, resp
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		e.t.Errorf("answer is not JSON: %v: %s", err, raw)
		return status, resp
	}
	if resp.Header.MsgType != ipc.MsgResponse || resp.Header.Version != ipc.Version {
		e.t.Errorf("answer header: %+v", resp.Header)
	}
	var sent struct{ Body struct{ Action string } }
	_ = json.Unmarshal(data, &sent)
	switch resp.Body.Status {
	case "success":
		if sent.Body.Action == "execute" || sent.Body.Action == "query" {
			e.successes.Add(1)
		}
	case "error":
		if id, _ := resp.Body.Details["call_id"].(string); id != "" {
			e.mu.Lock()
			e.refused = append(e.refused, id)
			e.mu.Unlock()
		}
	default:
		e.t.Errorf("answer status %q", resp.Body.Status)
	}
	return status, resp
}

// callApp calls app's method through POST /v1/ipc; the answer must be HTTP 200 and carry the
// request's id.
func (e *env) callApp(a agent, app, method, params, tok string) ipc.Response {
	e.t.Helper()
	return e.callAction(a, "execute", app, method, params, tok)
}

// query is callApp with the action query, as the token document's examples send reads.
func (e *env) query(a agent, app, method, params, tok string) ipc.Response {
	e.t.Helper()
	return e.callAction(a, "query", app, method, params, tok)
}

// callAction is callApp with the body's action.
func (e *env) callAction(a agent, action, app, method, params, tok string) ipc.Response {
	e.t.Helper()
	id := e.nextRequestID()
	status, resp := e.ipcRaw(a, envelopeAction(id, action, app, method, params, tok))
	if status != http.StatusOK {
		e.t.Errorf("%s.%s: HTTP %d", app, method, status)
	}
	if resp.Header.RequestID != id {
		e.t.Errorf("%s.%s: answer request_id %q, want %q", app, method, resp.Header.RequestID, id)
	}
	return resp
}

// call calls a method of the notes app.
func (e *env) call(a agent, method, params, tok string) ipc.Response {
	e.t.Helper()
	return e.callApp(a, "notes", method, params, tok)
}

// undo sends {"action": "undo", "undo_token": ...} through POST /v1/ipc as a.
func (e *env) undo(a agent, undoToken string) ipc.Response {
	e.t.Helper()
	id := e.nextRequestID()
	data, _ := json.Marshal(map[string]any{
		"header": map[string]any{"msg_type": "llm_request", "version": "1.0", "request_id": id},
		"body":   map[string]any{"action": "undo", "undo_token": undoToken},
	})
	status, resp := e.ipcRaw(a, data)
	if status != http.StatusOK || resp.Header.RequestID != id {
		e.t.Errorf("undo: HTTP %d, request_id %q", status, resp.Header.RequestID)
	}
	return resp
}

// undoStateApp is the store's state namespace where the broker keeps its undo records, each
// under its undo token: {"app_id", "capability", "client_id", "handler_token", "until"}, until
// being the end of the call's undo window in Unix milliseconds (internal/broker/undo.go).
const undoStateApp = "capgate.undo"

// expireUndo moves the end of an undo token's window into the past, as the passing of time
// would. The built-in apps' windows come from their signed manifests (one to ten minutes) and
// the broker's clock is not the test's to set, so the record in the store is what moves.
func (e *env) expireUndo(undoToken string) {
	e.t.Helper()
	raw, err := e.g.Store.GetState(e.ctx, undoStateApp, undoToken)
	if err != nil {
		e.t.Fatalf("the undo record: %v", err)
	}
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil || rec["until"] == nil {
		e.t.Fatalf("the undo record is not what the test knows: %s (%v)", raw, err)
	}
	rec["until"] = time.Now().Add(-time.Second).UnixMilli()
	raw, _ = json.Marshal(rec)
	if err := e.g.Store.PutState(e.ctx, undoStateApp, undoToken, raw); err != nil {
		e.t.Fatal(err)
	}
}

// wantOK fails unless the answer is a success.
func wantOK(t *testing.T, what string, r ipc.Response) {
	t.Helper()
	if r.Body.Status != "success" {
		t.Fatalf("%s: %s %s: %s", what, r.Body.Status, r.Body.ErrorCode, r.Body.ErrorMessage)
	}
}

// wantCode fails unless the answer is an error with code.
func wantCode(t *testing.T, what string, r ipc.Response, code string) {
	t.Helper()
	if r.Body.Status != "error" || r.Body.ErrorCode != code {
		t.Errorf("%s: %s %q (%s), want error %s", what, r.Body.Status, r.Body.ErrorCode, r.Body.ErrorMessage, code)
	}
	if r.Body.Status == "error" && len(r.Body.Result) > 0 {
		t.Errorf("%s: a refused call carries a result", what)
	}
}

// answer is the JSON answer of the token endpoints.
type answer struct {
	Status       string          `json:"status"`
	Token        string          `json:"token"`
	TokenID      string          `json:"token_id"`
	ExpiresAt    int64           `json:"expires_at"`
	ConsentID    string          `json:"consent_id"`
	ErrorCode    string          `json:"error_code"`
	ErrorMessage string          `json:"error_message"`
	Consent      *ipc.ConsentRef `json:"consent"`
}

func (e *env) postJSON(a agent, path string, body any) (int, answer) {
	e.t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	status, raw := e.do(a, "POST", path, data)
	var ans answer
	if status != 0 {
		if err := json.Unmarshal(raw, &ans); err != nil {
			e.t.Errorf("%s: answer is not JSON: %v: %s", path, err, raw)
		}
	}
	if ans.Token != "" {
		e.secret(ans.Token)
	}
	return status, ans
}

// requestToken is POST /v1/capabilities/request.
func (e *env) requestToken(a agent, body map[string]any) (int, answer) {
	e.t.Helper()
	return e.postJSON(a, "/v1/capabilities/request", body)
}

// mustToken requests a token that needs no consent (low-risk grants).
func (e *env) mustToken(a agent, body map[string]any) answer {
	e.t.Helper()
	status, ans := e.requestToken(a, body)
	if status != http.StatusOK || ans.Status != "success" || ans.Token == "" {
		e.t.Fatalf("token request %v: HTTP %d %+v", body, status, ans)
	}
	return ans
}

// approvedToken requests a token that needs consent, and approves it as the person would.
func (e *env) approvedToken(a agent, body map[string]any) answer {
	e.t.Helper()
	got := e.answerNext("token", func(ctx context.Context, id string) error { return e.g.Consent.Approve(ctx, id, "person", false) })
	status, ans := e.requestToken(a, body)
	if id := <-got; id == "" || status != http.StatusOK || ans.Token == "" || ans.ConsentID != id {
		e.t.Fatalf("approved token request %v: HTTP %d %+v (consent %q)", body, status, ans, id)
	}
	return ans
}

// derive is POST /v1/tokens/derive.
func (e *env) derive(a agent, body map[string]any) (int, answer) {
	e.t.Helper()
	return e.postJSON(a, "/v1/tokens/derive", body)
}

// revoke is POST /v1/tokens/revoke.
func (e *env) revoke(a agent, tok string) (int, answer) {
	e.t.Helper()
	return e.postJSON(a, "/v1/tokens/revoke", map[string]string{"token": tok})
}

// mint signs a token with key and records it in the gateway's store, as an issuer would: the
// way to build tokens the API never hands out (expired ones, forged ones).
func (e *env) mint(clientID string, grants []string, cons token.Constraints, issued, expires time.Time, key ed25519.PrivateKey) string {
	e.t.Helper()
	tok := token.Token{ID: token.NewID(), IssuedAt: issued.Unix(), ExpiresAt: expires.Unix(), Capabilities: grants,
		Constraints: cons, ClientID: clientID, AuditTag: "minted by the test"}
	wire := gatewaytest.Mint(e.t, e.g.Store, tok, key, issued, expires)
	e.secret(wire)
	return wire
}

// answerNext answers the next consent request of kind that becomes pending (any pending
// already are left alone) with answer, from its own goroutine, as the approval surface
// would. The channel yields the request's id, or "" when none came within 10 s, which fails
// the test.
func (e *env) answerNext(kind string, answer func(ctx context.Context, id string) error) <-chan string {
	e.t.Helper()
	answered := gatewaytest.AnswerNext(e.t, e.g.Store, kind, answer)
	got := make(chan string, 1)
	go func() {
		id := <-answered
		if id == "" {
			e.t.Errorf("no %s consent request became pending", kind)
		}
		got <- id
	}()
	return got
}

// consentState is the state of the consent request in the store.
func (e *env) consentState(id string) store.Consent {
	e.t.Helper()
	c, err := e.g.Store.GetConsent(e.ctx, id)
	if err != nil {
		e.t.Fatalf("consent %s: %v", id, err)
	}
	return c
}
