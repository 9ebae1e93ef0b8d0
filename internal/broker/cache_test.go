package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// otherProcess opens the env's database a second time, as the CLI with --data or another
// replica would: its writes reach the broker only through the store.
func otherProcess(t *testing.T, e *env) store.Store {
	t.Helper()
	return gatewaytest.OpenStore(t, e.st.(*sqlite.Store).Path())
}

func tokenID(t *testing.T, wire string) string {
	t.Helper()
	tok, err := token.Parse(wire)
	if err != nil {
		t.Fatal(err)
	}
	return tok.ID
}

// A revocation by another process stops the very next call, before any Sync: the call checks
// the token against the store at use, whatever the cache holds. Explain, which runs nothing,
// follows after Sync.
func TestRevocationElsewhereStopsTheNextCall(t *testing.T) {
	ctx := context.Background()
	for _, maxUses := range []int64{0, 100} {
		e := newEnv(t)
		wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, maxUses, time.Hour, e.key)
		req := call("write", `{"id":"9","text":"x"}`, wire)
		if r := e.b.Call(ctx, alice, req); !r.OK() {
			t.Fatalf("max_uses %d: first call: %+v", maxUses, r)
		}
		if d := e.b.Explain(ctx, alice, req); !d.Allowed() {
			t.Fatalf("max_uses %d: explain before the revocation: %+v", maxUses, d)
		}
		if err := otherProcess(t, e).Revoke(ctx, tokenID(t, wire), time.Now()); err != nil {
			t.Fatal(err)
		}
		if r := e.b.Call(ctx, alice, req); r.OK() || r.Code != policy.CodeInvalidToken {
			t.Fatalf("max_uses %d: call after a revocation elsewhere: %+v", maxUses, r)
		}
		if _, err := e.b.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if d := e.b.Explain(ctx, alice, req); d.Allowed() || d.Code != policy.CodeInvalidToken {
			t.Fatalf("max_uses %d: explain after Sync: %+v", maxUses, d)
		}
	}
}

// A revocation through the broker takes effect before the next decision, Explain included,
// and for the token's children.
func TestRevokeThroughBrokerIsImmediate(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	parent := e.issue(t, alice.ClientID, []string{"app.notes.*"}, 0, time.Hour, e.key)
	req := call("write", `{"id":"9","text":"x"}`, parent)
	if d := e.b.Explain(ctx, alice, req); !d.Allowed() {
		t.Fatalf("explain: %+v", d)
	}
	if err := e.b.Revoke(ctx, tokenID(t, parent)); err != nil {
		t.Fatal(err)
	}
	if d := e.b.Explain(ctx, alice, req); d.Allowed() || d.Code != policy.CodeInvalidToken {
		t.Fatalf("explain after Revoke: %+v", d)
	}
}

// The cached use count follows the uses this broker takes, so that a decision after the last
// use says TOKEN_EXHAUSTED without reading the store; uses taken elsewhere are caught at use.
func TestCachedUsesAndUsesTakenElsewhere(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 3, time.Hour, e.key)
	req := call("write", `{"id":"9","text":"x"}`, wire)
	if r := e.b.Call(ctx, alice, req); !r.OK() {
		t.Fatalf("first call: %+v", r)
	}
	other := otherProcess(t, e)
	if _, err := other.TakeUse(ctx, tokenID(t, wire), time.Now()); err != nil {
		t.Fatal(err)
	}
	if r := e.b.Call(ctx, alice, req); !r.OK() {
		t.Fatalf("third use: %+v", r)
	}
	if r := e.b.Call(ctx, alice, req); r.OK() || r.Code != policy.CodeTokenExhausted {
		t.Fatalf("fourth use: %+v", r)
	}
	if d := e.b.Explain(ctx, alice, req); d.Allowed() || d.Code != policy.CodeTokenExhausted {
		t.Fatalf("explain after the last use: %+v", d)
	}
}

