package broker

import (
	"context"
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
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// ruled is the notes app with a rule its schema cannot say: a note's text must not be its id.
// It counts the params it was asked about, and its answer is set per test.
type ruled struct {
	*notes
	mu    sync.Mutex
	seen  []string
	plain bool // refuse with an error that is no *sdk.Error, holding a secret
	panic bool
}

func (r *ruled) ValidateParams(id string, params json.RawMessage) error {
	r.mu.Lock()
	r.seen = append(r.seen, string(params))
	r.mu.Unlock()
	if r.panic {
		panic("the app's validator broke")
	}
	var p struct{ ID, Text string }
	if err := json.Unmarshal(params, &p); err != nil {
		return sdk.InvalidParams(nil)
	}
	if id == "notes.org.example.notes.write" && p.Text == p.ID {
		if r.plain {
			return errors.New("password=hunter2")
		}
		return sdk.InvalidParams(manifest.Problems{{Path: "text", Rule: "must differ from the id"}})
	}
	return nil
}

func (r *ruled) asked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// Issue 16: sdk.ParamValidator was promised and never called. The broker calls it after the
// schema, never instead of it, and only for a call steps 1 and 2 let through; its refusal is
// INVALID_REQUEST with the field paths, on the call path and in explain alike.
func TestParamValidatorRunsAfterTheSchema(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	app := &ruled{notes: e.app}
	o := e.b.o
	o.Handlers = map[string]sdk.Handler{notesID: app}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 0, time.Hour, e.key)

	// The schema first: the app is not asked about params that break it.
	r := b.Call(ctx, alice, call("write", `{"id":"a","text":7}`, wire))
	if r.Code != policy.CodeInvalidRequest || !strings.Contains(r.Message, "params.text") || app.asked() != 0 {
		t.Fatalf("params that break the schema: %+v (the app was asked %d times)", r, app.asked())
	}
	// A token step 2 refuses: the app sees nothing.
	forged := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 0, time.Hour, e.appKey)
	if r := b.Call(ctx, alice, call("write", `{"id":"a","text":"a"}`, forged)); r.Code != policy.CodeInvalidToken || app.asked() != 0 {
		t.Fatalf("a forged token: %+v (the app was asked %d times)", r, app.asked())
	}
	// The app's rule refuses, naming the field; nothing runs.
	for _, run := range []func() policy.Decision{
		func() policy.Decision { return b.Explain(ctx, alice, call("write", `{"id":"a","text":"a"}`, wire)) },
		func() policy.Decision {
			r := b.Call(ctx, alice, call("write", `{"id":"a","text":"a"}`, wire))
			if r.Code != policy.CodeInvalidRequest {
				t.Errorf("call: %+v", r)
			}
			return r.Decision
		},
	} {
		d := run()
		if d.Code != policy.CodeInvalidRequest || !strings.Contains(d.Explanation, "params.text") {
			t.Errorf("the app's rule: %+v", d)
		}
	}
	if _, ran := e.app.notes["a"]; ran {
		t.Fatal("a call the app's rule refused ran")
	}
	// Params that keep both run, and the app was asked about them.
	if r := b.Call(ctx, alice, call("write", `{"id":"a","text":"b"}`, wire)); !r.OK() || e.app.notes["a"] != "b" {
		t.Fatalf("params that keep both: %+v", r)
	}
	// Any other error, or a panic, refuses the params as a whole, and its text is not shown.
	app.plain = true
	r = b.Call(ctx, alice, call("write", `{"id":"c","text":"c"}`, wire))
	if r.Code != policy.CodeInvalidRequest || strings.Contains(r.Message, "hunter2") || !strings.Contains(r.Message, "at params") {
		t.Fatalf("a plain error: %+v", r)
	}
	app.plain, app.panic = false, true
	if r := b.Call(ctx, alice, call("write", `{"id":"d","text":"e"}`, wire)); r.Code != policy.CodeInvalidRequest {
		t.Fatalf("a validator that panics: %+v", r)
	}
	if _, ran := e.app.notes["c"]; ran {
		t.Fatal("a refused call ran")
	}
}

