package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/web"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

const padID = "org.example.pad"

// hostileName is the name of a capability, shown as the request's summary: markup that must
// stay text.
const hostileName = `Send <script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=1">`

// padManifest is the test app: a reversible write (undo window), a send that goes to the
// network (high risk, irreversible) whose name is hostile markup, a read-only review that
// never acts without asking (ceiling ask), and an irreversible publish.
var padManifest = `{"app_id":"org.example.pad","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"notes.org.example.pad.write","name":"Write a note","description":"Writes a note.","category":"TEXT_INPUT",
  "parameters":{"type":"object","required":["id","text"],"properties":{"id":{"type":"string"},"text":{"type":"string"}},"additionalProperties":false},
  "returns":{"type":"object"},"side_effects":"write","permission":"app.pad.write","undo_window_ms":60000},
 {"id":"notes.org.example.pad.send","name":` + jsonString(hostileName) + `,"description":"Sends a note somewhere.","category":"COMMUNICATION",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"network","permission":"app.pad.send"},
 {"id":"notes.org.example.pad.review","name":` + jsonString(hostileCapName) + `,"description":"Reviews a note.","category":"TEXT_INPUT",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","autonomy_ceiling":"ask"},
 {"id":"notes.org.example.pad.publish","name":"Publish a note","description":"Publishes a note; cannot be taken back.","category":"COMMUNICATION",
  "parameters":{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}},"returns":{"type":"object"},
  "side_effects":"write","permission":"app.pad.publish"}
]}`

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// hostileCapName is the name of the review capability, whose permission is its id and whose
// autonomy ceiling is ask: markup that must stay text on the mandates page.
const hostileCapName = `Review <img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>`

// padApp is a real little app on its own data model: notes, and what was sent and published.
// A write can be undone: its undo token names the note's text before it.
type padApp struct {
	doc *manifest.Document

	mu    sync.Mutex
	notes map[string]string
	calls map[string]int
	prev  map[string]prevNote // by undo token
}

// prevNote is a note as it was before a write.
type prevNote struct {
	id, text string
	had      bool
}

func (p *padApp) Manifest() *manifest.Document { return p.doc }

func (p *padApp) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	var in struct{ ID, Text string }
	_ = json.Unmarshal(params, &in)
	action := id[strings.LastIndex(id, ".")+1:]
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[action]++
	if action == "write" {
		old, had := p.notes[in.ID]
		tok := fmt.Sprintf("undo:%d", len(p.prev))
		if p.prev == nil {
			p.prev = map[string]prevNote{}
		}
		p.prev[tok] = prevNote{id: in.ID, text: old, had: had}
		p.notes[in.ID] = in.Text
		return sdk.Result{Success: true, Data: json.RawMessage(`{}`), UndoToken: tok}, nil
	}
	return sdk.Result{Success: true, Data: json.RawMessage(`{}`)}, nil
}

// Undo puts the note back as it was before the write the token names.
func (p *padApp) Undo(ctx context.Context, id, undoToken string, ic sdk.InvocationContext) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.prev[undoToken]
	if !ok {
		return errors.New("pad: no such write")
	}
	delete(p.prev, undoToken)
	if n.had {
		p.notes[n.id] = n.text
	} else {
		delete(p.notes, n.id)
	}
	p.calls["undo"]++
	return nil
}

func (p *padApp) count(action string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[action]
}

func (p *padApp) note(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notes[id]
}

// env is a real gateway on its own data folder with the pad app at Tier 1, its whole HTTP
// handler (API and approval page) served by httptest.
type env struct {
	t    *testing.T
	ctx  context.Context
	g    *gateway.Gateway
	srv  *httptest.Server
	app  *padApp
	data string // the gateway's data folder
}

func newEnv(t *testing.T, delayedCommit time.Duration) *env {
	t.Helper()
	return newEnvWith(t, delayedCommit, nil)
}

