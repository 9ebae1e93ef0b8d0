package broker

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

const notesID = "org.example.notes"

// notesManifest declares four capabilities: a public read, a destructive delete with an undo
// window, a write, and a slow read with a short timeout.
const notesManifest = `{"app_id":"org.example.notes","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"notes.org.example.notes.search","name":"Search notes","description":"Finds notes.","category":"TEXT_QUERY",
  "parameters":{"type":"object","required":["query"],"properties":{"query":{"type":"string"}},"additionalProperties":false},
  "returns":{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string"}}}},"side_effects":"read","auth_level":"public"},
 {"id":"notes.org.example.notes.delete","name":"Delete a note","description":"Deletes a note.","category":"FILE_OPERATION",
  "parameters":{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}},"returns":{"type":"object"},
  "side_effects":"destructive","undo_window_ms":60000,"permission":"app.notes.delete"},
 {"id":"notes.org.example.notes.write","name":"Write a note","description":"Writes a note.","category":"TEXT_INPUT",
  "parameters":{"type":"object","required":["id","text"],"properties":{"id":{"type":"string"},"text":{"type":"string"}}},"returns":{"type":"object"},
  "side_effects":"write","permission":"app.notes.write","undo_window_ms":60000},
 {"id":"notes.org.example.notes.publish","name":"Publish","description":"Publishes a note; cannot be taken back.","category":"COMMUNICATION",
  "parameters":{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}},"returns":{"type":"object"},
  "side_effects":"write","permission":"app.notes.publish"},
 {"id":"notes.org.example.notes.run","name":"Run","description":"Runs a command over the notes.","category":"SYSTEM",
  "parameters":{"type":"object","required":["command"],"additionalProperties":false,"properties":{"command":{"type":"string","format":"command"},"path":{"type":"string","format":"path"}}},"returns":{"type":"object"},
  "side_effects":"read","permission":"app.notes.run"},
 {"id":"notes.org.example.notes.slow","name":"Slow","description":"Takes its time.","category":"STATE_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","auth_level":"public","timeout_ms":50}
]}`

// notes is a real little app on its own data model: a map of notes.
type notes struct {
	doc   *manifest.Document
	mu    sync.Mutex
	notes map[string]string
	trash map[string]string
}

func (n *notes) Manifest() *manifest.Document { return n.doc }

func (n *notes) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	var p struct{ Query, ID, Text string }
	if err := json.Unmarshal(params, &p); err != nil {
		return sdk.Result{}, sdk.InvalidParams(nil)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch id {
	case "notes.org.example.notes.search":
		ids := []string{}
		for k, v := range n.notes {
			if v == p.Query {
				ids = append(ids, k)
			}
		}
		data, _ := json.Marshal(map[string]any{"ids": ids})
		return sdk.Result{Success: true, Data: data}, nil
	case "notes.org.example.notes.delete":
		v, ok := n.notes[p.ID]
		if !ok {
			return sdk.Result{}, sdk.ExecutionFailed("no such note", false)
		}
		delete(n.notes, p.ID)
		n.trash[p.ID] = v
		return sdk.Result{Success: true, Data: json.RawMessage(`{}`), UndoToken: "restore:" + p.ID}, nil
	case "notes.org.example.notes.write":
		n.notes[p.ID] = p.Text
		return sdk.Result{Success: true, Data: json.RawMessage(`{}`)}, nil
	case "notes.org.example.notes.publish":
		n.notes["published:"+p.ID] = n.notes[p.ID]
		return sdk.Result{Success: true, Data: json.RawMessage(`{}`)}, nil
	case "notes.org.example.notes.run":
		n.notes["ran"] = "yes"
		return sdk.Result{Success: true, Data: json.RawMessage(`{}`)}, nil
	case "notes.org.example.notes.slow":
		<-ctx.Done()
		return sdk.Result{}, ctx.Err()
	}
	return sdk.Result{}, sdk.NotFound(id)
}

func (n *notes) Undo(ctx context.Context, id, undoToken string, ic sdk.InvocationContext) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := undoToken[len("restore:"):]
	n.notes[key] = n.trash[key]
	delete(n.trash, key)
	return nil
}

