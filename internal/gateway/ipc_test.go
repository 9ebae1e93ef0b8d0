package gateway_test

// End-to-end tests of the gateway through its HTTP IPC API: a real gateway (SQLite store,
// registry, tokens, consent, audit, broker) opened on a temporary data folder, the notes app
// of helpers_test.go registered at Tier 1, served by httptest, and driven only over HTTP as an
// agent would. The person answers consent requests through the consent service or the store,
// as the approval page and the CLI do. Every test ends by closing the gateway and verifying
// its audit log (env.closeAndVerify).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
)

// An unknown, disabled or badly presented client key is 401 on every route, and nothing runs.
func TestIPCRefusesUnknownClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	off := agent{ID: "cl_off", Name: "off", Key: "cgk_disabled-client-key"}
	if err := e.g.Store.PutClient(e.ctx, store.Client{ID: off.ID, Name: off.Name, KeyHash: ipc.KeyHash(off.Key), Trust: "user", Disabled: true, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	search := envelope("req-auth", "notes", "search", `{"query":"milk"}`, "")
	routes := []struct {
		method, path string
		body         []byte
	}{
		{"POST", "/v1/ipc", search},
		{"GET", "/v1/capabilities", nil},
		{"POST", "/v1/capabilities/request", []byte(`{"capabilities":["app.notes.read"],"duration":60}`)},
		{"POST", "/v1/explain", search},
		{"POST", "/v1/tokens/revoke", []byte(`{"token":"cap_00000000000000000000000000000000"}`)},
		{"POST", "/v1/tokens/derive", []byte(`{"token":"cgt1.x","capabilities":["app.notes.read"]}`)},
	}
	auths := map[string]string{
		"none":          "",
		"unknown key":   "Bearer cgk_not-a-client",
		"other case":    "Bearer " + strings.ToUpper(alice.Key),
		"basic scheme":  "Basic " + alice.Key,
		"empty key":     "Bearer ",
		"no scheme":     alice.Key,
		"disabled":      "Bearer " + off.Key,
		"key with junk": "Bearer " + alice.Key + "x",
	}
	for _, rt := range routes {
		for name, auth := range auths {
			t.Run(rt.path+"/"+name, func(t *testing.T) {
				req, _ := http.NewRequest(rt.method, e.srv.URL+rt.path, bytes.NewReader(rt.body))
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := e.srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var body ipc.Response
				json.NewDecoder(resp.Body).Decode(&body)
				if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
					t.Fatalf("HTTP %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
				}
				if body.Body.Status != "error" || body.Body.ErrorCode == "" {
					t.Errorf("401 body: %+v", body.Body)
				}
			})
		}
	}
	if n := e.app.total(); n != 0 {
		t.Fatalf("unauthenticated requests ran the app %d times", n)
	}
	// The scheme name is case-insensitive; the same call with the right key runs.
	status, resp := e.ipcRaw(agent{Key: alice.Key}, search)
	if status != http.StatusOK {
		t.Fatalf("HTTP %d", status)
	}
	wantOK(t, "authenticated search", resp)
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/capabilities", nil)
	req.Header.Set("Authorization", "bearer "+alice.Key)
	if resp, err := e.srv.Client().Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("lower-case scheme: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// Every error code of "Deciding a call" is reached through POST /v1/ipc, as an HTTP 200 with
// an llm_response error envelope, and a refused call never reaches the app.
func TestIPCErrorCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{consentWait: time.Second})
	alice := e.addClient("alice", "user")
	pub := e.addClient("pub", "public")
	never := agent{ID: "cl_never", Name: "never", Key: "cgk_never-asks-key"}
	if err := e.g.Store.PutClient(e.ctx, store.Client{ID: never.ID, Name: never.Name, KeyHash: ipc.KeyHash(never.Key), Trust: "user", NeverAsk: true, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e.secret(never.Key)
	e.register("org.example.ghost", ghostManifest, "ghost")

	now := time.Now()
	readTok := e.mustToken(alice, map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600, "reason": "read notes"}).Token
	onceTok := e.mustToken(alice, map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600, "max_uses": 1}).Token
	expired := e.mint(alice.ID, []string{"app.notes.read"}, token.Constraints{}, now.Add(-time.Hour), now.Add(-time.Minute), e.g.Key)
	forged := e.mint(alice.ID, []string{"app.notes.read"}, token.Constraints{}, now, now.Add(time.Hour), gatewaytest.NewKey(t))
	publishTok := e.mint(alice.ID, []string{"app.notes.publish"}, token.Constraints{}, now, now.Add(time.Hour), e.g.Key)
	pubWrite := e.mint(pub.ID, []string{"app.notes.write"}, token.Constraints{}, now, now.Add(time.Hour), e.g.Key)
	wantOK(t, "the one use of onceTok", e.call(alice, "read", `{"id":"1"}`, onceTok))

	var consentRequired ipc.Response
	cases := []struct {
		name   string
		run    func() ipc.Response
		code   string
		ran    bool   // the app was invoked (and failed)
		detail string // a word the error message must hold
	}{
		{name: "unknown app", code: "APP_NOT_FOUND", run: func() ipc.Response { return e.callApp(alice, "mail", "send", `{}`, "") }},
		{name: "app not running", code: "APP_NOT_FOUND", detail: "not running", run: func() ipc.Response { return e.callApp(alice, "ghost", "ping", `{}`, "") }},
		{name: "unknown method", code: "METHOD_NOT_FOUND", run: func() ipc.Response { return e.call(alice, "shred", `{}`, readTok) }},
		{name: "method of a disabled app", code: "METHOD_NOT_FOUND", run: func() ipc.Response {
			if err := e.g.Registry.SetEnabled(e.ctx, "org.example.ghost", false); err != nil {
				t.Fatal(err)
			}
			return e.callApp(alice, "ghost", "ping", `{}`, "")
		}},
		{name: "forged token", code: "INVALID_TOKEN", run: func() ipc.Response { return e.call(alice, "read", `{"id":"1"}`, forged) }},
		{name: "expired token", code: "TOKEN_EXPIRED", run: func() ipc.Response { return e.call(alice, "read", `{"id":"1"}`, expired) }},
		{name: "exhausted token", code: "TOKEN_EXHAUSTED", run: func() ipc.Response { return e.call(alice, "read", `{"id":"1"}`, onceTok) }},
		{name: "bad params", code: "INVALID_REQUEST", detail: "id", run: func() ipc.Response { return e.call(alice, "read", `{"id":7}`, readTok) }},
		{name: "public client, user capability", code: "PERMISSION_DENIED", run: func() ipc.Response { return e.call(pub, "write", `{"id":"9","text":"x"}`, "") }},
		{name: "public client with a token, user capability", code: "PERMISSION_DENIED", run: func() ipc.Response { return e.call(pub, "write", `{"id":"9","text":"x"}`, pubWrite) }},
		{name: "token does not cover", code: "CAPABILITY_DENIED", detail: "app.notes.write", run: func() ipc.Response { return e.call(alice, "write", `{"id":"9","text":"x"}`, readTok) }},
		{name: "no token, never ask", code: "CAPABILITY_DENIED", run: func() ipc.Response { return e.call(never, "write", `{"id":"9","text":"x"}`, "") }},
		{name: "handler error", code: "EXECUTION_FAILED", ran: true, detail: "no such note", run: func() ipc.Response { return e.call(alice, "read", `{"id":"nope"}`, readTok) }},
		{name: "slow capability", code: "TIMEOUT", ran: true, detail: "50 ms", run: func() ipc.Response { return e.call(alice, "slow", `{}`, "") }},
		{name: "no answer in time", code: "CONSENT_REQUIRED", run: func() ipc.Response {
			r := e.call(alice, "write", `{"id":"9","text":"x"}`, "")
			consentRequired = r
			return r
		}},
		{name: "denied by the person", code: "CONSENT_DENIED", run: func() ipc.Response {
			// The person denies from another process (the CLI): straight in the store.
			got := e.answerNext(consent.KindCall, func(ctx context.Context, id string) error {
				return e.g.Store.AnswerConsent(ctx, id, store.ConsentDenied, "person", "", time.Now())
			})
			r := e.call(alice, "write", `{"id":"9","text":"x"}`, "")
			if id := <-got; r.Body.Consent == nil || r.Body.Consent.ID != id {
				t.Errorf("CONSENT_DENIED answer names consent %+v, the person denied %q", r.Body.Consent, id)
			}
			return r
		}},
		{name: "mandate hands off", code: "HANDOFF", run: func() ipc.Response {
			if err := e.g.Broker.PutMandate(e.ctx, store.Mandate{Permission: "app.notes.publish", Autonomy: "handoff", Updated: time.Now()}); err != nil {
				t.Fatal(err)
			}
			r := e.call(alice, "publish", `{"id":"1"}`, publishTok)
			if r.Body.Details["decision"] != "handoff" {
				t.Errorf("decision %v, want handoff", r.Body.Details["decision"])
			}
			// What was prepared comes back for the person to do, and nothing ran.
			prep, _ := r.Body.Details["prepared"].(map[string]any)
			if prep["app"] != "notes" || prep["method"] != "publish" || fmt.Sprint(prep["params"]) != "map[id:1]" {
				t.Errorf("prepared %v", r.Body.Details["prepared"])
			}
			return r
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.app.total()
			r := tc.run()
			wantCode(t, tc.name, r, tc.code)
			if tc.detail != "" && !strings.Contains(r.Body.ErrorMessage, tc.detail) {
				t.Errorf("message %q does not say %q", r.Body.ErrorMessage, tc.detail)
			}
			if id, _ := r.Body.Details["call_id"].(string); !strings.HasPrefix(id, "call_") {
				t.Errorf("no call_id in details: %v", r.Body.Details)
			}
			for _, s := range []string{readTok, onceTok, expired, forged, publishTok, pubWrite, alice.Key} {
				if strings.Contains(r.Body.ErrorMessage, s) {
					t.Error("the error message holds a token or a key")
				}
			}
			if ran := e.app.total() != before; ran != tc.ran {
				t.Errorf("the app ran: %v, want %v", ran, tc.ran)
			}
		})
	}
	if _, ok := e.app.note("9"); ok || e.app.count("publish") != 0 {
		t.Fatal("a refused write or publish ran")
	}

	// The call that waited for the person in vain says which request waits, so that the agent
	// can point the person to it; the request stays pending.
	t.Run("CONSENT_REQUIRED names its consent request", func(t *testing.T) {
		cs, err := e.g.Store.ListConsents(e.ctx, store.ConsentPending)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(cs, func(c store.Consent) bool { return c.Kind == consent.KindCall && c.ClientID == alice.ID })
		if i < 0 {
			t.Fatal("the call's consent request is not pending")
		}
		ref := consentRequired.Body.Consent
		if ref == nil || ref.ID != cs[i].ID || !strings.Contains(ref.URL, ref.ID) {
			t.Fatalf("the answer names %+v, the pending request is %s", ref, cs[i].ID)
		}
	})
}

// An envelope or params that break a rule are INVALID_REQUEST naming the field path, never
// echoing the offending value.
func TestIPCInvalidRequestNamesFieldNotValue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	const secret = "S3CRET-VALUE-42"
	hdr := `"header":{"msg_type":"llm_request","version":"1.0","request_id":"req-bad","timestamp":1706620800}`
	body := `"body":{"action":"execute","app":"notes","method":"search","params":{"query":"milk"}}`
	envs := []struct {
		name, data, path string
	}{
		{"not JSON", `{"header": ` + secret, ""},
		{"not an object", `["` + secret + `"]`, ""},
		{"duplicate member", `{` + hdr + `,` + hdr + `,` + body + `}`, ""},
		{"no request_id", `{"header":{"msg_type":"llm_request","version":"1.0"},` + body + `}`, "header.request_id"},
		{"bad request_id", `{"header":{"msg_type":"llm_request","version":"1.0","request_id":"` + secret + ` !"},` + body + `}`, "header.request_id"},
		{"wrong msg_type", `{"header":{"msg_type":"` + secret + `","version":"1.0","request_id":"r"},` + body + `}`, "header.msg_type"},
		{"wrong version", `{"header":{"msg_type":"llm_request","version":"` + secret + `","request_id":"r"},` + body + `}`, "header.version"},
		{"bad timestamp", `{"header":{"msg_type":"llm_request","version":"1.0","request_id":"r","timestamp":"` + secret + `"},` + body + `}`, "header.timestamp"},
		{"unknown body member", `{` + hdr + `,"body":{"action":"execute","app":"notes","method":"search","params":{},"password":"` + secret + `"}}`, "body"},
		{"unknown envelope member", `{` + hdr + `,` + body + `,"extra":"` + secret + `"}`, ""},
		{"bad app", `{` + hdr + `,"body":{"action":"execute","app":"Notes;` + secret + `","method":"search"}}`, "body.app"},
		{"bad method", `{` + hdr + `,"body":{"action":"execute","app":"notes","method":"../` + secret + `"}}`, "body.method"},
		{"no method", `{` + hdr + `,"body":{"action":"execute","app":"notes"}}`, "body.method"},
		{"bad action", `{` + hdr + `,"body":{"action":"` + secret + `","app":"notes","method":"search"}}`, "body.action"},
		{"request_capability on /v1/ipc", `{` + hdr + `,"body":{"action":"request_capability","app":"notes","method":"search"}}`, "body.action"},
		{"params not an object", `{` + hdr + `,"body":{"action":"execute","app":"notes","method":"search","params":["` + secret + `"]}}`, "body.params"},
		{"bad token text", `{` + hdr + `,"body":{"action":"execute","app":"notes","method":"search","capability_token":"cgt1 ` + secret + `"}}`, "body.capability_token"},
	}
	for _, tc := range envs {
		t.Run(tc.name, func(t *testing.T) {
			status, raw := e.do(alice, "POST", "/v1/ipc", []byte(tc.data))
			var r ipc.Response
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatalf("HTTP %d: %s", status, raw)
			}
			if status != http.StatusOK || r.Body.Status != "error" || r.Body.ErrorCode != "INVALID_REQUEST" {
				t.Fatalf("HTTP %d: %s", status, raw)
			}
			if strings.Contains(string(raw), secret) {
				t.Errorf("the answer echoes the offending value: %s", raw)
			}
			problems, _ := r.Body.Details["problems"].([]any)
			if len(problems) == 0 {
				t.Fatalf("no problems listed: %s", raw)
			}
			if tc.path != "" {
				found := false
				for _, p := range problems {
					if m, _ := p.(map[string]any); m["path"] == tc.path && m["rule"] != "" {
						found = true
					}
				}
				if !found {
					t.Errorf("no problem at %s: %s", tc.path, raw)
				}
			}
		})
	}
	// Params that break the capability's schema are refused at step 3, before any token or
	// consent is looked at, naming the field path and not the value.
	params := []struct {
		name, method, params, field string
	}{
		{"wrong type", "write", `{"id":"n","text":424242}`, "text"},
		{"missing required", "write", `{"id":"n"}`, "text"},
		{"unknown member", "write", `{"id":"n","text":"x","` + secret + `":"` + secret + `"}`, "params"},
		{"public capability, wrong type", "search", `{"query":{"q":"` + secret + `"}}`, "query"},
	}
	for _, tc := range params {
		t.Run(tc.name, func(t *testing.T) {
			r := e.call(alice, tc.method, tc.params, "")
			wantCode(t, tc.name, r, "INVALID_REQUEST")
			for _, v := range []string{secret, "424242"} {
				if strings.Contains(r.Body.ErrorMessage, v) || strings.Contains(fmt.Sprint(r.Body.Details), v) {
					t.Errorf("the answer echoes the value: %q %v", r.Body.ErrorMessage, r.Body.Details)
				}
			}
			if !strings.Contains(r.Body.ErrorMessage, tc.field) {
				t.Errorf("message %q does not name %q", r.Body.ErrorMessage, tc.field)
			}
		})
	}
	if n := e.app.total(); n != 0 {
		t.Fatalf("invalid requests ran the app %d times", n)
	}
}

