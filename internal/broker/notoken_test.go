package broker

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// probeManifest declares what an attacker would try to pass off as a low-risk read, beside
// two that are one: a declared low-risk read, a read without side effects, a medium-risk
// read, a low-risk write, a privileged low-risk read and a low-risk read that must be
// confirmed. The same capabilities under another app id, unsigned, are Tier 2.
func probeManifest(appID string) string {
	caps := []string{
		`{"id":"probe.APP.look","name":"Look","description":"Reads.","category":"STATE_QUERY","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","risk":"low","permission":"app.probe.look"}`,
		`{"id":"probe.APP.peek","name":"Peek","description":"Computes.","category":"STATE_QUERY","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"none","permission":"app.probe.peek"}`,
		`{"id":"probe.APP.stare","name":"Stare","description":"Reads, at medium risk.","category":"STATE_QUERY","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","risk":"medium","permission":"app.probe.stare"}`,
		`{"id":"probe.APP.scribble","name":"Scribble","description":"Writes, claiming low risk.","category":"TEXT_INPUT","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"write","risk":"low","undo_window_ms":1000,"permission":"app.probe.scribble"}`,
		`{"id":"probe.APP.vault","name":"Vault","description":"Reads privileged state.","category":"STATE_QUERY","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","risk":"low","auth_level":"privileged","permission":"app.probe.vault"}`,
		`{"id":"probe.APP.confirm","name":"Confirm","description":"Reads, confirmed every time.","category":"STATE_QUERY","parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"read","risk":"low","confirmation_required":true,"permission":"app.probe.confirm"}`,
	}
	return strings.ReplaceAll(`{"app_id":"`+appID+`","version":"1.0.0","manifest_version":"1.0","capabilities":[`+strings.Join(caps, ",")+`]}`, "APP", appID)
}

// counter is a real handler that counts what ran.
type counter struct {
	doc   *manifest.Document
	mu    sync.Mutex
	calls map[string]int
}

func (p *counter) Manifest() *manifest.Document { return p.doc }

func (p *counter) Invoke(_ context.Context, id string, _ json.RawMessage, _ sdk.InvocationContext) (sdk.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[id]++
	return sdk.Result{Success: true, Data: json.RawMessage(`{"ran":true}`)}, nil
}

func (p *counter) ran(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[id]
}

// withProbes registers the probe manifest signed (Tier 1, alias "probe") and unsigned under
// another app id (Tier 2, alias "liar"), with one handler for both.
func (e *env) withProbes(t *testing.T) *counter {
	t.Helper()
	ctx := context.Background()
	p := &counter{calls: map[string]int{}}
	p.doc = gatewaytest.Register(t, e.b.o.Registry, "", e.appKey, probeManifest("org.example.probe"), "probe").Doc
	liar, err := e.b.o.Registry.Register(ctx, []byte(probeManifest("org.example.liar")), "liar")
	if err != nil || liar.Tier != manifest.Tier2 {
		t.Fatalf("the liar app: tier %d, %v", liar.Tier, err)
	}
	e.b.o.Handlers["org.example.probe"], e.b.o.Handlers["org.example.liar"] = p, p
	return p
}

// records are the audit log's records, oldest first.
func (e *env) records(t *testing.T) []audit.Record {
	t.Helper()
	return gatewaytest.AuditRecords(t, e.st)
}

