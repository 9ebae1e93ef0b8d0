package a2a_test

// The A2A front tested through the SDK's own client (a2aclient over the JSON-RPC transport,
// authenticated by its AuthInterceptor from the card's security scheme) against a real
// gateway (SQLite store, registry with the built-in apps and a test app, tokens, consent,
// audit, broker) opened on a temporary data folder and served by httptest, as another
// assistant would reach `capgate serve`. The person answers consent requests through the
// consent service, as the approval page does.

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

const echoID = "org.example.echo"

// echoManifest is a small test app beside the built-ins: a public low-risk read without side
// effects, which any client may run without a token, and whose result is the text it was
// given: the content that must never go back to the other assistant.
const echoManifest = `{"app_id":"org.example.echo","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"echo.org.example.echo.say","name":"Say","description":"Says the text back.","category":"TEXT_QUERY",
  "parameters":{"type":"object","required":["text"],"properties":{"text":{"type":"string","maxLength":100}},"additionalProperties":false},
  "returns":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}},"side_effects":"none","auth_level":"public","risk":"low"}
]}`

const sayID = "echo.org.example.echo.say"

type echoApp struct{ doc *manifest.Document }

func (a *echoApp) Manifest() *manifest.Document { return a.doc }

func (a *echoApp) Invoke(_ context.Context, _ string, params json.RawMessage, _ sdk.InvocationContext) (sdk.Result, error) {
	var p struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(params, &p)
	out, _ := json.Marshal(map[string]string{"text": p.Text})
	return sdk.Result{Success: true, Data: out}, nil
}

type env struct {
	t       *testing.T
	ctx     context.Context
	g       *gateway.Gateway
	srv     *httptest.Server
	dataDir string
	trusted string
	appKey  ed25519.PrivateKey
	cfg     gateway.Config
}

// newEnv opens a gateway whose calls wait consentWait for the person before the broker
// answers CONSENT_REQUIRED (the A2A task then waits for the same request again), and whose
// consent requests expire after ttl.
func newEnv(t *testing.T, consentWait, ttl time.Duration) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), dataDir: t.TempDir(), trusted: t.TempDir(), appKey: gatewaytest.NewKey(t)}
	e.cfg = gateway.Config{
		DataDir: e.dataDir, Listen: "-", Socket: "-", TrustedDir: e.trusted,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		ConsentWait: consentWait, ConsentTTL: ttl, DelayedCommit: -1,
	}
	e.open(true)
	t.Cleanup(e.close)
	return e
}