// 64 callers at once on one token with max_uses 10: exactly 10 run, 54 are TOKEN_EXHAUSTED.
func TestIPCExactlyMaxUsesUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	iss := e.mustToken(alice, map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600, "max_uses": 10, "reason": "count"})
	var mu sync.Mutex
	codes := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 64 {
		wg.Go(func() {
			<-start
			r := e.call(alice, "read", `{"id":"1"}`, iss.Token)
			mu.Lock()
			codes[r.Body.Status+":"+r.Body.ErrorCode]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	if codes["success:"] != 10 || codes["error:TOKEN_EXHAUSTED"] != 54 || len(codes) != 2 {
		t.Fatalf("answers: %v", codes)
	}
	if n := e.app.count("read"); n != 10 {
		t.Fatalf("the app ran %d times", n)
	}
	st, err := e.g.Store.GetToken(e.ctx, iss.TokenID)
	if err != nil || st.Uses != 10 {
		t.Fatalf("stored uses %d (%v)", st.Uses, err)
	}
}

// flip changes one character in the middle of a token's payload.
func flip(wire string) string {
	b := []byte(wire)
	i := len(token.WirePrefix) + (len(b)-len(token.WirePrefix))/2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// edit rewrites a token's JSON payload and keeps its signature: a widening by hand.
func edit(t *testing.T, wire, old, new string) string {
	t.Helper()
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(wire, token.WirePrefix))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(payload, []byte(old)) {
		t.Fatalf("the token does not hold %s", old)
	}
	return token.WirePrefix + base64.RawURLEncoding.EncodeToString(bytes.Replace(payload, []byte(old), []byte(new), 1))
}

// Tokens that are forged, tampered with, expired, revoked, exhausted, another client's,
// unknown to this gateway or another gateway's are refused, each with its code, and never run.
func TestIPCTokensRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	bob := e.addClient("bob", "user")
	read := func(n int) map[string]any {
		b := map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600, "reason": "read"}
		if n > 0 {
			b["max_uses"] = n
		}
		return b
	}
	now := time.Now()
	good := e.mustToken(alice, read(0)).Token
	once := e.mustToken(alice, read(1)).Token
	bobs := e.mustToken(bob, read(0)).Token
	unrecorded, err := token.Sign(token.Token{ID: token.NewID(), IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(),
		Capabilities: []string{"app.notes.read"}, ClientID: alice.ID}, e.g.Key)
	if err != nil {
		t.Fatal(err)
	}
	e.secret(unrecorded)

	// Another gateway, on its own data folder, knows alice by the same id and key and issues
	// her a token of its own.
	e2 := newEnv(t, options{})
	e2.putClient(alice, "user")
	foreign := e2.mustToken(alice, read(0)).Token
	e.secret(foreign)
	wantOK(t, "the other gateway's token at home", e2.call(alice, "read", `{"id":"1"}`, foreign))

	refused := []struct {
		name, tok, code string
	}{
		{"forged", e.mint(alice.ID, []string{"app.notes.read"}, token.Constraints{}, now, now.Add(time.Hour), gatewaytest.NewKey(t)), "INVALID_TOKEN"},
		{"tampered: a character flipped", flip(good), "INVALID_TOKEN"},
		{"tampered: max_uses raised", edit(t, once, `"max_uses":1`, `"max_uses":9`), "INVALID_TOKEN"},
		{"tampered: client changed", edit(t, bobs, `"client_id":"cl_bob"`, `"client_id":"cl_alice"`), "INVALID_TOKEN"},
		{"truncated", good[:len(good)-4], "INVALID_TOKEN"},
		{"not a token", "cap_0123456789abcdef0123456789abcdef", "INVALID_TOKEN"},
		{"expired", e.mint(alice.ID, []string{"app.notes.read"}, token.Constraints{}, now.Add(-2*time.Hour), now.Add(-time.Hour), e.g.Key), "TOKEN_EXPIRED"},
		{"another client's", bobs, "INVALID_TOKEN"},
		{"unknown to this gateway", unrecorded, "INVALID_TOKEN"},
		{"another gateway's", foreign, "INVALID_TOKEN"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.name, e.call(alice, "read", `{"id":"1"}`, tc.tok), tc.code)
		})
	}
	if n := e.app.count("read"); n != 0 {
		t.Fatalf("refused tokens ran the app %d times", n)
	}

	// The tampered copy took nothing from the real one: it has its one use, then no more.
	wantOK(t, "once, first use", e.call(alice, "read", `{"id":"1"}`, once))
	wantCode(t, "once, second use", e.call(alice, "read", `{"id":"1"}`, once), "TOKEN_EXHAUSTED")

	// Revocation through the API: another client cannot revoke alice's token (it is answered
	// as unknown, and the token keeps working); alice can, and the very next call is refused.
	wantOK(t, "before revocation", e.call(alice, "read", `{"id":"1"}`, good))
	if status, ans := e.revoke(bob, good); status != http.StatusNotFound || ans.ErrorCode != "INVALID_TOKEN" {
		t.Fatalf("bob revoking alice's token: HTTP %d %+v", status, ans)
	}
	wantOK(t, "after bob's attempt", e.call(alice, "read", `{"id":"1"}`, good))
	if status, ans := e.revoke(alice, good); status != http.StatusOK || ans.Status != "success" {
		t.Fatalf("revoke: HTTP %d %+v", status, ans)
	}
	wantCode(t, "the very next call", e.call(alice, "read", `{"id":"1"}`, good), "INVALID_TOKEN")
	// By its id too.
	byID := e.mustToken(alice, read(0))
	if status, _ := e.revoke(alice, byID.TokenID); status != http.StatusOK {
		t.Fatalf("revoke by id: HTTP %d", status)
	}
	wantCode(t, "revoked by id", e.call(alice, "read", `{"id":"1"}`, byID.Token), "INVALID_TOKEN")
	if status, ans := e.revoke(alice, "cap_ffffffffffffffffffffffffffffffff"); status != http.StatusNotFound || ans.ErrorCode != "INVALID_TOKEN" {
		t.Fatalf("revoking an unknown token: HTTP %d %+v", status, ans)
	}
	if n := e.app.count("read"); n != 3 {
		t.Fatalf("the app ran %d times, want 3", n)
	}
}