type env struct {
	b        *Broker
	st       store.Store
	app      *notes
	key      ed25519.PrivateKey // capgate's own key: tokens and checkpoints
	appKey   ed25519.PrivateKey // the key the registry trusts for every app id
	consents *consent.Service
	writer   *audit.Writer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st := gatewaytest.Store(t)
	reg, app, appKey := gatewaytest.Registry(t, st, notesManifest, "notes")
	pub, key, _ := ed25519.GenerateKey(nil)
	w := audit.NewWriter(st, &audit.Options{CheckpointKey: key, CheckpointEvery: 16})
	t.Cleanup(func() { w.Close() })
	cs := consent.New(st, &consent.Options{Surface: true, TTL: time.Minute, Poll: 10 * time.Millisecond})
	n := &notes{doc: app.Doc, notes: map[string]string{"1": "milk", "2": "bread"}, trash: map[string]string{}}
	b, err := New(Options{Store: st, Registry: reg, Tokens: token.NewVerifier(pub, 64), Audit: w, Consent: cs,
		Handlers: map[string]sdk.Handler{notesID: n}, DelayedCommit: -1, ConsentWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The callers of the tests are clients in the store: a call without a token checks its
	// client at use.
	for _, c := range []store.Client{{ID: "cl_alice", Name: "alice", Trust: "user"}, {ID: "cl_bob", Name: "bob", Trust: "user"},
		{ID: "cl_pub", Name: "pub", Trust: "public"}} {
		if err := st.PutClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{b: b, st: st, app: n, key: key, appKey: appKey, consents: cs, writer: w}
	t.Cleanup(func() { e.verifyAudit(t, pub) })
	return e
}

func (e *env) verifyAudit(t *testing.T, pub ed25519.PublicKey) {
	if err := e.writer.Close(); err != nil {
		t.Errorf("closing the audit writer: %v", err)
	}
	r, err := audit.Verify(context.Background(), e.st, pub)
	if err != nil || !r.OK() {
		t.Errorf("audit verify: %+v %v", r, err)
	}
}

// issue signs a token for client with grants and records its state.
func (e *env) issue(t *testing.T, client string, grants []string, maxUses int64, ttl time.Duration, key ed25519.PrivateKey) string {
	t.Helper()
	now := time.Now()
	tok := token.Token{ID: token.NewID(), IssuedAt: now.Unix() - 3600, ExpiresAt: now.Add(ttl).Unix(), Capabilities: grants,
		Constraints: token.Constraints{MaxUses: maxUses}, ClientID: client, AuditTag: "test"}
	return gatewaytest.Mint(t, e.st, tok, key, now, now.Add(ttl))
}

var alice = Caller{ClientID: "cl_alice", Name: "alice", Trust: manifest.AuthUser}

func call(method, params, tok string) Request {
	return Request{RequestID: "r1", Action: "execute", App: "notes", Method: method, Params: json.RawMessage(params), Token: tok}
}

func TestPublicReadRunsWithoutToken(t *testing.T) {
	e := newEnv(t)
	r := e.b.Call(context.Background(), alice, call("search", `{"query":"milk"}`, ""))
	if !r.OK() || string(r.Data) != `{"ids":["1"]}` {
		t.Fatalf("result: %+v", r)
	}
}

func TestErrorCodes(t *testing.T) {
	e := newEnv(t)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	good := e.issue(t, alice.ClientID, []string{"app.notes.*"}, 0, time.Hour, e.key)
	expired := e.issue(t, alice.ClientID, []string{"app.notes.*"}, 0, -time.Second, e.key)
	revoked := e.issue(t, alice.ClientID, []string{"app.notes.*"}, 0, time.Hour, e.key)
	tok, _ := token.Parse(revoked)
	if err := e.st.Revoke(context.Background(), tok.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	forged := e.issue(t, alice.ClientID, []string{"app.notes.*"}, 0, time.Hour, otherKey)
	bobs := e.issue(t, "cl_bob", []string{"app.notes.*"}, 0, time.Hour, e.key)
	narrow := e.issue(t, alice.ClientID, []string{"app.notes.read"}, 0, time.Hour, e.key)
	pubs := e.issue(t, "cl_pub", []string{"app.notes.*"}, 0, time.Hour, e.key)
	never := alice
	never.NeverAsk = true
	cases := []struct {
		name   string
		caller Caller
		req    Request
		code   string
	}{
		{"unknown app", alice, Request{Action: "execute", App: "mail", Method: "send", Params: json.RawMessage(`{}`)}, policy.CodeAppNotFound},
		{"unknown method", alice, call("shred", `{}`, good), policy.CodeMethodNotFound},
		{"forged token", alice, call("write", `{"id":"3","text":"x"}`, forged), policy.CodeInvalidToken},
		{"tampered token", alice, call("write", `{"id":"3","text":"x"}`, good[:len(good)-2]+"AA"), policy.CodeInvalidToken},
		{"other client's token", alice, call("write", `{"id":"3","text":"x"}`, bobs), policy.CodeInvalidToken},
		{"revoked token", alice, call("write", `{"id":"3","text":"x"}`, revoked), policy.CodeInvalidToken},
		{"expired token", alice, call("write", `{"id":"3","text":"x"}`, expired), policy.CodeTokenExpired},
		{"bad params", alice, call("write", `{"id":3}`, good), policy.CodeInvalidRequest},
		{"not covered", alice, call("write", `{"id":"3","text":"x"}`, narrow), policy.CodeCapabilityDenied},
		{"no token, never ask", never, call("write", `{"id":"3","text":"x"}`, ""), policy.CodeCapabilityDenied},
		{"public caller, user capability", Caller{ClientID: "cl_pub", Trust: manifest.AuthPublic}, call("write", `{"id":"3","text":"x"}`, pubs), policy.CodePermissionDenied},
		{"timeout", alice, call("slow", `{}`, ""), CodeTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.b.Call(context.Background(), tc.caller, tc.req)
			if r.OK() || r.Code != tc.code {
				t.Fatalf("code %q, want %q (%+v)", r.Code, tc.code, r)
			}
		})
	}
	if _, ok := e.app.notes["3"]; ok {
		t.Fatal("a refused write ran")
	}
	r := e.b.Call(context.Background(), alice, call("write", `{"id":"3","text":"x"}`, good))
	if !r.OK() || e.app.notes["3"] != "x" {
		t.Fatalf("allowed write: %+v", r)
	}
}

func TestExactlyMaxUsesUnderConcurrency(t *testing.T) {
	e := newEnv(t)
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 10, time.Hour, e.key)
	var ok, exhausted atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.b.Call(context.Background(), alice, call("write", `{"id":"c","text":"x"}`, wire))
			switch {
			case r.OK():
				ok.Add(1)
			case r.Code == policy.CodeTokenExhausted:
				exhausted.Add(1)
			default:
				t.Errorf("unexpected: %+v", r)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 || exhausted.Load() != 54 {
		t.Fatalf("%d successes, %d exhausted", ok.Load(), exhausted.Load())
	}
}

func TestExplainHasNoSideEffect(t *testing.T) {
	e := newEnv(t)
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 1, time.Hour, e.key)
	for i := 0; i < 3; i++ {
		if d := e.b.Explain(context.Background(), alice, call("write", `{"id":"e","text":"x"}`, wire)); !d.Allowed() {
			t.Fatalf("explain: %+v", d)
		}
	}
	if _, ok := e.app.notes["e"]; ok {
		t.Fatal("explain ran the call")
	}
	if r := e.b.Call(context.Background(), alice, call("write", `{"id":"e","text":"x"}`, wire)); !r.OK() {
		t.Fatalf("the one use was spent by explain: %+v", r)
	}
}

// answer answers the first pending request as soon as it appears.
func (e *env) answer(t *testing.T, approve bool) {
	go func() {
		for i := 0; i < 500; i++ {
			cs, _ := e.consents.List(context.Background(), store.ConsentPending)
			if len(cs) > 0 {
				var err error
				if approve {
					err = e.consents.Approve(context.Background(), cs[0].ID, "person", false)
				} else {
					err = e.consents.Deny(context.Background(), cs[0].ID, "person")
				}
				if err != nil {
					t.Error(err)
				}
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Error("no consent request appeared")
	}()
}

func TestConsentAndUndo(t *testing.T) {
	e := newEnv(t)
	wire := e.issue(t, alice.ClientID, []string{"app.notes.delete"}, 0, time.Hour, e.key)

	// A destructive call by a user client whose token carries no recorded consent asks.
	e.answer(t, false)
	r := e.b.Call(context.Background(), alice, call("delete", `{"id":"1"}`, wire))
	if r.OK() || r.Code != policy.CodeConsentDenied || r.ConsentID == "" {
		t.Fatalf("denied: %+v", r)
	}
	if _, ok := e.app.notes["1"]; !ok {
		t.Fatal("a denied delete ran")
	}

	e.answer(t, true)
	r = e.b.Call(context.Background(), alice, call("delete", `{"id":"1"}`, wire))
	if !r.OK() || r.UndoToken == "" {
		t.Fatalf("approved: %+v", r)
	}
	if _, ok := e.app.notes["1"]; ok {
		t.Fatal("the approved delete did not run")
	}

	// Another client cannot undo it; the caller can, once.
	bob := Caller{ClientID: "cl_bob", Trust: manifest.AuthUser}
	if err := e.b.Undo(context.Background(), bob, r.UndoToken); !errors.Is(err, ErrUndoClient) {
		t.Fatalf("bob's undo: %v", err)
	}
	if err := e.b.Undo(context.Background(), alice, r.UndoToken); err != nil {
		t.Fatal(err)
	}
	if e.app.notes["1"] != "milk" {
		t.Fatal("undo did not restore the note")
	}
	if err := e.b.Undo(context.Background(), alice, r.UndoToken); !errors.Is(err, ErrUndoUnknown) {
		t.Fatalf("second undo: %v", err)
	}
}

func TestUndoWindowPasses(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.b.o.Now = func() time.Time { return now }
	wire := e.issue(t, alice.ClientID, []string{"app.notes.delete"}, 0, time.Hour, e.key)
	e.answer(t, true)
	r := e.b.Call(context.Background(), alice, call("delete", `{"id":"2"}`, wire))
	if !r.OK() {
		t.Fatalf("delete: %+v", r)
	}
	now = now.Add(61 * time.Second)
	if err := e.b.Undo(context.Background(), alice, r.UndoToken); !errors.Is(err, ErrUndoExpired) {
		t.Fatalf("late undo: %v", err)
	}
}

// The person can undo any client's call within its window, by its call id: Undoable lists
// the call, UndoCall reverts it through the handler and spends the undo token (the client
// can no longer use it), and both steps are in the audit log under the person's name.
// Calls whose windows passed are no longer listed, and cannot be undone.
func TestUndoCallByThePerson(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	e.b.o.Now = func() time.Time { return now }
	wire := e.issue(t, alice.ClientID, []string{"app.notes.delete"}, 0, time.Hour, e.key)
	e.answer(t, true)
	r := e.b.Call(ctx, alice, call("delete", `{"id":"1"}`, wire))
	if !r.OK() || r.UndoToken == "" {
		t.Fatalf("delete: %+v", r)
	}
	u, err := e.b.Undoable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := u[r.CallID]; len(u) != 1 || !ok || got.ClientID != alice.ClientID || got.Capability != "notes.org.example.notes.delete" ||
		!got.Until.Equal(time.UnixMilli(r.UndoUntil.UnixMilli())) {
		t.Fatalf("undoable calls: %+v", u)
	}
	if err := e.b.UndoCall(ctx, "call_nosuch", "person (test)"); !errors.Is(err, ErrUndoUnknown) {
		t.Fatalf("undo of an unknown call: %v", err)
	}
	if err := e.b.UndoCall(ctx, r.CallID, "person (test)"); err != nil {
		t.Fatal(err)
	}
	if e.app.notes["1"] != "milk" {
		t.Fatal("the person's undo did not restore the note")
	}
	if err := e.b.Undo(ctx, alice, r.UndoToken); !errors.Is(err, ErrUndoUnknown) {
		t.Fatalf("the client's undo after the person's: %v", err)
	}
	if err := e.b.UndoCall(ctx, r.CallID, "person (test)"); !errors.Is(err, ErrUndoUnknown) {
		t.Fatalf("a second undo: %v", err)
	}
	entries, err := audit.Tail(ctx, e.st, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, kind := range []string{"decision", "outcome"} {
		rec := entries[i].Record
		if rec.Action != "undo" || rec.Kind != kind || rec.ClientID != "person (test)" || rec.CallID != r.CallID ||
			!strings.Contains(rec.Explanation, alice.ClientID) || (kind == "outcome" && rec.Result != "success") {
			t.Errorf("audit record %d: %+v", i, rec)
		}
	}

	// A window that passed: not listed, not undone.
	e.answer(t, true)
	r = e.b.Call(ctx, alice, call("delete", `{"id":"2"}`, wire))
	if !r.OK() {
		t.Fatalf("delete: %+v", r)
	}
	now = now.Add(61 * time.Second)
	if u, err := e.b.Undoable(ctx); err != nil || len(u) != 0 {
		t.Fatalf("undoable after the window: %+v %v", u, err)
	}
	if err := e.b.UndoCall(ctx, r.CallID, "person (test)"); !errors.Is(err, ErrUndoUnknown) {
		t.Fatalf("late undo: %v", err)
	}
}

func TestExecutionFailed(t *testing.T) {
	e := newEnv(t)
	wire := e.issue(t, alice.ClientID, []string{"app.notes.delete"}, 0, time.Hour, e.key)
	e.answer(t, true)
	r := e.b.Call(context.Background(), alice, call("delete", `{"id":"nope"}`, wire))
	if r.OK() || r.Code != CodeExecutionFailed || r.Message != "no such note" {
		t.Fatalf("result: %+v", r)
	}
}

// failingAudit is the real store whose audit appends fail, as on a full disk.
type failingAudit struct{ store.Store }

func (failingAudit) AppendAudit(context.Context, []store.AuditEntry) error {
	return errors.New("disk full")
}

// Nothing runs unaudited: a call whose record cannot be written is refused.
func TestUnauditedCallIsRefused(t *testing.T) {
	e := newEnv(t)
	w := audit.NewWriter(failingAudit{e.st}, nil)
	defer w.Close()
	o := e.b.o
	o.Audit = w
	b, _ := New(o)
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 0, time.Hour, e.key)
	r := b.Call(context.Background(), alice, call("write", `{"id":"w","text":"x"}`, wire))
	if r.OK() || r.Code != CodeExecutionFailed {
		t.Fatalf("result: %+v", r)
	}
	if _, ran := e.app.notes["w"]; ran {
		t.Fatal("the call ran without its audit record")
	}
}

func TestRequestCapability(t *testing.T) {
	e := newEnv(t)
	e.b.o.TokenKey = e.key
	ctx := context.Background()
	// A low-risk read needs no consent.
	iss, err := e.b.RequestCapability(ctx, alice, CapabilityRequest{Capabilities: []string{"notes.org.example.notes.search"}, Duration: 60, MaxUses: 2, Reason: "find milk"})
	if err != nil || iss.ConsentID != "" {
		t.Fatalf("low risk: %+v %v", iss, err)
	}
	for i, want := range []bool{true, true, false} {
		r := e.b.Call(ctx, alice, call("search", `{"query":"milk"}`, iss.Wire))
		if r.OK() != want {
			t.Fatalf("use %d: %+v", i+1, r)
		}
	}
	// A destructive grant needs the person: denied, then approved; the approved token
	// carries the consent, so its destructive calls run without asking again.
	e.answer(t, false)
	if _, err := e.b.RequestCapability(ctx, alice, CapabilityRequest{Capabilities: []string{"app.notes.delete"}, Duration: 60, Reason: "tidy"}); !errors.Is(err, ErrIssueDenied) {
		t.Fatalf("denied request: %v", err)
	}
	e.answer(t, true)
	iss, err = e.b.RequestCapability(ctx, alice, CapabilityRequest{Capabilities: []string{"app.notes.delete"}, Duration: 60, Reason: "tidy"})
	if err != nil || iss.ConsentID == "" {
		t.Fatalf("approved request: %+v %v", iss, err)
	}
	r := e.b.Call(ctx, alice, call("delete", `{"id":"2"}`, iss.Wire))
	if !r.OK() || r.ConsentID != "" {
		t.Fatalf("delete with a consented token: %+v", r)
	}
	if _, err := e.b.RequestCapability(ctx, alice, CapabilityRequest{Capabilities: []string{"*"}, Duration: 60}); !errors.Is(err, ErrIssueInvalid) {
		t.Fatalf("a grant of everything: %v", err)
	}
}

// An irreversible call waits out its delayed-commit window, in which the person can cancel it.
func TestDelayedCommitCancel(t *testing.T) {
	e := newEnv(t)
	e.b.o.DelayedCommit = 2 * time.Second
	wire := e.issue(t, alice.ClientID, []string{"app.notes.publish"}, 0, time.Hour, e.key)
	go func() {
		for i := 0; i < 200; i++ {
			cs, _ := e.consents.List(context.Background(), store.ConsentPending)
			for _, c := range cs {
				if c.Kind == consent.KindCommit {
					if err := e.consents.Cancel(context.Background(), c.ID, "person"); err != nil {
						t.Error(err)
					}
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	r := e.b.Call(context.Background(), alice, call("publish", `{"id":"1"}`, wire))
	if r.OK() || r.Code != policy.CodeConsentDenied {
		t.Fatalf("cancelled commit: %+v", r)
	}
	if _, ran := e.app.notes["published:1"]; ran {
		t.Fatal("a cancelled call ran")
	}
	// Not cancelled: it runs after the window.
	e.b.o.DelayedCommit = 50 * time.Millisecond
	if r := e.b.Call(context.Background(), alice, call("publish", `{"id":"2"}`, wire)); !r.OK() || r.Decision.DelayedCommit == 0 {
		t.Fatalf("committed: %+v", r)
	}
}

// Constraints are checked on what will run, whatever its spelling.
func TestConstraintBypassesRefused(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	tok := token.Token{ID: token.NewID(), IssuedAt: now.Unix() - 60, ExpiresAt: now.Add(time.Hour).Unix(), Capabilities: []string{"app.notes.run"},
		Constraints: token.Constraints{DeniedCommands: []string{"rm -rf"}, AllowedPaths: []string{"/srv/notes/**"}}, ClientID: alice.ClientID}
	wire := gatewaytest.Mint(t, e.st, tok, e.key, now, now.Add(time.Hour))
	for _, params := range []string{
		`{"command":"rm -rf /"}`, `{"command":"rm -fr /"}`, `{"command":"/bin/rm -r -f /"}`, `{"command":"sudo rm -rf /"}`,
		`{"command":"env X=1 rm --recursive --force /"}`, `{"command":"sh -c 'rm -rf /'"}`, `{"command":"ls; rm -rf /"}`,
		`{"command":"ls","path":"/srv/notes/../../etc/passwd"}`, `{"command":"ls","path":"/etc/passwd"}`,
	} {
		r := e.b.Call(context.Background(), alice, call("run", params, wire))
		if r.OK() || r.Code != policy.CodeCapabilityDenied {
			t.Errorf("%s: %+v", params, r)
		}
	}
	if _, ran := e.app.notes["ran"]; ran {
		t.Fatal("a refused command ran")
	}
	if r := e.b.Call(context.Background(), alice, call("run", `{"command":"ls -l","path":"/srv/notes/a"}`, wire)); !r.OK() {
		t.Fatalf("allowed command: %+v", r)
	}
}

// Decide is Explain without the trace: the same outcome and code for a call it allows and
// for calls it refuses (a token of another client, a permission the token lacks, a forged
// token), no trace, and no side effect (the token's one use is left).
func TestDecideIsExplainWithoutTrace(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 1, time.Hour, e.key)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	forged := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 1, time.Hour, otherKey)
	other := Caller{ClientID: "cl_mallory", Name: "mallory", Trust: alice.Trust}
	for _, c := range []struct {
		name   string
		caller Caller
		req    Request
		allow  bool
	}{
		{"allowed", alice, call("write", `{"id":"d","text":"x"}`, wire), true},
		{"another client", other, call("write", `{"id":"d","text":"x"}`, wire), false},
		{"a permission the token lacks", alice, call("delete", `{"id":"d"}`, wire), false},
		{"forged", alice, call("write", `{"id":"d","text":"x"}`, forged), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, x := e.b.Decide(ctx, c.caller, c.req), e.b.Explain(ctx, c.caller, c.req)
			if d.Allowed() != c.allow || d.Outcome != x.Outcome || d.Code != x.Code {
				t.Fatalf("Decide %s %s, Explain %s %s, want allowed %v", d.Outcome, d.Code, x.Outcome, x.Code, c.allow)
			}
			if len(d.Trace) != 0 || len(x.Trace) == 0 {
				t.Fatalf("Decide's trace %q, Explain's %d steps", d.Trace, len(x.Trace))
			}
		})
	}
	if _, ok := e.app.notes["d"]; ok {
		t.Fatal("Decide ran the call")
	}
	if r := e.b.Call(ctx, alice, call("write", `{"id":"d","text":"x"}`, wire)); !r.OK() {
		t.Fatalf("the one use was spent by Decide: %+v", r)
	}
}

// A token signed with capgate's own key and naming an issued token's id, but not the token
// issued under it (a key that leaked, or a store whose tokens were rewritten), is refused, on
// the first call and once the issued token is in every cache.
func TestTokenNotTheOneIssued(t *testing.T) {
	e := newEnv(t)
	e.b.o.TokenKey = e.key
	ctx := context.Background()
	iss, err := e.b.RequestCapability(ctx, alice, CapabilityRequest{Capabilities: []string{"notes.org.example.notes.search"}, Duration: 60, Reason: "find milk"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := token.Parse(iss.Wire)
	if err != nil {
		t.Fatal(err)
	}
	tok.Capabilities = []string{"app.notes.*"} // the same id, a wider grant
	forged, err := token.Sign(tok, e.key)
	if err != nil {
		t.Fatal(err)
	}
	for i, wire := range []string{forged, iss.Wire, forged} {
		r := e.b.Call(ctx, alice, call("search", `{"query":"milk"}`, wire))
		if want := wire == iss.Wire; r.OK() != want {
			t.Fatalf("call %d: %+v", i, r)
		}
		if wire == forged && r.Code != policy.CodeInvalidToken {
			t.Fatalf("call %d with the forged token: %s, want %s", i, r.Code, policy.CodeInvalidToken)
		}
	}
}

// A token signed with capgate's key and naming an issued token's id, but not the token issued
// under it (a key that leaked, a store whose rows were rewritten), is refused; so is any token
// whose stored hash is not one WireHash writes (uppercase, another algorithm, cut short).
func TestTokenNotTheOneIssuedUnderItsID(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	issued := token.Token{ID: token.NewID(), IssuedAt: now.Unix() - 60, ExpiresAt: now.Add(time.Hour).Unix(),
		Capabilities: []string{"notes.org.example.notes.search"}, ClientID: alice.ClientID, AuditTag: "test"}
	good := gatewaytest.Mint(t, e.st, issued, e.key, now, now.Add(time.Hour))
	if r := e.b.Call(ctx, alice, call("search", `{"query":"milk"}`, good)); !r.OK() {
		t.Fatalf("the issued token: %s %s", r.Code, r.Message)
	}
	wider := issued
	wider.Capabilities = []string{"notes.*"}
	other, err := token.Sign(wider, e.key)
	if err != nil {
		t.Fatal(err)
	}
	r := e.b.Call(ctx, alice, call("search", `{"query":"milk"}`, other))
	if r.OK() || r.Code != "INVALID_TOKEN" {
		t.Fatalf("another body under the issued id: %s %q", r.Code, r.Decision.Explanation)
	}

	// The stored hash is the token's own, only spelled otherwise: still refused.
	spellings := []func(h string) string{
		strings.ToUpper,
		func(h string) string { return "sha256:" + strings.ToUpper(strings.TrimPrefix(h, "sha256:")) },
		func(h string) string { return strings.TrimPrefix(h, "sha256:") },
		func(h string) string { return strings.Replace(h, "sha256:", "sha512:", 1) },
		func(h string) string { return h[:len(h)-1] },
		func(h string) string { return h + " " },
		func(string) string { return "" },
	}
	for i, spell := range spellings {
		tok := issued
		tok.ID = token.NewID()
		wire, err := token.Sign(tok, e.key)
		if err != nil {
			t.Fatal(err)
		}
		stored := spell(token.WireHash(wire))
		if err := e.st.PutToken(ctx, store.Token{ID: tok.ID, ClientID: tok.ClientID, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
			AuditTag: tok.AuditTag, Hash: stored}); err != nil {
			t.Fatal(err)
		}
		if r := e.b.Call(ctx, alice, call("search", `{"query":"milk"}`, wire)); r.OK() || r.Code != "INVALID_TOKEN" {
			t.Errorf("spelling %d of the stored hash: %s %q", i, r.Code, r.Decision.Explanation)
		}
	}
}