// open opens the gateway on e's data folder and serves it; register registers the echo app
// (a reopened gateway finds it in its store).
func (e *env) open(register bool) {
	e.t.Helper()
	echo := &echoApp{}
	cfg := e.cfg
	cfg.Handlers = map[string]sdk.Handler{echoID: echo}
	g, err := gateway.Open(e.ctx, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if register {
		echo.doc = gatewaytest.Register(e.t, g.Registry, e.trusted, e.appKey, echoManifest, "echo").Doc
	} else if app, ok := g.Registry.App(echoID); ok {
		echo.doc = app.Doc
	}
	e.g, e.srv = g, httptest.NewServer(g.Handler())
}

// close closes the gateway and its server, if open.
func (e *env) close() {
	if e.g == nil {
		return
	}
	e.srv.Close()
	if err := e.g.Close(); err != nil {
		e.t.Error(err)
	}
	e.g, e.srv = nil, nil
}

// restart closes the gateway (its running tasks end as failed) and opens a new one on the
// same data folder, as `capgate serve` started again would.
func (e *env) restart() {
	e.t.Helper()
	e.close()
	e.open(false)
}

// addClient adds a client through the store, as `capgate client add` does, and returns its key.
func (e *env) addClient(name string, trust manifest.AuthLevel, neverAsk bool) string {
	e.t.Helper()
	return gatewaytest.AddClient(e.t, e.g.Store, store.Client{ID: "cl_" + name, Name: name, Trust: trust, NeverAsk: neverAsk})
}

// bearer adds a key to every request, for the raw HTTP requests the SDK's client cannot make.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// card resolves capgate's agent card as an A2A client finds it, at the well-known path.
func (e *env) card() *a2asdk.AgentCard {
	e.t.Helper()
	card, err := agentcard.NewResolver(e.srv.Client()).Resolve(e.ctx, e.srv.URL)
	if err != nil {
		e.t.Fatalf("resolving the card: %v", err)
	}
	return card
}

// agent is another assistant connected to capgate with the SDK's client.
type agent struct {
	e   *env
	c   *a2aclient.Client
	ctx context.Context // carries the session whose credential is the client key
}

// connect makes an A2A client from capgate's card, with key as the credential of the card's
// security scheme (the SDK's AuthInterceptor puts it in the Authorization header); polling
// makes its message/send non-blocking.
func (e *env) connect(key string, polling bool) *agent {
	e.t.Helper()
	card := e.card()
	creds := a2aclient.NewInMemoryCredentialsStore()
	creds.Set("test-session", "clientKey", a2aclient.AuthCredential(key))
	c, err := a2aclient.NewFromCard(e.ctx, card,
		a2aclient.WithJSONRPCTransport(e.srv.Client()),
		a2aclient.WithConfig(a2aclient.Config{Polling: polling}),
		a2aclient.WithInterceptors(&a2aclient.AuthInterceptor{Service: creds}))
	if err != nil {
		e.t.Fatalf("connecting: %v", err)
	}
	return &agent{e: e, c: c, ctx: a2aclient.WithSessionID(e.ctx, "test-session")}
}

// give gives a task of one data part with data, and returns the task answered.
func (a *agent) give(data map[string]any) (*a2asdk.Task, error) {
	res, err := a.c.SendMessage(a.ctx, &a2asdk.MessageSendParams{Message: a2asdk.NewMessage(a2asdk.MessageRoleUser, a2asdk.DataPart{Data: data})})
	if err != nil {
		return nil, err
	}
	task, ok := res.(*a2asdk.Task)
	if !ok {
		a.e.t.Fatalf("message/send answered %T, want a task", res)
	}
	return task, nil
}

// mustGive is give, failing the test on an error.
func (a *agent) mustGive(capability string, params map[string]any) *a2asdk.Task {
	a.e.t.Helper()
	task, err := a.give(map[string]any{"capability": capability, "params": params})
	if err != nil {
		a.e.t.Fatalf("giving %s: %v", capability, err)
	}
	return task
}

func (a *agent) get(id a2asdk.TaskID) (*a2asdk.Task, error) {
	return a.c.GetTask(a.ctx, &a2asdk.TaskQueryParams{ID: id})
}

// until asks for the task's status until its state is want, for at most 10 s.
func (a *agent) until(id a2asdk.TaskID, want a2asdk.TaskState) *a2asdk.Task {
	a.e.t.Helper()
	var task *a2asdk.Task
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if task, err = a.get(id); err == nil && task.Status.State == want {
			return task
		}
	}
	a.e.t.Fatalf("task %s: %v (err %v), want %s", id, state(task), err, want)
	return nil
}

func state(t *a2asdk.Task) a2asdk.TaskState {
	if t == nil {
		return ""
	}
	return t.Status.State
}

// rpc posts a raw JSON-RPC request with key ("" for none) and returns the HTTP status and
// the body.
func (e *env) rpc(key, body string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, e.srv.URL+"/a2a", strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Transport: bearer{key}}).Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.StatusCode, b
}

// rpcError is a JSON-RPC error response's error.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// wantRPCError checks that body is a JSON-RPC error of code whose text names what.
func wantRPCError(t *testing.T, name string, body []byte, code int, what string) {
	t.Helper()
	var res struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(body, &res); err != nil || res.Error == nil {
		t.Fatalf("%s: not a JSON-RPC error (%v): %s", name, err, body)
	}
	if res.Result != nil {
		t.Errorf("%s: an error with a result: %s", name, body)
	}
	text, _ := res.Error.Data["error"].(string)
	if res.Error.Code != code || !strings.Contains(text, what) {
		t.Errorf("%s: error %d %q, want %d naming %q", name, res.Error.Code, text, code, what)
	}
}

// wantErr checks that err is the A2A error want.
func wantErr(t *testing.T, name string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", name, err, want)
	}
}