// POST /v1/explain answers what a call would get with no side effect: no use is taken and
// nothing runs.
func TestIPCExplainHasNoSideEffect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	once := e.mustToken(alice, map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600, "max_uses": 1}).Token
	for range 3 {
		status, raw := e.do(alice, "POST", "/v1/explain", envelope("req-x", "notes", "read", `{"id":"1"}`, once))
		var d struct {
			Outcome string   `json:"outcome"`
			Trace   []string `json:"trace"`
		}
		if err := json.Unmarshal(raw, &d); err != nil || status != http.StatusOK || d.Outcome != "allow" || len(d.Trace) == 0 {
			t.Fatalf("explain: HTTP %d %s", status, raw)
		}
		if strings.Contains(string(raw), once) {
			t.Fatal("explain echoes the token")
		}
	}
	if e.app.total() != 0 {
		t.Fatal("explain ran the call")
	}
	wantOK(t, "the one use after explain", e.call(alice, "read", `{"id":"1"}`, once))
}

// Attenuation through POST /v1/tokens/derive: a narrower child works within its own limits;
// a wider one is refused naming the field; the child's uses count against the parent;
// revoking the parent stops the child; no client derives from another's token.
func TestIPCDeriveAttenuation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	bob := e.addClient("bob", "user")
	base := t.TempDir()
	dirA, dirB := filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, d := range []string{filepath.Join(dirA, "sub"), dirB} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(dirB, filepath.Join(dirA, "link")); err != nil {
		t.Fatal(err)
	}
	parent := e.mustToken(alice, map[string]any{"capabilities": []string{"app.notes.read", "app.notes.run"}, "duration": 600, "max_uses": 4,
		"reason": "parent", "constraints": map[string]any{"allowed_paths": []string{dirA + "/**"}, "denied_commands": []string{"rm -rf"}}})

	// Wider in any way: refused, naming the field, never the value.
	wider := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"wider grant", map[string]any{"capabilities": []string{"app.notes.*"}}, "capabilities[0]"},
		{"another grant", map[string]any{"capabilities": []string{"app.notes.read", "app.notes.write"}}, "capabilities[1]"},
		{"more uses", map[string]any{"capabilities": []string{"app.notes.read"}, "max_uses": 10}, "constraints.max_uses"},
		{"path outside", map[string]any{"capabilities": []string{"app.notes.run"}, "constraints": map[string]any{"allowed_paths": []string{dirB + "/**"}}}, "constraints.allowed_paths[0]"},
		{"path through a link outside", map[string]any{"capabilities": []string{"app.notes.run"}, "constraints": map[string]any{"allowed_paths": []string{dirA + "/link/**"}}}, "constraints.allowed_paths[0]"},
		{"path with ..", map[string]any{"capabilities": []string{"app.notes.run"}, "constraints": map[string]any{"allowed_paths": []string{dirA + "/../b/**"}}}, "constraints.allowed_paths[0]"},
		{"relative path", map[string]any{"capabilities": []string{"app.notes.run"}, "constraints": map[string]any{"allowed_paths": []string{"b/**"}}}, "constraints.allowed_paths[0]"},
		{"everything", map[string]any{"capabilities": []string{"*"}}, "capabilities[0]"},
	}
	for _, tc := range wider {
		t.Run(tc.name, func(t *testing.T) {
			tc.body["token"] = parent.Token
			status, ans := e.derive(alice, tc.body)
			if status != http.StatusBadRequest || ans.ErrorCode != "INVALID_REQUEST" || ans.Token != "" {
				t.Fatalf("HTTP %d %+v", status, ans)
			}
			if !strings.Contains(ans.ErrorMessage, tc.field) {
				t.Errorf("message %q does not name %s", ans.ErrorMessage, tc.field)
			}
			if strings.Contains(ans.ErrorMessage, base) || strings.Contains(ans.ErrorMessage, parent.Token) {
				t.Errorf("message echoes a value: %q", ans.ErrorMessage)
			}
		})
	}
	t.Run("later expiry", func(t *testing.T) {
		status, ans := e.derive(alice, map[string]any{"token": parent.Token, "capabilities": []string{"app.notes.read"}, "duration": 100000})
		if status != http.StatusBadRequest || ans.ErrorCode != "INVALID_REQUEST" ||
			!(strings.Contains(ans.ErrorMessage, "expires_at") || strings.Contains(ans.ErrorMessage, "duration")) {
			t.Fatalf("HTTP %d %+v", status, ans)
		}
	})
	t.Run("malformed body", func(t *testing.T) {
		for _, body := range []string{`{"token":""}`, `{"token":"x","capabilities":["app.notes.read"],"extra":1}`, `not json`,
			`{"token":"x","capabilities":["app.notes.read"],"constraints":{"allowed_pathz":["/"]}}`} {
			status, raw := e.do(alice, "POST", "/v1/tokens/derive", []byte(body))
			if status != http.StatusBadRequest || !strings.Contains(string(raw), "INVALID_REQUEST") {
				t.Errorf("%s: HTTP %d %s", body, status, raw)
			}
		}
	})

	// Narrower children work, within their own limits.
	status, child := e.derive(alice, map[string]any{"token": parent.Token, "capabilities": []string{"app.notes.read"}, "duration": 60, "max_uses": 2, "reason": "sub-agent"})
	if status != http.StatusOK || child.Token == "" || child.ExpiresAt > parent.ExpiresAt {
		t.Fatalf("narrower child: HTTP %d %+v", status, child)
	}
	status, runChild := e.derive(alice, map[string]any{"token": parent.Token, "capabilities": []string{"app.notes.run"}, "max_uses": 1,
		"constraints": map[string]any{"allowed_paths": []string{dirA + "/sub/**"}}})
	if status != http.StatusOK {
		t.Fatalf("run child: HTTP %d %+v", status, runChild)
	}
	wantOK(t, "child read", e.call(alice, "read", `{"id":"1"}`, child.Token))                                         // parent: 1 use
	wantCode(t, "child run: not granted", e.call(alice, "run", `{"command":"ls"}`, child.Token), "CAPABILITY_DENIED") // no use
	wantCode(t, "run child: outside its narrower path", e.call(alice, "run", `{"command":"ls","path":"`+dirA+`/x"}`, runChild.Token), "CAPABILITY_DENIED")
	wantCode(t, "run child: the parent's denied command", e.call(alice, "run", `{"command":"rm -rf /","path":"`+dirA+`/sub/x"}`, runChild.Token), "CAPABILITY_DENIED")
	wantOK(t, "run child within its path", e.call(alice, "run", `{"command":"ls","path":"`+dirA+`/sub/x"}`, runChild.Token)) // parent: 2 uses
	wantCode(t, "run child used up", e.call(alice, "run", `{"command":"ls","path":"`+dirA+`/sub/x"}`, runChild.Token), "TOKEN_EXHAUSTED")

	// The children's uses counted against the parent: two left of four.
	wantOK(t, "parent use 3", e.call(alice, "read", `{"id":"1"}`, parent.Token))
	wantOK(t, "parent use 4", e.call(alice, "read", `{"id":"1"}`, parent.Token))
	wantCode(t, "child with a use left, parent used up", e.call(alice, "read", `{"id":"1"}`, child.Token), "TOKEN_EXHAUSTED")
	wantCode(t, "parent used up", e.call(alice, "read", `{"id":"1"}`, parent.Token), "TOKEN_EXHAUSTED")
	if st, err := e.g.Store.GetToken(e.ctx, parent.TokenID); err != nil || st.Uses != 4 {
		t.Fatalf("parent uses %d (%v), want 4", st.Uses, err)
	}
	if status, ans := e.derive(alice, map[string]any{"token": parent.Token, "capabilities": []string{"app.notes.read"}}); status != http.StatusForbidden || ans.ErrorCode != "INVALID_TOKEN" {
		t.Fatalf("derive from a used-up parent: HTTP %d %+v", status, ans)
	}

	// Revoking the parent through the API stops its children and grandchildren at their next call.
	p2 := e.mustToken(alice, map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600})
	_, c2 := e.derive(alice, map[string]any{"token": p2.Token, "capabilities": []string{"app.notes.read"}})
	_, g2 := e.derive(alice, map[string]any{"token": c2.Token, "capabilities": []string{"app.notes.read"}, "max_uses": 5})
	if c2.Token == "" || g2.Token == "" {
		t.Fatalf("child %+v, grandchild %+v", c2, g2)
	}
	wantOK(t, "child before revocation", e.call(alice, "read", `{"id":"1"}`, c2.Token))
	wantOK(t, "grandchild before revocation", e.call(alice, "read", `{"id":"1"}`, g2.Token))
	if status, _ := e.revoke(alice, p2.Token); status != http.StatusOK {
		t.Fatalf("revoke parent: HTTP %d", status)
	}
	wantCode(t, "child after the parent's revocation", e.call(alice, "read", `{"id":"1"}`, c2.Token), "INVALID_TOKEN")
	wantCode(t, "grandchild after the parent's revocation", e.call(alice, "read", `{"id":"1"}`, g2.Token), "INVALID_TOKEN")
	wantCode(t, "revoked parent", e.call(alice, "read", `{"id":"1"}`, p2.Token), "INVALID_TOKEN")
	if status, ans := e.derive(alice, map[string]any{"token": p2.Token, "capabilities": []string{"app.notes.read"}}); status != http.StatusForbidden || ans.ErrorCode != "INVALID_TOKEN" {
		t.Fatalf("derive from a revoked parent: HTTP %d %+v", status, ans)
	}

	// Another client can neither derive from alice's token nor use what it would get.
	p3 := e.mustToken(alice, map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600})
	if status, ans := e.derive(bob, map[string]any{"token": p3.Token, "capabilities": []string{"app.notes.read"}}); status != http.StatusForbidden || ans.ErrorCode != "INVALID_TOKEN" || ans.Token != "" {
		t.Fatalf("bob deriving from alice's token: HTTP %d %+v", status, ans)
	}
	// A forged parent is no parent.
	forged := e.mint(alice.ID, []string{"app.notes.read"}, token.Constraints{}, time.Now(), time.Now().Add(time.Hour), gatewaytest.NewKey(t))
	if status, ans := e.derive(alice, map[string]any{"token": forged, "capabilities": []string{"app.notes.read"}}); status != http.StatusForbidden || ans.ErrorCode != "INVALID_TOKEN" {
		t.Fatalf("derive from a forged parent: HTTP %d %+v", status, ans)
	}
}