// A mandate set by another process applies once Sync has seen the store's revision move; a
// mandate set through the broker applies at once.
func TestMandatesFollowTheStore(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 0, time.Hour, e.key)
	req := call("write", `{"id":"9","text":"x"}`, wire)
	if d := e.b.Explain(ctx, alice, req); !d.Allowed() {
		t.Fatalf("explain: %+v", d)
	}
	if err := otherProcess(t, e).PutMandate(ctx, store.Mandate{Permission: "app.notes.*", Autonomy: "handoff", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := e.b.Explain(ctx, alice, req); d.Outcome != policy.Handoff {
		t.Fatalf("explain after a handoff mandate: %+v", d)
	}
	if err := e.b.PutMandate(ctx, store.Mandate{Permission: "app.notes.*", Autonomy: "act", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if d := e.b.Explain(ctx, alice, req); !d.Allowed() {
		t.Fatalf("explain after an act mandate: %+v", d)
	}
}

// Calls, revocations and Syncs at once: no call succeeds after the revocation returned, and
// the race detector sees the cache's locking.
func TestCacheUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 0, time.Hour, e.key)
	req := call("write", `{"id":"9","text":"x"}`, wire)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var revokedAt time.Time
	var lateSuccess bool
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 40; j++ {
				start := time.Now()
				r := e.b.Call(ctx, alice, req)
				mu.Lock()
				if r.OK() && !revokedAt.IsZero() && start.After(revokedAt) {
					lateSuccess = true
				}
				mu.Unlock()
				if j%8 == 0 {
					_, _ = e.b.Sync(ctx)
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := e.b.Revoke(ctx, tokenID(t, wire)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	revokedAt = time.Now()
	mu.Unlock()
	wg.Wait()
	if lateSuccess {
		t.Fatal("a call that started after the revocation returned succeeded")
	}
}

// switchedAudit is the store with an audit log that refuses appends while fail is set.
type switchedAudit struct {
	store.Store
	fail atomic.Bool
}

func (f *switchedAudit) AppendAudit(ctx context.Context, es []store.AuditEntry) error {
	if f.fail.Load() {
		return errors.New("disk full")
	}
	return f.Store.AppendAudit(ctx, es)
}

// A read runs while its decision record is written, but its answer leaves only when both its
// records are durable: when they cannot be written, the call is refused, nothing of the
// result is returned, and the log holds no outcome without its decision.
func TestReadRefusedWhenItsRecordsFail(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	fa := &switchedAudit{Store: e.st}
	w := audit.NewWriter(fa, nil)
	defer w.Close()
	b, err := New(Options{Store: e.st, Registry: e.b.o.Registry, Tokens: e.b.o.Tokens, Audit: w, Consent: e.consents,
		Handlers: e.b.o.Handlers, DelayedCommit: -1})
	if err != nil {
		t.Fatal(err)
	}
	req := call("search", `{"query":"milk"}`, "")
	if r := b.Call(ctx, alice, req); !r.OK() {
		t.Fatalf("read with a working log: %+v", r)
	}
	fa.fail.Store(true)
	r := b.Call(ctx, alice, req)
	if r.OK() || r.Code != CodeExecutionFailed || r.Data != nil {
		t.Fatalf("read with a failing log: %+v", r)
	}
	fa.fail.Store(false)
	if r := b.Call(ctx, alice, req); !r.OK() {
		t.Fatalf("read after the log recovered: %+v", r)
	}
	// Every outcome in the log follows its own decision.
	entries, err := e.st.AuditRange(ctx, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	decided := map[string]bool{}
	for _, en := range entries {
		var rec struct {
			Kind   string `json:"kind"`
			CallID string `json:"call_id"`
		}
		if err := json.Unmarshal(en.Body, &rec); err != nil {
			t.Fatal(err)
		}
		switch rec.Kind {
		case "decision":
			decided[rec.CallID] = true
		case "outcome":
			if !decided[rec.CallID] {
				t.Fatalf("an outcome without its decision at seq %d", en.Seq)
			}
		}
	}
	if len(decided) != 2 {
		t.Fatalf("%d calls decided in the log, want 2", len(decided))
	}
}

// A token request shows the person the worst risk of what the token would allow.
func TestTokenRequestShowsItsWorstRisk(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.b.o.TokenKey = e.key
	done := make(chan error, 1)
	go func() {
		_, err := e.b.RequestCapability(ctx, alice, CapabilityRequest{Capabilities: []string{"app.notes.write", "app.notes.delete"}, Duration: 60, Reason: "tidy"})
		done <- err
	}()
	id := gatewaytest.WaitPending(t, e.st, "")
	_, r, err := e.consents.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Risk != "high" {
		t.Errorf("the request shows risk %q, want high (delete)", r.Risk)
	}
	if err := e.consents.Approve(ctx, id, "person", false); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// probe is the notes app that, on every call, looks whether the call's decision record is
// already durable in the store.
type probe struct {
	*notes
	st      store.Store
	mu      sync.Mutex
	durable map[string]bool // call id → its decision record was in the log when it ran
}

func (p *probe) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	head, err := p.st.AuditHead(ctx)
	var rec struct {
		Kind   string `json:"kind"`
		CallID string `json:"call_id"`
	}
	if err == nil {
		_ = json.Unmarshal(head.Body, &rec)
	}
	p.mu.Lock()
	p.durable[ic.CallID] = rec.Kind == "decision" && rec.CallID == ic.CallID
	p.mu.Unlock()
	return p.notes.Invoke(ctx, strings.Replace(id, "org.example.memo", notesID, 1), params, ic)
}

// readsOf is Providers with no provider of its own that classifies reads as trusted says.
type readsOf func(appID, capID string) bool

func (readsOf) Provider(manifest.AppID) (sdk.Handler, State) { return nil, NoProvider }
func (r readsOf) TrustedRead(appID manifest.AppID, capID manifest.CapabilityID) bool {
	return r(appID.String(), capID.String())
}

// A Tier 2 app's own claim that a capability only reads is not trusted: its call runs only
// once its decision record is durable, unless Providers.TrustedRead (an operator's
// classification) says it reads. A Tier 1 read runs first either way.
func TestTier2ReadRunsFirstOnlyWhenTrusted(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	// The same app under another id, unsigned: Tier 2, declaring the same reads.
	raw := strings.ReplaceAll(notesManifest, notesID, "org.example.memo")
	memo, err := e.b.o.Registry.Register(ctx, []byte(raw), "memo")
	if err != nil {
		t.Fatal(err)
	}
	if memo.Tier != manifest.Tier2 {
		t.Fatalf("the unsigned app is %v", memo.Tier)
	}
	p := &probe{notes: &notes{doc: memo.Doc, notes: map[string]string{"1": "milk"}, trash: map[string]string{}}, st: e.st, durable: map[string]bool{}}
	tier1 := &probe{notes: e.app, st: e.st, durable: map[string]bool{}}
	var trusted atomic.Bool
	b, err := New(Options{Store: e.st, Registry: e.b.o.Registry, Tokens: e.b.o.Tokens, Audit: e.writer, Consent: e.consents,
		Handlers: map[string]sdk.Handler{notesID: tier1, "org.example.memo": p}, DelayedCommit: -1,
		Providers: readsOf(func(appID, capID string) bool {
			return trusted.Load() && appID == "org.example.memo" && capID == "notes.org.example.memo.search"
		})})
	if err != nil {
		t.Fatal(err)
	}
	run := func(app string) string {
		t.Helper()
		req := call("search", `{"query":"milk"}`, "")
		req.App = app
		r := b.Call(ctx, alice, req)
		if !r.OK() {
			t.Fatalf("%s search: %+v", app, r)
		}
		return r.CallID
	}
	if id := run("memo"); !p.durable[id] {
		t.Error("an untrusted Tier 2 read ran before its decision record was durable")
	}
	trusted.Store(true)
	if id := run("memo"); p.durable[id] {
		t.Error("a Tier 2 read the operator classified waited for its decision record")
	}
	if id := run("notes"); tier1.durable[id] {
		t.Error("a Tier 1 read waited for its decision record")
	}
}

// With SQLite the check at use of a token without a use limit reads the store only when the
// change counter every process shares has moved since the store last said yes: calls in a
// row read it once; another process's audit records, app state and uses of another token
// (which no decision depends on) do not move it; a change that could (its client disabled by
// another process) does, and the very next call reads the store and is refused. The token's
// own expiry needs no read to be seen.
func TestCheckAtUseReadsTheStoreOnlyAfterAChange(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	wire := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 0, time.Hour, e.key)
	req := call("write", `{"id":"9","text":"x"}`, wire)
	for i := range 5 {
		if r := e.b.Call(ctx, alice, req); !r.OK() {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	if n := e.b.StoreChecksAtUse(); n != 1 {
		t.Fatalf("five calls with nothing changed read the store %d times at use, want 1", n)
	}
	other := otherProcess(t, e)
	if err := other.PutState(ctx, "org.example.notes", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	limited := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 5, time.Hour, e.key) // issuing moves it
	if r := e.b.Call(ctx, alice, req); !r.OK() {
		t.Fatalf("after a token was issued: %+v", r)
	}
	before := e.b.StoreChecksAtUse()
	if _, err := other.TakeUse(ctx, tokenID(t, limited), time.Now()); err != nil {
		t.Fatal(err)
	}
	w := audit.NewWriter(other, nil)
	if _, err := w.Append(ctx, audit.Record{Action: "query", App: "notes", Method: "search", Decision: "allow", Result: "success", ClientID: "cl_bob", Kind: "outcome"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if r := e.b.Call(ctx, alice, req); !r.OK() {
		t.Fatalf("after another process's quiet writes: %+v", r)
	}
	if n := e.b.StoreChecksAtUse(); n != before {
		t.Fatalf("another process's state, use and audit record made the check read the store (%d reads, want %d)", n, before)
	}
	c, err := other.GetClient(ctx, alice.ClientID)
	if err != nil {
		t.Fatal(err)
	}
	c.Disabled = true
	if err := other.UpdateClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	if r := e.b.Call(ctx, alice, req); r.OK() {
		t.Fatalf("a call after its client was disabled elsewhere: %+v", r)
	}
	if n := e.b.StoreChecksAtUse(); n != before+1 {
		t.Fatalf("the call after a change read the store %d times, want 1", n-before)
	}
}

// TestParamsPassedBounds: params that passed are remembered per schema and by their exact
// text, never for another schema or another text; params longer than maxPassedTextLen are
// not remembered; past maxPassedTexts entries or maxPassedTextBytes bytes the set empties.
func TestParamsPassedBounds(t *testing.T) {
	c := newCache()
	s1, s2 := new(manifest.Schema), new(manifest.Schema)
	p := []byte(`{"key":"brightness"}`)
	c.textPass(s1, p)
	if !c.textPassed(s1, p) {
		t.Fatal("params that passed are not remembered")
	}
	if c.textPassed(s2, p) {
		t.Fatal("params that passed one schema are remembered for another")
	}
	for _, other := range []string{`{"key":"brightnesS"}`, `{"key":"brightness"} `, `{"key":"brightnes"}`, ``} {
		if c.textPassed(s1, []byte(other)) {
			t.Fatalf("%q is remembered for %s", other, p)
		}
	}
	// A caller's buffer changed after the fill does not change what is remembered: the set
	// keeps a copy of the text, not the caller's bytes.
	buf := []byte(`{"key":"contrast"}`)
	c.textPass(s1, buf)
	buf[2] = 'X'
	if !c.textPassed(s1, []byte(`{"key":"contrast"}`)) || c.textPassed(s1, buf) {
		t.Fatal("the remembered text follows the caller's buffer")
	}
	long := []byte(`{"k":"` + strings.Repeat("a", maxPassedTextLen) + `"}`)
	c.textPass(s1, long)
	if c.textPassed(s1, long) {
		t.Fatal("params longer than maxPassedTextLen are remembered")
	}
	for i := range maxPassedTexts + 10 {
		c.textPass(s2, fmt.Appendf(nil, `{"n":%d}`, i))
		if c.passedN > maxPassedTexts {
			t.Fatalf("%d params remembered, the bound is %d", c.passedN, maxPassedTexts)
		}
	}
	if c.textPassed(s1, p) {
		t.Fatal("the set did not empty at its bound")
	}
	big := []byte(`{"k":"` + strings.Repeat("b", maxPassedTextLen-10) + `"}`)
	for i := range maxPassedTextBytes/len(big) + 10 {
		big[7] = byte('a' + i%26)
		big[8] = byte('a' + i/26%26)
		big[9] = byte('a' + i/676%26)
		c.textPass(s1, big)
		if c.passedSize > maxPassedTextBytes {
			t.Fatalf("%d bytes of params remembered, the bound is %d", c.passedSize, maxPassedTextBytes)
		}
	}
}

// TestCheckedTokens holds the set of tokens the store last said may be used to its rules:
// what was set is read back, a forgotten token reads as never checked, a full set is emptied
// rather than grown, and readers, setters and forgetters on every core at once (under the race
// detector) read only what was set for the token they ask for.
func TestCheckedTokens(t *testing.T) {
	c := newCache()
	if got := c.checkedAt("t1"); got != 0 {
		t.Fatalf("a token never checked reads %d, want 0", got)
	}
	c.setChecked("t1", 7)
	c.setChecked("t2", 9)
	if got := c.checkedAt("t1"); got != 7 {
		t.Fatalf("t1 reads %d, want 7", got)
	}
	c.setChecked("t1", 8)
	if got := c.checkedAt("t1"); got != 8 {
		t.Fatalf("t1 reads %d after it was set again, want 8", got)
	}
	c.forgetChecked("t1")
	if got, other := c.checkedAt("t1"), c.checkedAt("t2"); got != 0 || other != 9 {
		t.Fatalf("after t1 is forgotten: t1 %d (want 0), t2 %d (want 9)", got, other)
	}
	for i := range maxCachedTokens + 10 {
		c.setChecked("fill-"+strconv.Itoa(i), 1)
		if n := c.checked.Len(); n > maxCachedTokens {
			t.Fatalf("the set holds %d tokens, past its bound of %d", n, maxCachedTokens)
		}
	}

	c = newCache()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				id := "tok-" + strconv.Itoa(i%50)
				want := uint64(i%50) + 1 // every writer sets a token's own value
				switch (i + w) % 3 {
				case 0:
					c.setChecked(id, want)
				case 1:
					c.forgetChecked(id)
				}
				if got := c.checkedAt(id); got != 0 && got != want {
					t.Errorf("%s reads %d, a value set for another token (want 0 or %d)", id, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// answering is the notes app answering every call with the result it is given.
type answering struct {
	*notes
	data atomic.Pointer[string]
}

func (a *answering) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	return sdk.Result{Success: true, Data: json.RawMessage(*a.data.Load())}, nil
}

// TestResultCheckRemembered: a result that passed its returns schema is remembered by its
// text, so the same answer again is not checked again; a result that breaks the schema is
// refused every time, before and after a good one passed and whatever its spacing; and a good
// answer spelled otherwise (a space more) is not taken for the one remembered: it is checked
// on its own, then remembered on its own.
func TestResultCheckRemembered(t *testing.T) {
	e := newEnv(t)
	app := &answering{notes: e.app}
	o := e.b.o
	o.Handlers = map[string]sdk.Handler{notesID: app}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	cap, ok := b.o.Registry.Method("notes", "search")
	if !ok || cap.Returns == nil {
		t.Fatal("the search capability has no returns schema")
	}
	ctx := context.Background()
	answer := func(data string) Result {
		app.data.Store(&data)
		return b.Call(ctx, alice, call("search", `{"query":"milk"}`, ""))
	}
	const good, bad, badSpaced, goodSpaced = `{"ids":["1"]}`, `{"ids":[1]}`, `{"ids": [1]}`, `{"ids": ["1"]}`
	for i, c := range []struct {
		data    string
		ok      bool
		unknown bool // not remembered before this answer
	}{{bad, false, true}, {good, true, true}, {good, true, false}, {bad, false, true}, {badSpaced, false, true},
		{bad, false, true}, {goodSpaced, true, true}, {goodSpaced, true, false}} {
		if known := b.cache.textPassed(cap.Returns, []byte(c.data)); known == c.unknown {
			t.Fatalf("answer %d (%s): remembered before it: %v, want %v", i, c.data, known, !c.unknown)
		}
		r := answer(c.data)
		if r.OK() != c.ok {
			t.Fatalf("answer %d (%s): %+v", i, c.data, r)
		}
		if !c.ok && (r.Code != CodeExecutionFailed || !strings.Contains(r.Message, "returns schema")) {
			t.Fatalf("answer %d (%s): refused with %s %q", i, c.data, r.Code, r.Message)
		}
		if passed := b.cache.textPassed(cap.Returns, []byte(c.data)); passed != c.ok {
			t.Fatalf("answer %d (%s): remembered as passed: %v", i, c.data, passed)
		}
	}
}