// switchable is Providers with one app whose state a test sets.
type switchable struct {
	appID string
	h     sdk.Handler
	state atomic.Uint32
}

func (s *switchable) Provider(appID manifest.AppID) (sdk.Handler, State) {
	if appID.String() != s.appID {
		return nil, NoProvider
	}
	return s.h, State(s.state.Load())
}

func (s *switchable) TrustedRead(manifest.AppID, manifest.CapabilityID) bool { return false }

// Issue 16: Working was hard-coded true. A provider that is down is not working right now:
// its calls are refused at step 1 (nothing asked, nothing run) and no list shows it, while
// an app with no provider at all is decided in full and answers APP_NOT_FOUND.
func TestNotWorkingProvider(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	memo := gatewaytest.Register(t, e.b.o.Registry, "", e.appKey, strings.ReplaceAll(notesManifest, notesID, "org.example.memo"), "memo")
	app := &counting{notes: &notes{doc: memo.Doc, notes: map[string]string{"1": "milk"}, trash: map[string]string{}}}
	p := &switchable{appID: "org.example.memo", h: app}
	o := e.b.o
	o.Providers = p
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	search := Request{Action: "execute", App: "memo", Method: "search", Params: json.RawMessage(`{"query":"milk"}`)}
	write := Request{Action: "execute", App: "memo", Method: "write", Params: json.RawMessage(`{"id":"2","text":"x"}`)}
	listed := func() bool {
		for _, u := range b.UsableBy(alice) {
			if u.App.ID.String() == "org.example.memo" {
				return true
			}
		}
		return false
	}

	p.state.Store(uint32(NotWorking))
	if d := b.Explain(ctx, alice, search); d.Code != policy.CodeAppNotFound || !strings.Contains(d.Explanation, "not working right now") {
		t.Errorf("explain, not working: %+v", d)
	}
	for _, req := range []Request{search, write} {
		r := b.Call(ctx, alice, req)
		if r.Code != policy.CodeAppNotFound || !strings.Contains(r.Message, "not working right now") || r.ConsentID != "" {
			t.Errorf("%s, not working: %+v", req.Method, r)
		}
	}
	if cs, _ := e.consents.List(ctx, store.ConsentPending); len(cs) != 0 {
		t.Errorf("the person was asked about a call to a provider that is down: %d requests", len(cs))
	}
	if app.calls.Load() != 0 || listed() {
		t.Errorf("not working: ran %d times, listed %v", app.calls.Load(), listed())
	}

	p.state.Store(uint32(Working))
	if r := b.Call(ctx, alice, search); !r.OK() || app.calls.Load() != 1 || !listed() {
		t.Errorf("working: %+v, ran %d times, listed %v", r, app.calls.Load(), listed())
	}

	// No provider here: decided in full (params checked), then APP_NOT_FOUND; still listed.
	p.state.Store(uint32(NoProvider))
	if r := b.Call(ctx, alice, Request{App: "memo", Method: "search", Params: json.RawMessage(`{"query":5}`)}); r.Code != policy.CodeInvalidRequest {
		t.Errorf("no provider, bad params: %+v", r)
	}
	if r := b.Call(ctx, alice, search); r.Code != policy.CodeAppNotFound || !strings.Contains(r.Message, "not running") || !listed() {
		t.Errorf("no provider: %+v, listed %v", r, listed())
	}
	memoApp, notesApp := manifest.MustParseAppID("org.example.memo"), manifest.MustParseAppID(notesID)
	if b.ProviderState(memoApp) != NoProvider || b.ProviderState(notesApp) != Working {
		t.Errorf("states: memo %v, notes %v", b.ProviderState(memoApp), b.ProviderState(notesApp))
	}
}

// counting is the notes app counting its calls.
type counting struct {
	*notes
	calls atomic.Int64
}

func (c *counting) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	c.calls.Add(1)
	return c.notes.Invoke(ctx, strings.Replace(id, "org.example.memo", notesID, 1), params, ic)
}