// Constraint bypass attempts through the API: every path that leaves the allowed folder
// (by "..", a link, or being relative) and every spelling of a denied command is refused with
// CAPABILITY_DENIED, and the app never runs.
func TestIPCConstraintBypassesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	base := t.TempDir()
	allowed, outside := filepath.Join(base, "allowed"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(allowed, "docs"), outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(allowed, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(allowed, "docs", "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside", filepath.Join(allowed, "docs", "up")); err != nil {
		t.Fatal(err)
	}
	tok := e.mustToken(alice, map[string]any{"capabilities": []string{"app.notes.run"}, "duration": 600, "reason": "run over the notes",
		"constraints": map[string]any{"allowed_paths": []string{allowed + "/**"}, "denied_commands": []string{"rm -rf"}}}).Token

	params := func(kv ...string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	cases := map[string]string{
		"..":                          params("command", "ls", "path", allowed+"/../outside/secret.txt"),
		".. deeper":                   params("command", "ls", "path", allowed+"/docs/../../outside/secret.txt"),
		"// and /./ with ..":          params("command", "ls", "path", allowed+"//./docs/..//../outside"),
		"link to a folder outside":    params("command", "ls", "path", allowed+"/escape/secret.txt"),
		"link to the folder outside":  params("command", "ls", "path", allowed+"/escape"),
		"link to a file outside":      params("command", "ls", "path", allowed+"/docs/notes.txt"),
		"relative link outside":       params("command", "ls", "path", allowed+"/docs/up/secret.txt"),
		"relative path":               params("command", "ls", "path", "docs/a.txt"),
		"relative path with ..":       params("command", "ls", "path", "../outside/secret.txt"),
		"dot path":                    params("command", "ls", "path", "."),
		"outside, absolute":           params("command", "ls", "path", outside+"/secret.txt"),
		"the allowed folder's parent": params("command", "ls", "path", base),
		"format path param outside":   params("command", "ls", "dest", outside+"/copy.txt"),
		"format path param via link":  params("command", "ls", "dest", allowed+"/escape/copy.txt"),
		"rm -fr /":                    params("command", "rm -fr /"),
		"/bin/rm -r -f /":             params("command", "/bin/rm -r -f /"),
		"rm  -rf  /":                  params("command", "rm  -rf  /"),
		"'rm' -rf /":                  params("command", "'rm' -rf /"),
		"sudo rm -rf /":               params("command", "sudo rm -rf /"),
		"env rm -rf /":                params("command", "env rm -rf /"),
		`sh -c "rm -rf /"`:            params("command", `sh -c "rm -rf /"`),
		"ls; rm -rf /":                params("command", "ls; rm -rf /"),
		"ls && rm -rf /":              params("command", "ls && rm -rf /"),
		"$(rm -rf /)":                 params("command", "$(rm -rf /)"),
		"rm -rf /":                    params("command", "rm -rf /"),
		"rm -r --force /":             params("command", "rm -r --force /"),
		"allowed path, denied cmd":    params("command", "rm -rf /", "path", allowed+"/docs"),
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			r := e.call(alice, "run", p, tok)
			wantCode(t, name, r, "CAPABILITY_DENIED")
			if strings.Contains(r.Body.ErrorMessage, base) || strings.Contains(r.Body.ErrorMessage, "-rf") ||
				strings.Contains(r.Body.ErrorMessage, "-fr") || strings.Contains(r.Body.ErrorMessage, "&&") {
				t.Errorf("the refusal echoes the value: %q", r.Body.ErrorMessage)
			}
		})
	}
	if n := e.app.count("run"); n != 0 {
		t.Fatalf("refused commands ran the app %d times", n)
	}
	// What the constraints allow runs: the guard is not refusing everything.
	for _, p := range []string{
		params("command", "ls -l", "path", allowed+"/docs/a.txt"),
		params("command", "ls", "path", allowed+"/docs/../docs/b.txt", "dest", allowed+"/c.txt"),
		// Under allowed_paths the command's words are paths too, resolved against the
		// workspace when the call names no cwd.
		params("command", "rm -i "+allowed+"/docs/old.txt", "path", allowed+"/docs"),
	} {
		wantOK(t, p, e.call(alice, "run", p, tok))
	}
	if n := e.app.count("run"); n != 3 {
		t.Fatalf("allowed commands ran the app %d times, want 3", n)
	}
}

