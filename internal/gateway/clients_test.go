package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// probeApp answers every capability, and counts what ran.
type probeApp struct{ ran chan string }

func (p *probeApp) Manifest() *manifest.Document { return nil }

func (p *probeApp) Invoke(_ context.Context, id string, _ json.RawMessage, _ sdk.InvocationContext) (sdk.Result, error) {
	p.ran <- id
	return sdk.Result{Success: true, Data: json.RawMessage(`{}`)}, nil
}

// records are the gateway's audit records, oldest first.
func (e *env) records() []audit.Record {
	e.t.Helper()
	return gatewaytest.AuditRecords(e.t, e.g.Store)
}

// Over HTTP: a low-risk read of a Tier 1 app runs without a token for a client its
// auth_level admits, and is audited (its decision and its outcome, no token); a Tier 2 app
// claiming a low-risk read, a medium-risk read, a low-risk write, a public client calling a
// user-level read, a require-token client and a host that requires tokens do not get that.
func TestIPCLowRiskCallsWithoutToken(t *testing.T) {
	t.Parallel()
	probe := &probeApp{ran: make(chan string, 16)}
	e := newEnv(t, options{consentWait: 200 * time.Millisecond, handlers: map[string]sdk.Handler{gatewaytest.ProbeID: probe, gatewaytest.LiarID: probe}})
	e.register(gatewaytest.ProbeID, gatewaytest.ProbeManifest(gatewaytest.ProbeID), "probe")
	if app, err := e.g.Registry.Register(e.ctx, []byte(gatewaytest.ProbeManifest(gatewaytest.LiarID)), "liar"); err != nil || app.Tier != manifest.Tier2 {
		t.Fatalf("the liar app: tier %d, %v", app.Tier, err)
	}
	usr := e.addClient("usr", "user")
	never := e.putClientAs(store.Client{Name: "never", Trust: "user", NeverAsk: true})
	pub := e.addClient("pub", "public")
	strict := e.putClientAs(store.Client{Name: "strict", Trust: "user", RequireToken: true})
	strictNever := e.putClientAs(store.Client{Name: "strictnever", Trust: "user", RequireToken: true, NeverAsk: true})

	r := e.call(usr, "read", `{"id":"1"}`, "")
	wantOK(t, "a user client reads a note without a token", r)
	wantOK(t, "a user client runs a read without a token", e.call(usr, "run", `{"command":"ls"}`, ""))
	wantOK(t, "a never-ask client's low-risk read", e.callApp(never, "probe", "look", `{}`, ""))
	if got := <-probe.ran; got != "probe."+gatewaytest.ProbeID+".look" {
		t.Errorf("ran %s", got)
	}
	wantCode(t, "a public client reads a user-level note", e.call(pub, "read", `{"id":"1"}`, ""), "PERMISSION_DENIED")
	wantOK(t, "a public client's public search", e.call(pub, "search", `{"query":"milk"}`, ""))
	for _, m := range []struct{ app, method string }{{"liar", "look"}, {"probe", "stare"}, {"probe", "scribble"}} {
		wantCode(t, m.app+"."+m.method+" without a token", e.callApp(never, m.app, m.method, `{}`, ""), "CAPABILITY_DENIED")
	}
	wantCode(t, "a require-token client that never asks", e.call(strictNever, "read", `{"id":"1"}`, ""), "CAPABILITY_DENIED")
	asked := e.call(strict, "read", `{"id":"1"}`, "")
	wantCode(t, "a require-token client asks", asked, "CONSENT_REQUIRED")
	if asked.Body.Consent == nil || asked.Body.Consent.ID == "" {
		t.Errorf("a require-token client's call names no consent request: %+v", asked.Body)
	}
	wantOK(t, "a require-token client's public search", e.call(strict, "search", `{"query":"milk"}`, ""))
	select {
	case id := <-probe.ran:
		t.Errorf("%s ran", id)
	default:
	}

	var kinds []string
	for _, rec := range e.records() {
		if rec.CallID == r.Body.Details["call_id"] || (rec.ClientID == usr.ID && rec.Capability == "notes.org.example.notes.read") {
			if rec.TokenID != "" || rec.ClientID != usr.ID {
				t.Errorf("record of the call without a token: %+v", rec)
			}
			kinds = append(kinds, rec.Kind+" "+rec.Decision+" "+rec.Result)
		}
	}
	if strings.Join(kinds, ",") != "decision allow allowed,outcome allow success" {
		t.Errorf("records of the call without a token: %q", kinds)
	}

	needs := func(a agent) map[string]bool {
		status, raw := e.do(a, "GET", "/v1/capabilities", nil)
		var l struct{ Capabilities []ipc.Tool }
		if status != http.StatusOK || json.Unmarshal(raw, &l) != nil {
			t.Fatalf("capabilities: HTTP %d", status)
		}
		m := map[string]bool{}
		for _, c := range l.Capabilities {
			m[c.App+"."+c.Method] = c.NeedsConsent
		}
		return m
	}
	for name, want := range map[string]bool{"notes.read": false, "probe.look": false, "liar.look": true, "probe.stare": true,
		"probe.scribble": true, "settings.get_setting": false, "calc.compute": false, "notes.write": true} {
		if got, ok := needs(usr)[name]; !ok || got != want {
			t.Errorf("%s listed to a user client %v, needs_consent %v, want %v", name, ok, got, want)
		}
	}
	if n := needs(strict); !n["notes.read"] || !n["calc.compute"] || n["notes.search"] {
		t.Errorf("listed to a require-token client: %v", n)
	}

	// A host that requires tokens: the same read asks, a public one does not.
	h := newEnv(t, options{consentWait: 200 * time.Millisecond, requireToken: true})
	hu := h.addClient("usr", "user")
	wantCode(t, "a host that requires tokens", h.call(hu, "read", `{"id":"1"}`, ""), "CONSENT_REQUIRED")
	wantOK(t, "a host that requires tokens, a public search", h.call(hu, "search", `{"query":"milk"}`, ""))
}