// faulty is the env's real store with reads that fail while a fault is set, as a store
// whose connection broke.
type faulty struct {
	store.Store
	consents atomic.Bool // GetConsent fails
	mandates atomic.Bool // ListMandates fails
}

func (f *faulty) GetConsent(ctx context.Context, id string) (store.Consent, error) {
	if f.consents.Load() {
		return store.Consent{}, errors.New("connection reset")
	}
	return f.Store.GetConsent(ctx, id)
}

func (f *faulty) ListMandates(ctx context.Context) ([]store.Mandate, error) {
	if f.mandates.Load() {
		return nil, errors.New("connection reset")
	}
	return f.Store.ListMandates(ctx)
}

// Issue 16: a delayed commit that failed was always reported as the person's cancel. Only a
// cancel says so; a store that failed and a call whose deadline passed say what happened,
// and none of them runs.
func TestDelayedCommitFailuresSayWhatHappened(t *testing.T) {
	e := newEnv(t)
	f := &faulty{Store: e.st}
	cs := consent.New(f, &consent.Options{Surface: true, TTL: time.Minute, Poll: 10 * time.Millisecond})
	o := e.b.o
	o.Store, o.Consent, o.DelayedCommit = f, cs, 300*time.Millisecond
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	wire := e.issue(t, alice.ClientID, []string{"app.notes.publish"}, 0, time.Hour, e.key)

	// The store fails in the window.
	go func() {
		for range 200 {
			if ps, _ := e.consents.List(context.Background(), store.ConsentPending); len(ps) > 0 {
				f.consents.Store(true)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	r := b.Call(context.Background(), alice, call("publish", `{"id":"1"}`, wire))
	f.consents.Store(false)
	if r.OK() || r.Code != CodeExecutionFailed || strings.Contains(r.Message, "cancelled") || !strings.Contains(r.Message, "store failed") {
		t.Errorf("a store failure in the window: %+v", r)
	}
	// The call's deadline passes in the window.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	r = b.Call(ctx, alice, call("publish", `{"id":"1"}`, wire))
	cancel()
	if r.OK() || r.Code != CodeTimeout || strings.Contains(r.Message, "cancelled") || !strings.Contains(r.Message, "deadline") {
		t.Errorf("a deadline in the window: %+v", r)
	}
	if _, ran := e.app.notes["published:1"]; ran {
		t.Fatal("a call whose window failed ran")
	}
	// The records say the same.
	for _, want := range []string{"store failed", "deadline passed"} {
		if !auditHolds(t, e, want) {
			t.Errorf("no outcome record says %q", want)
		}
	}
}

// auditHolds reports whether an outcome record of the log explains with want.
func auditHolds(t *testing.T, e *env, want string) bool {
	t.Helper()
	for _, rec := range gatewaytest.AuditRecords(t, e.st) {
		if rec.Kind == "outcome" && strings.Contains(rec.Explanation, want) {
			return true
		}
	}
	return false
}

// Issue 16: the ask's audit record was dropped when it failed, and the call waited for the
// person. A call whose ask record cannot be written is refused at once, as any call whose
// record fails, and its request is withdrawn: nobody is asked about it.
func TestAskWhoseRecordFailsIsRefused(t *testing.T) {
	e := newEnv(t)
	sw := &switchedAudit{Store: e.st}
	w := audit.NewWriter(sw, nil)
	defer w.Close()
	o := e.b.o
	o.Audit, o.ConsentWait = w, time.Minute
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	sw.fail.Store(true)
	done := make(chan Result, 1)
	go func() { done <- b.Call(context.Background(), alice, call("write", `{"id":"w","text":"x"}`, "")) }()
	var r Result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call waits for the person though its ask was not recorded")
	}
	if r.OK() || r.Code != CodeExecutionFailed || r.Message != errAuditRefused || r.ConsentID == "" {
		t.Fatalf("result: %+v", r)
	}
	c, err := e.st.GetConsent(context.Background(), r.ConsentID)
	if err != nil || c.State != store.ConsentCancelled || c.AnsweredBy != byRefused {
		t.Fatalf("the request of the refused call: %+v %v", c, err)
	}
	if _, ran := e.app.notes["w"]; ran {
		t.Fatal("the call ran")
	}
}

// Issue 16: a mandate read that failed was dropped, and the call was decided without the
// person's mandate, which may narrow it to ask or hand-off. It is refused instead.
func TestMandatesThatCannotBeReadRefuse(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	f := &faulty{Store: e.st}
	o := e.b.o
	o.Store = f
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PutMandate(ctx, store.Mandate{Permission: "app.notes.write", Autonomy: "handoff", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 0, time.Hour, e.key)
	f.mandates.Store(true)
	b.changed(ctx) // the cached mandates are dropped, as on any change
	r := b.Call(ctx, alice, call("write", `{"id":"m","text":"x"}`, wire))
	if r.OK() || r.Code != CodeExecutionFailed || r.Message != errMandates {
		t.Fatalf("result: %+v", r)
	}
	if d := b.Explain(ctx, alice, call("write", `{"id":"m","text":"x"}`, wire)); d.Code != CodeExecutionFailed {
		t.Errorf("explain: %+v", d)
	}
	if _, ran := e.app.notes["m"]; ran {
		t.Fatal("the call ran without the person's mandate")
	}
	f.mandates.Store(false)
	if r := b.Call(ctx, alice, call("write", `{"id":"m","text":"x"}`, wire)); r.Code != policy.CodeHandoff {
		t.Fatalf("with the mandate read: %+v", r)
	}
}

// UsableStamp moves with everything UsableBy reads, and only then: a provider's state, the
// registry (an app disabled, a pin lost), the caller's trust and its need for tokens.
func TestUsableStamp(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	gatewaytest.Register(t, e.b.o.Registry, "", e.appKey, strings.ReplaceAll(notesManifest, notesID, "org.example.memo"), "memo")
	p := &switchable{appID: "org.example.memo", h: &notes{}}
	p.state.Store(uint32(Working))
	o := e.b.o
	o.Providers = p
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	stamp := b.UsableStamp(alice)
	if again := b.UsableStamp(alice); again != stamp {
		t.Fatal("the stamp moved with nothing changed")
	}
	moved := func(what string, change, undo func()) {
		t.Helper()
		change()
		if b.UsableStamp(alice) == stamp {
			t.Errorf("%s: the stamp did not move", what)
		}
		undo()
		stamp = b.UsableStamp(alice)
	}
	moved("the provider down", func() { p.state.Store(uint32(NotWorking)) }, func() { p.state.Store(uint32(Working)) })
	moved("no provider", func() { p.state.Store(uint32(NoProvider)) }, func() { p.state.Store(uint32(Working)) })
	moved("a pin lost", func() { b.o.Registry.SetPinned("notes.org.example.memo.search", false) },
		func() { b.o.Registry.SetPinned("notes.org.example.memo.search", true) })
	moved("an app disabled", func() {
		if err := b.o.Registry.SetEnabled(ctx, "org.example.memo", false); err != nil {
			t.Fatal(err)
		}
	}, func() {
		if err := b.o.Registry.SetEnabled(ctx, "org.example.memo", true); err != nil {
			t.Fatal(err)
		}
	})
	moved("an evaluation failed", func() { b.SetFailedEvaluations(map[string]string{"notes.org.example.memo.search": "failed"}) },
		func() { b.SetFailedEvaluations(nil) })
	b.SetFailedEvaluations(map[string]string{"no such capability id": "failed"})
	if b.UsableStamp(alice) != stamp {
		t.Error("the stamp moved with a failed evaluation of no capability")
	}
	trusted, tokens := alice, alice
	trusted.Trust, tokens.RequireToken = manifest.AuthPrivileged, true
	if b.UsableStamp(trusted) == stamp || b.UsableStamp(tokens) == stamp {
		t.Error("the stamp is the same for another trust, or for a client that must hold tokens")
	}
}