// Consent for one call through the API: the waiting call completes when the person approves
// (and can be undone by its caller only), and is CONSENT_DENIED when they deny.
func TestIPCConsentForOneCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	bob := e.addClient("bob", "user")

	got := e.answerNext(consent.KindCall, func(ctx context.Context, id string) error { return e.g.Consent.Deny(ctx, id, "person") })
	r := e.call(alice, "delete", `{"id":"1"}`, "")
	id := <-got
	wantCode(t, "denied delete", r, "CONSENT_DENIED")
	if r.Body.Consent == nil || r.Body.Consent.ID != id {
		t.Errorf("the answer names consent %+v, the person denied %q", r.Body.Consent, id)
	}
	if c := e.consentState(id); c.State != store.ConsentDenied || c.ClientID != alice.ID {
		t.Errorf("consent after deny: %+v", c)
	}
	if _, ok := e.app.note("1"); !ok || e.app.count("delete") != 0 {
		t.Fatal("a denied delete ran")
	}

	got = e.answerNext(consent.KindCall, func(ctx context.Context, id string) error { return e.g.Consent.Approve(ctx, id, "person", false) })
	r = e.call(alice, "delete", `{"id":"1"}`, "")
	id = <-got
	wantOK(t, "approved delete", r)
	if r.Body.UndoToken == "" || r.Body.UndoUntil <= time.Now().UnixMilli() {
		t.Fatalf("no undo token in a reversible call's answer: %+v", r.Body)
	}
	if c := e.consentState(id); c.State != store.ConsentApproved {
		t.Errorf("consent after approve: %+v", c)
	}
	if _, ok := e.app.note("1"); ok {
		t.Fatal("the approved delete did not run")
	}

	undo := func(a agent, undoToken string) ipc.Response {
		data, _ := json.Marshal(map[string]any{
			"header": map[string]any{"msg_type": "llm_request", "version": "1.0", "request_id": "req-undo"},
			"body":   map[string]any{"action": "undo", "undo_token": undoToken},
		})
		_, resp := e.ipcRaw(a, data)
		return resp
	}
	wantCode(t, "bob undoing alice's call", undo(bob, r.Body.UndoToken), "INVALID_TOKEN")
	if v, ok := e.app.note("1"); ok || v != "" {
		t.Fatal("another client's undo restored the note")
	}
	if u := undo(alice, r.Body.UndoToken); u.Body.Status != "success" {
		t.Fatalf("undo: %+v", u.Body)
	}
	if v, _ := e.app.note("1"); v != "milk" {
		t.Fatal("undo did not restore the note")
	}
	wantCode(t, "second undo", undo(alice, r.Body.UndoToken), "INVALID_TOKEN")
}