// POST /v1/tokens/revoke records the client's revocation as the page and the CLI record
// theirs: token.revoke, a decision before and an outcome after, naming the client; another
// client's token and an unknown one are answered and recorded as unknown, and not revoked.
func TestIPCRevokeRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice, bob := e.addClient("alice", "user"), e.addClient("bob", "user")
	mine := e.mustToken(alice, map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600})
	bobs := e.mustToken(bob, map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600})
	if status, ans := e.revoke(alice, bobs.Token); status != http.StatusNotFound || ans.ErrorCode != "INVALID_TOKEN" {
		t.Errorf("revoking another client's token: HTTP %d %+v", status, ans)
	}
	if st, err := e.g.Store.GetToken(e.ctx, bobs.TokenID); err != nil || st.Revoked {
		t.Errorf("another client's token after the refused revoke: %+v %v", st, err)
	}
	if status, _ := e.revoke(alice, "cap_nosuchtoken"); status != http.StatusNotFound {
		t.Errorf("revoking an unknown token: HTTP %d", status)
	}
	if status, _ := e.revoke(alice, strings.Repeat("x", audit.MaxFieldBytes+1)); status != http.StatusNotFound {
		t.Errorf("revoking a token id longer than any: HTTP %d", status)
	}
	if status, ans := e.revoke(alice, mine.Token); status != http.StatusOK || ans.TokenID != mine.TokenID {
		t.Fatalf("revoke: HTTP %d %+v", status, ans)
	}
	var got []string
	for _, r := range e.records() {
		if r.Action == "token.revoke" {
			if r.ClientID != alice.ID {
				t.Errorf("token.revoke by %q, want the client %s", r.ClientID, alice.ID)
			}
			got = append(got, r.Kind+"|"+r.Result+"|"+r.Code+"|"+r.TokenID)
		}
	}
	want := []string{
		"decision|revoke requested||" + bobs.TokenID, "outcome|error|INVALID_TOKEN|" + bobs.TokenID,
		"decision|revoke requested||cap_nosuchtoken", "outcome|error|INVALID_TOKEN|cap_nosuchtoken",
		"decision|revoke requested||" + mine.TokenID, "outcome|success||" + mine.TokenID,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Two gateways on one store, one SQLite file and one PostgreSQL database: a client disabled
// through one (as the page and the CLI do, operator.ChangeClient) is refused on the other at
// its very next call, with a token or without, and gets no token there; the change moves the
// store's revision; enabled, it calls again on both; removed, it is refused on both and its
// tokens are revoked. Neither gateway syncs its caches in between (no Serve, no sweep), so
// what refuses is the check at use, not a cache that happened to be dropped.
func TestClientChangeRefusedOnEveryReplica(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			dir, storeURL := t.TempDir(), ""
			if kind == "postgres" {
				storeURL = pgtest.Schema(t)
			}
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			var gs []*gateway.Gateway
			var urls []string
			for range 2 {
				g, err := gateway.Open(context.Background(), gateway.Config{DataDir: dir, Store: storeURL, Listen: "-", Socket: "-", Logger: quiet,
					DelayedCommit: -1, ConsentWait: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(g.Handler())
				t.Cleanup(func() { srv.Close(); g.Close() })
				gs, urls = append(gs, g), append(urls, srv.URL)
			}
			ctx := context.Background()
			key := "cgk_replica-test-key"
			c := store.Client{ID: "cl_agent", Name: "agent", KeyHash: ipc.KeyHash(key), Trust: "user", Created: time.Now()}
			if err := gs[0].Store.PutClient(ctx, c); err != nil {
				t.Fatal(err)
			}
			post := func(url, path string, body any) (int, map[string]any) {
				t.Helper()
				raw, _ := json.Marshal(body)
				req, _ := http.NewRequest("POST", url+path, strings.NewReader(string(raw)))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var out map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&out)
				return resp.StatusCode, out
			}
			tokenFor := func(maxUses int) string {
				status, out := post(urls[0], "/v1/capabilities/request", map[string]any{"capabilities": []string{"system.settings.read"}, "duration": 600, "max_uses": maxUses})
				if status != http.StatusOK {
					t.Fatalf("token: HTTP %d %v", status, out)
				}
				return out["token"].(string)
			}
			toks := map[string]string{"no token": "", "a token without a use limit": tokenFor(0), "a token with a use limit": tokenFor(1000)}
			// call is one get_setting through the gateway at url: the answer's code, "" for a
			// success; a 401 (the gateway's cache already knows) is PERMISSION_DENIED too.
			call := func(url, tok string) string {
				t.Helper()
				body := map[string]any{"action": "query", "app": "settings", "method": "get_setting", "params": map[string]any{"category": "sound", "key": "master_volume"}}
				if tok != "" {
					body["capability_token"] = tok
				}
				status, out := post(url, "/v1/ipc", map[string]any{"header": map[string]any{"msg_type": "llm_request", "version": "1.0", "request_id": "r"}, "body": body})
				b, _ := out["body"].(map[string]any)
				if status == http.StatusUnauthorized {
					return "PERMISSION_DENIED"
				}
				if b == nil || status != http.StatusOK {
					t.Fatalf("HTTP %d %v", status, out)
				}
				code, _ := b["error_code"].(string)
				return code
			}
			every := func(when, want string, wantAlt ...string) {
				t.Helper()
				for i, u := range urls {
					for name, tok := range toks {
						if got := call(u, tok); got != want && !(len(wantAlt) > 0 && got == wantAlt[0]) {
							t.Errorf("%s, gateway %d, %s: %q, want %q", when, i, name, got, want)
						}
					}
				}
			}
			every("before", "") // every gateway has the client (and its tokens) cached now
			change := func(action operator.ClientAction) {
				t.Helper()
				before, err := gs[1].Store.Revision(ctx)
				if err != nil {
					t.Fatal(err)
				}
				by := operator.Actor{ID: "person (approval page)", Who: "the person", Where: "on the approval page"}
				if err := operator.ChangeClient(ctx, gs[0].Store, gs[0].Audit, by, c.ID, action, time.Now(), func(err error) { t.Error(err) }); err != nil {
					t.Fatal(err)
				}
				if after, err := gs[1].Store.Revision(ctx); err != nil || after <= before {
					t.Errorf("%s: the revision seen by the other gateway went from %d to %d (%v)", action, before, after, err)
				}
			}
			change(operator.ClientDisable)
			every("disabled", "PERMISSION_DENIED")
			if status, _ := post(urls[1], "/v1/capabilities/request", map[string]any{"capabilities": []string{"system.settings.read"}, "duration": 60}); status != http.StatusUnauthorized {
				t.Errorf("a disabled client's token request on the other gateway: HTTP %d", status)
			}
			change(operator.ClientEnable)
			every("enabled again", "")
			change(operator.ClientRemove)
			for i, u := range urls {
				for name, tok := range toks {
					want := "INVALID_TOKEN" // revoked with the client, or the client unknown
					if tok == "" {
						want = "PERMISSION_DENIED"
					}
					if got := call(u, tok); got != want && got != "PERMISSION_DENIED" {
						t.Errorf("removed, gateway %d, %s: %q, want %q", i, name, got, want)
					}
				}
			}
			live, err := gs[1].Store.ListTokens(ctx, true, time.Now())
			if err != nil || len(live) != 0 {
				t.Errorf("live tokens after the removal: %d %v", len(live), err)
			}
		})
	}
}