// newEnvWith is newEnv with before run on the data folder before the gateway opens it: to
// add a tool server, as `capgate toolserver add` does with no gateway running.
func newEnvWith(t *testing.T, delayedCommit time.Duration, before func(data string)) *env {
	t.Helper()
	if delayedCommit == 0 {
		delayedCommit = -1
	}
	ctx := context.Background()
	e := &env{t: t, ctx: ctx, app: &padApp{notes: map[string]string{}, calls: map[string]int{}}, data: t.TempDir()}
	if before != nil {
		before(e.data)
	}
	trusted := t.TempDir()
	var err error
	e.g, err = gateway.Open(ctx, gateway.Config{
		DataDir: e.data, Listen: "-", Socket: "-", TrustedDir: trusted,
		Handlers: map[string]sdk.Handler{padID: e.app}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ConsentWait: 30 * time.Second, DelayedCommit: delayedCommit,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.app.doc = gatewaytest.Register(t, e.g.Registry, trusted, gatewaytest.NewKey(t), padManifest, "pad").Doc
	e.srv = httptest.NewServer(e.g.Handler())
	t.Cleanup(func() {
		e.srv.Close()
		if err := e.g.Close(); err != nil {
			t.Errorf("closing the gateway: %v", err)
		}
	})
	return e
}

// addClient adds a client through the store, as `capgate client add` does, and returns its key.
func (e *env) addClient(name string) string {
	e.t.Helper()
	return gatewaytest.AddClient(e.t, e.g.Store, store.Client{Name: name, Trust: "user"})
}

// api posts body to the gateway's API path as the client with key and decodes the answer.
func (e *env) api(key, path string, body any, into any) int {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", e.srv.URL+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Errorf("%s: %v", path, err)
		return 0
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, into); err != nil {
		e.t.Errorf("%s: answer is not JSON: %s", path, raw)
	}
	return resp.StatusCode
}

// callAsync calls a pad method through POST /v1/ipc from its own goroutine, as an agent
// would, and yields the answer when the call completes (after the person's answer).
func (e *env) callAsync(key, method, params, tok string) <-chan ipc.Response {
	return e.callAppAsync(key, "pad", method, params, tok)
}

// callAppAsync is callAsync of the app named app.
func (e *env) callAppAsync(key, app, method, params, tok string) <-chan ipc.Response {
	body := map[string]any{"action": "execute", "app": app, "method": method, "params": json.RawMessage(params)}
	if tok != "" {
		body["capability_token"] = tok
	}
	env := map[string]any{
		"header": map[string]any{"msg_type": "llm_request", "version": "1.0", "request_id": "req-" + method, "timestamp": time.Now().Unix()},
		"body":   body,
	}
	out := make(chan ipc.Response, 1)
	go func() {
		var r ipc.Response
		e.api(key, "/v1/ipc", env, &r)
		out <- r
	}()
	return out
}

// waitPending waits for a pending consent request of kind that is not in known and returns
// its id.
func (e *env) waitPending(kind string, known ...string) string {
	e.t.Helper()
	return gatewaytest.WaitPending(e.t, e.g.Store, kind, known...)
}

// state is the consent request's state in the store.
func (e *env) state(id string) string {
	e.t.Helper()
	c, err := e.g.Store.GetConsent(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return c.State
}

// browser is an HTTP client with a cookie jar: a browser without a screen.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string, c *http.Client) *browser {
	jar, _ := cookiejar.New(nil)
	cl := *c
	cl.Jar = jar
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{t: t, base: base, c: &cl}
}

// get fetches path and returns the answer with its body read.
func (b *browser) get(path string) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

// post sends a form to path with extra headers.
func (b *browser) post(path string, form url.Values, header map[string]string) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf" content="([^"]+)">`)

// login opens the login link and returns the session's CSRF token from the page.
func (b *browser) login(link string) string {
	b.t.Helper()
	resp, _ := b.get(link)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		b.t.Fatalf("login: HTTP %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := b.get("/ui/")
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("after login /ui/: HTTP %d", resp.StatusCode)
	}
	m := csrfMeta.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatal("no CSRF token on the page")
	}
	return m[1]
}

// answer posts verb (approve, deny, cancel) for the request id as the person, with the
// page's own Origin, and wants the redirect to the request's page.
func (b *browser) answer(id, verb, csrf string, extra url.Values) {
	b.t.Helper()
	form := url.Values{"csrf": {csrf}}
	for k, v := range extra {
		form[k] = v
	}
	resp, body := b.post("/ui/requests/"+id+"/"+verb, form, map[string]string{"Origin": b.base, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/requests/"+id {
		b.t.Fatalf("%s %s: HTTP %d %s", verb, id, resp.StatusCode, body)
	}
}

// unrecordedPage serves a page on the env's gateway whose audit writer is closed, so that no
// record can be written, and returns a logged-in browser, its CSRF token and the headers of a
// same-origin form post.
func (e *env) unrecordedPage() (*browser, string, map[string]string) {
	e.t.Helper()
	closed := audit.NewWriter(e.g.Store, nil)
	if err := closed.Close(); err != nil {
		e.t.Fatal(err)
	}
	ws := web.New(web.Options{Consent: e.g.Consent, Store: e.g.Store, Broker: e.g.Broker, Registry: e.g.Registry, Audit: closed})
	srv := httptest.NewServer(ws.Handler())
	e.t.Cleanup(srv.Close)
	b := newBrowser(e.t, srv.URL, srv.Client())
	return b, b.login(ws.LoginLink()), map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
}