// An unanswered consent request expires as denied: the waiting call is CONSENT_DENIED and the
// request is "expired" in the store; so is a token request.
func TestIPCConsentExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{consentTTL: 300 * time.Millisecond, consentWait: 3 * time.Second})
	alice := e.addClient("alice", "user")
	r := e.call(alice, "write", `{"id":"9","text":"x"}`, "")
	wantCode(t, "unanswered call", r, "CONSENT_DENIED")
	if r.Body.Consent == nil {
		t.Fatal("the answer names no consent request")
	}
	if c := e.consentState(r.Body.Consent.ID); c.State != store.ConsentExpired {
		t.Fatalf("consent state %q, want expired", c.State)
	}
	if _, ok := e.app.note("9"); ok || e.app.count("write") != 0 {
		t.Fatal("an unanswered write ran")
	}
	// Answering it now is too late.
	if err := e.g.Consent.Approve(e.ctx, r.Body.Consent.ID, "person", false); err == nil {
		t.Fatal("an expired request was approved")
	}

	status, ans := e.requestToken(alice, map[string]any{"capabilities": []string{"app.notes.write"}, "duration": 600, "reason": "write"})
	if status != http.StatusForbidden || ans.ErrorCode != "CONSENT_DENIED" || ans.Token != "" {
		t.Fatalf("unanswered token request: HTTP %d %+v", status, ans)
	}
	cs, err := e.g.Store.ListConsents(e.ctx, store.ConsentExpired)
	if err != nil || len(cs) != 2 {
		t.Fatalf("expired requests: %d (%v), want 2", len(cs), err)
	}
}