// A low-risk Tier 1 capability that changes nothing runs without a token for a client its
// auth_level admits, and is audited as any call: its decision and its outcome. Everything an
// attacker would pass off as one is not: a Tier 2 app's claim, a medium-risk read, a
// low-risk write, a privileged read for a user client, a user read for a public client, one
// that must be confirmed; nor does a client (or a host) that requires tokens get it.
func TestLowRiskReadRunsWithoutToken(t *testing.T) {
	e := newEnv(t)
	p := e.withProbes(t)
	ctx := context.Background()
	for _, c := range []store.Client{{ID: "cl_strict", Name: "strict", Trust: "user", RequireToken: true},
		{ID: "cl_never", Name: "never", Trust: "user", NeverAsk: true}, {ID: "cl_boss", Name: "boss", Trust: "privileged"}} {
		if err := e.st.PutClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	never := Caller{ClientID: "cl_never", Name: "never", Trust: manifest.AuthUser, NeverAsk: true}
	strict := Caller{ClientID: "cl_strict", Name: "strict", Trust: manifest.AuthUser, NeverAsk: true, RequireToken: true}
	pub := Caller{ClientID: "cl_pub", Trust: manifest.AuthPublic, NeverAsk: true}
	boss := Caller{ClientID: "cl_boss", Trust: manifest.AuthPrivileged, NeverAsk: true}
	probeCall := func(app, method string) Request {
		return Request{RequestID: "r-" + method, Action: "query", App: app, Method: method, Params: json.RawMessage(`{}`)}
	}
	for _, c := range []struct {
		name   string
		caller Caller
		app    string
		method string
		code   string // "" runs
	}{
		{"a user client's low-risk read", never, "probe", "look", ""},
		{"a read without side effects", never, "probe", "peek", ""},
		{"a privileged client's low-risk read", boss, "probe", "look", ""},
		{"a privileged client's privileged read", boss, "probe", "vault", ""},
		{"the notes app's public search, by a require-token client", strict, "notes", "search", ""},
		{"a Tier 2 app claiming a low-risk read", never, "liar", "look", policy.CodeCapabilityDenied},
		{"a Tier 2 app claiming no side effects", never, "liar", "peek", policy.CodeCapabilityDenied},
		{"a medium-risk read", never, "probe", "stare", policy.CodeCapabilityDenied},
		{"a low-risk write", never, "probe", "scribble", policy.CodeCapabilityDenied},
		{"a user client's privileged read", never, "probe", "vault", policy.CodePermissionDenied},
		{"a public client's user-level read", pub, "probe", "look", policy.CodePermissionDenied},
		{"a low-risk read that must be confirmed", never, "probe", "confirm", policy.CodeConsentRequired},
		{"a require-token client's low-risk read", strict, "probe", "look", policy.CodeCapabilityDenied},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "probe.org.example." + c.app + "." + c.method
			if c.app == "notes" {
				id = "notes.org.example.notes." + c.method
			}
			before := p.ran(id)
			req := probeCall(c.app, c.method)
			if c.app == "notes" {
				req.Params = json.RawMessage(`{"query":"milk"}`)
			}
			r := e.b.Call(ctx, c.caller, req)
			if r.Code != c.code || r.OK() != (c.code == "") {
				t.Fatalf("code %q (%s), want %q", r.Code, r.Message, c.code)
			}
			if c.app != "notes" && (p.ran(id) > before) != (c.code == "") {
				t.Errorf("ran %d times, before %d", p.ran(id), before)
			}
			var kinds []string
			for _, rec := range e.records(t) {
				if rec.CallID == r.CallID {
					if rec.TokenID != "" || rec.ClientID != c.caller.ClientID || rec.Capability != id {
						t.Errorf("record of the call: %+v", rec)
					}
					kinds = append(kinds, rec.Kind+" "+rec.Decision+" "+rec.Code)
				}
			}
			want := "decision deny " + c.code
			if c.code == "" {
				want = "decision allow ,outcome allow "
			}
			if strings.Join(kinds, ",") != want {
				t.Errorf("records of the call: %q, want %q", kinds, want)
			}
		})
	}

	// The host's setting is every client's: the same read then needs a token.
	o := e.b.o
	o.RequireToken = true
	strictHost, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if r := strictHost.Call(ctx, never, probeCall("probe", "look")); r.Code != policy.CodeCapabilityDenied {
		t.Errorf("a host that requires tokens: %q (%s)", r.Code, r.Message)
	}
	if r := strictHost.Call(ctx, never, call("search", `{"query":"milk"}`, "")); !r.OK() {
		t.Errorf("a host that requires tokens, a public search: %q (%s)", r.Code, r.Message)
	}

	// A client that asks gets a consent request for the one call, as before.
	asking := Caller{ClientID: "cl_strict", Name: "strict", Trust: manifest.AuthUser, RequireToken: true}
	denied := gatewaytest.AnswerNext(t, e.st, "", func(ctx context.Context, id string) error { return e.consents.Deny(ctx, id, "test") })
	r := e.b.Call(ctx, asking, probeCall("probe", "look"))
	if r.Code != policy.CodeConsentDenied || r.ConsentID == "" {
		t.Errorf("a require-token client that asks: %q %q (%s)", r.Code, r.ConsentID, r.Message)
	}
	if id := <-denied; id == "" || id != r.ConsentID {
		t.Errorf("the person denied consent request %q, the call was refused under %q", id, r.ConsentID)
	}

	// The lists say the same: usable at once, or after a token or consent.
	needs := map[string]bool{}
	for _, u := range e.b.UsableBy(never) {
		needs[u.Cap.ID] = u.NeedsConsent
	}
	for id, want := range map[string]bool{"probe.org.example.probe.look": false, "probe.org.example.probe.peek": false,
		"probe.org.example.liar.look": true, "probe.org.example.probe.stare": true, "probe.org.example.probe.scribble": true,
		"probe.org.example.probe.confirm": true, "notes.org.example.notes.search": false} {
		if got, listed := needs[id]; !listed || got != want {
			t.Errorf("UsableBy: %s listed %v, needs consent %v, want %v", id, listed, got, want)
		}
	}
	if _, listed := needs["probe.org.example.probe.vault"]; listed {
		t.Error("UsableBy lists a privileged capability to a user client")
	}
	for _, u := range e.b.UsableBy(strict) {
		if u.Cap.ID == "probe.org.example.probe.look" && !u.NeedsConsent {
			t.Error("UsableBy: a require-token client's low-risk read needs no token")
		}
	}
	for _, u := range strictHost.UsableBy(never) {
		if u.Cap.ID == "probe.org.example.probe.look" && !u.NeedsConsent {
			t.Error("UsableBy: a low-risk read needs no token on a host that requires them")
		}
	}
}