// An allowed irreversible call waits out its delayed-commit window, in which the person can
// cancel it: the call is CONSENT_DENIED and never runs. Uncancelled, it runs after the window.
func TestIPCDelayedCommitCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{delayedCommit: 2 * time.Second})
	alice := e.addClient("alice", "user")
	tok := e.approvedToken(alice, map[string]any{"capabilities": []string{"app.notes.publish"}, "duration": 600, "reason": "publish"}).Token

	got := e.answerNext(consent.KindCommit, func(ctx context.Context, id string) error {
		// The person finds the commit request in the pending list and cancels it.
		cs, err := e.g.Store.ListConsents(ctx, store.ConsentPending)
		if err != nil || !slices.ContainsFunc(cs, func(c store.Consent) bool { return c.ID == id && c.Kind == consent.KindCommit }) {
			return fmt.Errorf("the commit request is not listed as pending: %v", err)
		}
		return e.g.Consent.Cancel(ctx, id, "person")
	})
	r := e.call(alice, "publish", `{"id":"1"}`, tok)
	id := <-got
	wantCode(t, "cancelled publish", r, "CONSENT_DENIED")
	if r.Body.Consent == nil || r.Body.Consent.ID != id {
		t.Errorf("the answer names consent %+v, the person cancelled %q", r.Body.Consent, id)
	}
	if c := e.consentState(id); c.State != store.ConsentCancelled || c.AnsweredBy != "person" {
		t.Errorf("commit request after cancel: %+v", c)
	}
	if e.app.count("publish") != 0 {
		t.Fatal("a cancelled publish ran")
	}

	r = e.call(alice, "publish", `{"id":"2"}`, tok)
	wantOK(t, "uncancelled publish", r)
	if e.app.count("publish") != 1 {
		t.Fatal("the uncancelled publish did not run")
	}
	cs, err := e.g.Store.ListConsents(e.ctx, store.ConsentApproved)
	if err != nil || !slices.ContainsFunc(cs, func(c store.Consent) bool {
		return c.Kind == consent.KindCommit && c.AnsweredBy == consent.ByWindowElapsed
	}) {
		t.Fatalf("no commit request approved by its window's end: %+v %v", cs, err)
	}
}

// Issuing a token for a medium- or high-risk permission through POST /v1/capabilities/request
// waits for the person: approved, the token comes back and records the consent (its
// destructive calls run without asking again); denied, CONSENT_DENIED; no answer in time,
// 202 CONSENT_REQUIRED with the request's id.
func TestIPCTokenRequestNeedsConsent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")

	low := e.mustToken(alice, map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600})
	if low.ConsentID != "" {
		t.Fatalf("a low-risk token asked for consent: %+v", low)
	}
	write := e.approvedToken(alice, map[string]any{"capabilities": []string{"app.notes.write"}, "duration": 600, "max_uses": 2, "reason": "write notes"})
	if c := e.consentState(write.ConsentID); c.State != store.ConsentApproved || c.Kind != consent.KindToken {
		t.Fatalf("the token's consent: %+v", c)
	}
	wantOK(t, "write with the approved token", e.call(alice, "write", `{"id":"9","text":"x"}`, write.Token))

	del := e.approvedToken(alice, map[string]any{"capabilities": []string{"app.notes.delete"}, "duration": 600, "reason": "tidy"})
	before, _ := e.g.Store.ListConsents(e.ctx, "")
	r := e.call(alice, "delete", `{"id":"2"}`, del.Token)
	wantOK(t, "destructive call with a consented token", r)
	if after, _ := e.g.Store.ListConsents(e.ctx, ""); len(after) != len(before) || r.Body.Consent != nil {
		t.Fatal("a call under a consented token asked again")
	}

	got := e.answerNext(consent.KindToken, func(ctx context.Context, id string) error { return e.g.Consent.Deny(ctx, id, "person") })
	status, ans := e.requestToken(alice, map[string]any{"capabilities": []string{"app.notes.*"}, "duration": 600, "reason": "everything"})
	<-got
	if status != http.StatusForbidden || ans.ErrorCode != "CONSENT_DENIED" || ans.Token != "" {
		t.Fatalf("denied token request: HTTP %d %+v", status, ans)
	}

	for _, body := range []string{
		`{"capabilities":["*"],"duration":60}`,
		`{"capabilities":["app.notes.read"],"duration":0}`,
		`{"capabilities":["app.notes.read"],"duration":60,"unknown":true}`,
		`{"capabilities":["app.notes.read"],"duration":60,"constraints":{"allowed_paths":["relative"]}}`,
		`{"capabilities":["app.notes.read"],"duration":60,"constraints":{"max_usez":1}}`,
	} {
		status, raw := e.do(alice, "POST", "/v1/capabilities/request", []byte(body))
		if status != http.StatusBadRequest || !strings.Contains(string(raw), "INVALID_REQUEST") || strings.Contains(string(raw), "cgt1.") {
			t.Errorf("%s: HTTP %d %s", body, status, raw)
		}
	}

	// No answer while the request lives: it waits that long (not the shorter wait of a call),
	// then 403 naming the expired request.
	short := newEnv(t, options{consentWait: 100 * time.Millisecond, consentTTL: 500 * time.Millisecond})
	carol := short.addClient("carol", "user")
	start := time.Now()
	status, ans = short.requestToken(carol, map[string]any{"capabilities": []string{"app.notes.write"}, "duration": 600})
	if status != http.StatusForbidden || ans.ErrorCode != "CONSENT_DENIED" || ans.Consent == nil || ans.Token != "" {
		t.Fatalf("unanswered token request: HTTP %d %+v", status, ans)
	}
	if d := time.Since(start); d < 450*time.Millisecond {
		t.Errorf("the token request gave up after %v, before its request expired", d)
	}
	if c := short.consentState(ans.Consent.ID); c.State != store.ConsentExpired || c.Kind != consent.KindToken {
		t.Fatalf("the expired token request: %+v", c)
	}
}