// A client disabled or removed by another process (here: straight in the store, as the CLI
// or another replica does) is refused at its very next call, whatever the front cached:
// without a token (its client is checked at use), with a token with a use limit (TakeUse) or
// without one (CheckToken). A disabled client asks the person nothing and gets no token;
// enabled again, it calls as before. Removed, its tokens are revoked.
func TestDisabledClientRefusedAtUse(t *testing.T) {
	e := newEnv(t)
	e.b.o.TokenKey = e.key
	ctx := context.Background()
	unlimited := e.issue(t, alice.ClientID, []string{"app.notes.*"}, 0, time.Hour, e.key)
	limited := e.issue(t, alice.ClientID, []string{"app.notes.*"}, 100, time.Hour, e.key)
	run := call("run", `{"command":"ls"}`, "") // side effects read, user level: no token needed
	calls := map[string]Request{"no token": run, "unlimited token": call("write", `{"id":"9","text":"x"}`, unlimited),
		"limited token": call("write", `{"id":"9","text":"y"}`, limited)}
	for name, req := range calls {
		if r := e.b.Call(ctx, alice, req); !r.OK() {
			t.Fatalf("%s before: %q %s", name, r.Code, r.Message)
		}
	}
	if err := e.st.SetClientDisabled(ctx, alice.ClientID, true); err != nil {
		t.Fatal(err)
	}
	for name, req := range calls {
		before := e.app.notes["9"]
		if r := e.b.Call(ctx, alice, req); r.Code != policy.CodePermissionDenied || !strings.Contains(r.Message, "disabled") {
			t.Errorf("%s, disabled: %q %s", name, r.Code, r.Message)
		}
		if e.app.notes["9"] != before {
			t.Errorf("%s ran for a disabled client", name)
		}
	}
	n, _ := e.st.ListConsents(ctx, "")
	if r := e.b.Call(ctx, alice, call("delete", `{"id":"1"}`, "")); r.Code != policy.CodePermissionDenied {
		t.Errorf("a disabled client's call that would ask: %q %s", r.Code, r.Message)
	}
	if m, _ := e.st.ListConsents(ctx, ""); len(m) != len(n) {
		t.Error("a disabled client's call asked the person")
	}
	if _, err := e.b.RequestCapability(ctx, alice, CapabilityRequest{Capabilities: []string{"app.notes.run"}, Duration: 60}); !errors.Is(err, ErrClientRefused) {
		t.Errorf("a disabled client's token request: %v", err)
	}
	if _, err := e.b.Derive(ctx, alice, DeriveRequest{Parent: unlimited, Capabilities: []string{"app.notes.run"}}); !errors.Is(err, ErrClientRefused) {
		t.Errorf("a disabled client's derivation: %v", err)
	}

	if err := e.st.SetClientDisabled(ctx, alice.ClientID, false); err != nil {
		t.Fatal(err)
	}
	for name, req := range calls {
		if r := e.b.Call(ctx, alice, req); !r.OK() {
			t.Errorf("%s, enabled again: %q %s", name, r.Code, r.Message)
		}
	}

	if err := e.st.DeleteClient(ctx, alice.ClientID, time.Now()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"no token": policy.CodePermissionDenied, "unlimited token": policy.CodeInvalidToken,
		"limited token": policy.CodeInvalidToken} {
		if r := e.b.Call(ctx, alice, calls[name]); r.Code != want {
			t.Errorf("%s, removed: %q %s, want %s", name, r.Code, r.Message, want)
		}
	}
}

// A refused derivation is in the audit log, as a refused call is: a forged parent, another
// client's, one wider than its parent.
func TestDeriveRefusalsAudited(t *testing.T) {
	e := newEnv(t)
	e.b.o.TokenKey = e.key
	ctx := context.Background()
	_, otherKey, _ := ed25519.GenerateKey(nil)
	mine := e.issue(t, alice.ClientID, []string{"app.notes.write"}, 5, time.Hour, e.key)
	bobs := e.issue(t, "cl_bob", []string{"app.notes.write"}, 5, time.Hour, e.key)
	forged := e.issue(t, alice.ClientID, []string{"app.notes.*"}, 0, time.Hour, otherKey)
	for name, c := range map[string]struct {
		parent string
		grants []string
		want   error
		code   string
	}{
		"forged":         {forged, []string{"app.notes.write"}, ErrDeriveParent, policy.CodeInvalidToken},
		"another's":      {bobs, []string{"app.notes.write"}, ErrDeriveParent, policy.CodeInvalidToken},
		"wider":          {mine, []string{"app.notes.delete"}, ErrIssueInvalid, policy.CodeInvalidRequest},
		"a narrower one": {mine, []string{"app.notes.write"}, nil, ""},
	} {
		_, err := e.b.Derive(ctx, alice, DeriveRequest{Parent: c.parent, Capabilities: c.grants, Reason: name})
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
		found := false
		for _, rec := range e.records(t) {
			if rec.Action == "derive_token" && rec.AuditTag == name {
				found = true
				if (c.code == "") != (rec.Decision == "allow") || rec.Code != c.code || rec.ClientID != alice.ClientID {
					t.Errorf("%s: record %+v", name, rec)
				}
			}
		}
		if !found {
			t.Errorf("%s: no derive_token record", name)
		}
	}
}