// A client that goes away while its token request waits (an interrupted CLI, a closed
// connection) withdraws the request: the person is not left a question whose answer
// nobody takes, and the withdrawal is in the audit log.
func TestTokenRequestWithdrawnWhenTheClientGoesAway(t *testing.T) {
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	ctx, cancel := context.WithCancel(e.ctx)
	req, err := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/v1/capabilities/request",
		strings.NewReader(`{"capabilities":["app.notes.write"],"duration":600,"reason":"rewrite"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+alice.Key)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		cs, _ := e.g.Store.ListConsents(e.ctx, store.ConsentPending)
		if len(cs) == 1 {
			id = cs[0].ID
		}
	}
	if id == "" {
		t.Fatal("no pending request")
	}
	cancel() // the client goes away
	<-done
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if e.consentState(id).State != store.ConsentPending {
			break
		}
	}
	if c := e.consentState(id); c.State != store.ConsentCancelled {
		t.Fatalf("the request after its client went away: %+v", c)
	}
	if err := e.g.Consent.Approve(e.ctx, id, "person", false); err == nil {
		t.Error("a withdrawn request could still be approved")
	}
}

// GET /v1/capabilities lists what the calling client may use: nothing above its trust level,
// nothing of a disabled app, and never a token or a key.
func TestIPCCapabilitiesListedByTrust(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{consentWait: 200 * time.Millisecond})
	e.register("org.example.ghost", ghostManifest, "ghost")
	if err := e.g.Registry.SetEnabled(e.ctx, "org.example.ghost", false); err != nil {
		t.Fatal(err)
	}
	clients := map[string]agent{"public": e.addClient("pub", "public"), "user": e.addClient("usr", "user"), "privileged": e.addClient("priv", "privileged")}
	tok := e.mustToken(clients["user"], map[string]any{"capabilities": []string{"app.notes.read"}, "duration": 600}).Token
	want := map[string][]string{
		"public":     {"search", "slow"},
		"user":       {"delete", "publish", "read", "run", "search", "slow", "write"},
		"privileged": {"admin", "delete", "publish", "read", "run", "search", "slow", "write"},
	}
	for trust, a := range clients {
		t.Run(trust, func(t *testing.T) {
			status, raw := e.do(a, "GET", "/v1/capabilities", nil)
			if status != http.StatusOK {
				t.Fatalf("HTTP %d", status)
			}
			for _, s := range []string{a.Key, ipc.KeyHash(a.Key), tok, "cgt1.", "cap_", "cgk_"} {
				if strings.Contains(string(raw), s) {
					t.Fatal("the listing holds a token or a key")
				}
			}
			var list struct{ Capabilities []ipc.Tool }
			if err := json.Unmarshal(raw, &list); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range list.Capabilities {
				if c.App == "ghost" {
					t.Errorf("a disabled app's capability is listed: %s", c.ID)
				}
				if c.App != "notes" {
					continue
				}
				got = append(got, c.Method)
				if c.Tier != 1 || c.Permission == "" || c.Risk == "" || len(c.Parameters) == 0 {
					t.Errorf("%s: incomplete listing %+v", c.ID, c)
				}
				// Only what changes something waits for a token or the person: search and slow
				// are public low-risk reads, read, run and admin low-risk reads of a Tier 1 app.
				if wantConsent := c.Method == "delete" || c.Method == "publish" || c.Method == "write"; c.NeedsConsent != wantConsent {
					t.Errorf("%s: needs_consent %v, want %v", c.ID, c.NeedsConsent, wantConsent)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want[trust]) {
				t.Fatalf("%s client sees %v, want %v", trust, got, want[trust])
			}
			// What is listed is callable by this client at its trust level; what is not, is not.
			r := e.call(a, "admin", `{}`, "")
			if trust == "privileged" {
				wantOK(t, "privileged admin without a token", r)
			} else {
				wantCode(t, trust+" admin", r, "PERMISSION_DENIED")
			}
		})
	}
}

// The records of a call over IPC carry the hash of its params' canonical form, however the
// agent spelled them (spaces, escapes, number forms): the front hands the broker the params it
// made canonical, and the broker hashes them as they are.
func TestIPCParamsHashIsCanonical(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	alice := e.addClient("alice", "user")
	tok := e.token(alice, []string{"notes.org.example.notes.search"}, nil)
	for _, params := range []string{`{"query":"milk"}`, ` { "query" : "m\u0069lk" } `, `{"query":"\u006d\u0069\u006c\u006b"}`} {
		want, err := audit.ParamsHash([]byte(params))
		if err != nil {
			t.Fatal(err)
		}
		r := e.call(alice, "search", params, tok)
		wantOK(t, params, r)
		n := 0
		for _, rec := range e.records() {
			if rec.CallID == r.Body.Details["call_id"] || (rec.Method == "search" && rec.ParamsHash != "") {
				n++
				if rec.ParamsHash != want {
					t.Errorf("%s: record %s has params_hash %s, want %s", params, rec.Kind, rec.ParamsHash, want)
				}
			}
		}
		if n == 0 {
			t.Fatalf("%s: no record of the call", params)
		}
	}
	e.closeAndVerify()
}
