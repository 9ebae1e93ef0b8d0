package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/client/wire"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
)

func mustNew(t *testing.T, o *client.Options) *client.Client {
	t.Helper()
	c, err := client.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantCode fails unless err is the gateway's *Error of code, matched by its sentinel and by
// no other code's.
func wantCode(t *testing.T, what string, err error, code string, status int) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: %v (%T), want a *client.Error %s", what, err, err, code)
	}
	if e.Code != code || client.CodeOf(err) != code || e.HTTPStatus != status {
		t.Fatalf("%s: %s HTTP %d (%s), want %s HTTP %d", what, e.Code, e.HTTPStatus, e.Message, code, status)
	}
	for c, sentinel := range sentinels {
		if errors.Is(err, sentinel) != (c == code) {
			t.Errorf("%s: errors.Is(err, the %s sentinel) = %v", what, c, errors.Is(err, sentinel))
		}
	}
	if !strings.HasPrefix(e.Error(), "capgate: "+code) {
		t.Errorf("%s: Error() = %q", what, e.Error())
	}
	return e
}

var sentinels = map[string]error{
	wire.CodeCapabilityDenied: client.ErrCapabilityDenied, wire.CodeTokenExpired: client.ErrTokenExpired,
	wire.CodeTokenExhausted: client.ErrTokenExhausted, wire.CodeInvalidToken: client.ErrInvalidToken,
	wire.CodeInvalidRequest: client.ErrInvalidRequest, wire.CodeAppNotFound: client.ErrAppNotFound,
	wire.CodeMethodNotFound: client.ErrMethodNotFound, wire.CodeExecutionFailed: client.ErrExecutionFailed,
	wire.CodeTimeout: client.ErrTimeout, wire.CodePermissionDenied: client.ErrPermissionDenied,
	wire.CodeConsentRequired: client.ErrConsentRequired, wire.CodeConsentDenied: client.ErrConsentDenied,
	wire.CodeHandoff: client.ErrHandoff,
}

// Every code has its sentinel.
func TestSentinels(t *testing.T) {
	for _, code := range wire.Codes() {
		s, ok := sentinels[code]
		if !ok {
			t.Errorf("no sentinel for %s", code)
			continue
		}
		if !errors.Is(&client.Error{Code: code}, s) || errors.Is(&client.Error{Code: code + "X"}, s) || s.Error() != "capgate: "+code {
			t.Errorf("the %s sentinel matches wrongly or reads %q", code, s.Error())
		}
	}
	if len(sentinels) != len(wire.Codes()) {
		t.Errorf("%d sentinels for %d codes", len(sentinels), len(wire.Codes()))
	}
	if errors.Is(&client.Error{Code: wire.CodePermissionDenied, HTTPStatus: 200}, client.ErrUnknownClient) ||
		!errors.Is(&client.Error{Code: wire.CodePermissionDenied, HTTPStatus: 401}, client.ErrUnknownClient) {
		t.Error("ErrUnknownClient does not match exactly the 401s")
	}
}

// The client's whole round over HTTP: health, the tool list, tokens issued with and without
// the person, calls, an undo, explain, a derived token, revocations.
func TestOverHTTP(t *testing.T) {
	t.Parallel()
	s := newServed(t, serveOptions{})
	ctx := context.Background()
	key, _ := s.mustClient(t, clientSpec{name: "agent"})
	c := mustNew(t, &client.Options{Server: s.url + "/", Key: key, Timeout: time.Minute})
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}

	tools, err := c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]client.Tool{}
	for _, tl := range tools {
		byID[tl.ID] = tl
	}
	// A low-risk read of a Tier 1 app runs without a token; a write needs one.
	if r := byID["desk."+deskID+".read"]; r.App != "desk" || r.Method != "read" || r.NeedsConsent || r.Tier != 1 || r.Permission != "app.desk.read" {
		t.Errorf("the desk's read as listed: %+v", r)
	}
	if w := byID["desk."+deskID+".write"]; !w.NeedsConsent || w.Reversibility != "reversible" {
		t.Errorf("the desk's write as listed: %+v", w)
	}
	if _, ok := byID["desk."+deskID+".admin"]; ok {
		t.Error("a privileged capability is listed for a user client")
	}

	read, err := c.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.read"}, Duration: 10 * time.Minute,
		MaxUses: 3, Reason: "read a note", Constraints: &client.Constraints{Condition: `params.id != "secret"`}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(read.Wire, "cgt1.") || !strings.HasPrefix(read.ID, "cap_") || read.ConsentID != "" ||
		time.Until(read.ExpiresAt) < 9*time.Minute || time.Until(read.ExpiresAt) > 11*time.Minute {
		t.Fatalf("read token: id %s, consent %q, expires %v", read.ID, read.ConsentID, read.ExpiresAt)
	}
	res, err := c.Query(ctx, client.Call{App: "desk", Method: "read", Params: map[string]string{"id": "1"}, Token: read.Wire, RequestID: "req-read-1"})
	if err != nil {
		t.Fatal(err)
	}
	var note struct{ Text string }
	if err := res.Decode(&note); err != nil || note.Text != "milk" || res.RequestID != "req-read-1" || res.UndoToken != "" || !res.UndoUntil.IsZero() {
		t.Fatalf("read: %+v %v", res, err)
	}
	if res.Envelope == nil || res.Envelope.Header.MsgType != wire.MsgResponse || string(res.Envelope.Body.Result) != string(res.Data) {
		t.Errorf("the result's envelope: %+v", res.Envelope)
	}
	// The token's condition holds: a read of "secret" is refused before the app sees it.
	_, err = c.Query(ctx, client.Call{App: "desk", Method: "read", Params: json.RawMessage(`{"id":"secret"}`), Token: read.Wire})
	wantCode(t, "a read the condition refuses", err, wire.CodeCapabilityDenied, 200)

	// A write token needs the person: the request waits for their answer.
	approved := s.answerNext(t, "token", "approve")
	write, err := c.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.write"}, Duration: time.Hour, MaxUses: 2,
		Reason: "rewrite a note", ConstraintsJSON: json.RawMessage(`{"condition":"true"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if id := <-approved; id == "" || write.ConsentID != id {
		t.Fatalf("write token consent %q, the person approved %q", write.ConsentID, id)
	}
	res, err = c.Call(ctx, client.Call{App: "desk", Method: "write", Params: map[string]string{"id": "1", "text": "bread"}, Token: write.Wire})
	if err != nil {
		t.Fatal(err)
	}
	if s.desk.note("1") != "bread" || !strings.HasPrefix(res.UndoToken, "undo_") || time.Until(res.UndoUntil) < 50*time.Second {
		t.Fatalf("write: note %q, undo %q until %v", s.desk.note("1"), res.UndoToken, res.UndoUntil)
	}
	undone, err := c.Undo(ctx, res.UndoToken)
	if err != nil {
		t.Fatal(err)
	}
	if s.desk.note("1") != "milk" || string(undone.Data) != `{"undone":true}` {
		t.Fatalf("after undo: note %q, result %s", s.desk.note("1"), undone.Data)
	}
	_, err = c.Undo(ctx, res.UndoToken)
	wantCode(t, "a second undo", err, wire.CodeInvalidToken, 200)

	// Explain decides with no side effect: the read token's uses are untouched by it.
	x, err := c.Explain(ctx, client.Call{App: "desk", Method: "write", Params: map[string]string{"id": "1", "text": "x"}, Token: read.Wire})
	if err != nil {
		t.Fatal(err)
	}
	if x.Outcome != "deny" || x.Code != wire.CodeCapabilityDenied || x.Step != 5 || len(x.Trace) != 5 {
		t.Errorf("explain: %+v", x)
	}

	// A child of the read token, used once, then gone with its parent.
	child, err := c.Derive(ctx, client.DeriveRequest{Parent: read.Wire, Capabilities: []string{"app.desk.read"}, MaxUses: 1, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if child.ID == read.ID || !child.ExpiresAt.Before(read.ExpiresAt) {
		t.Errorf("child %s expires %v, parent %s %v", child.ID, child.ExpiresAt, read.ID, read.ExpiresAt)
	}
	if _, err := c.Query(ctx, client.Call{App: "desk", Method: "read", Params: map[string]string{"id": "1"}, Token: child.Wire}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(ctx, client.Call{App: "desk", Method: "read", Params: map[string]string{"id": "1"}, Token: child.Wire})
	wantCode(t, "the child's second use", err, wire.CodeTokenExhausted, 200)
	_, err = c.Derive(ctx, client.DeriveRequest{Parent: read.Wire, Capabilities: []string{"app.desk.*"}})
	wantCode(t, "a wider child", err, wire.CodeInvalidRequest, http.StatusBadRequest)

	// Another client can neither derive from nor revoke this one's token.
	otherKey, _ := s.mustClient(t, clientSpec{name: "other"})
	other := mustNew(t, &client.Options{Server: s.url, Key: otherKey})
	_, err = other.Derive(ctx, client.DeriveRequest{Parent: read.Wire, Capabilities: []string{"app.desk.read"}})
	wantCode(t, "a derivation from another client's token", err, wire.CodeInvalidToken, http.StatusForbidden)
	_, err = other.Revoke(ctx, read.Wire)
	wantCode(t, "a revocation of another client's token", err, wire.CodeInvalidToken, http.StatusNotFound)

	id, err := c.Revoke(ctx, read.ID)
	if err != nil || id != read.ID {
		t.Fatalf("revoke: %q %v", id, err)
	}
	_, err = c.Query(ctx, client.Call{App: "desk", Method: "read", Params: map[string]string{"id": "1"}, Token: read.Wire})
	wantCode(t, "a revoked token", err, wire.CodeInvalidToken, 200)
	if id, err := c.Revoke(ctx, write.Wire); err != nil || id != write.ID {
		t.Fatalf("revoke by wire form: %q %v", id, err)
	}
}

// Over the unix socket, a client bound to this process's uid needs no key; a key still
// names its own client there, and over TCP no key is no client.
func TestOverSocket(t *testing.T) {
	t.Parallel()
	s := newServed(t, serveOptions{})
	ctx := context.Background()
	sock := mustNew(t, &client.Options{Socket: s.socket, Timeout: time.Minute})
	if err := sock.Health(ctx); err != nil {
		t.Fatal(err)
	}
	// No client is bound to this uid yet: unknown.
	_, err := sock.Capabilities(ctx)
	if wantCode(t, "the socket before the uid is bound", err, wire.CodePermissionDenied, http.StatusUnauthorized); !errors.Is(err, client.ErrUnknownClient) {
		t.Error("a 401 is not ErrUnknownClient")
	}
	uid := os.Getuid()
	_, id := s.mustClient(t, clientSpec{name: "by-uid", uid: &uid})
	tools, err := sock.Capabilities(ctx)
	if err != nil || len(tools) == 0 {
		t.Fatalf("capabilities by uid: %d tools, %v", len(tools), err)
	}
	tok, err := sock.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.read"}, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sock.Call(ctx, client.Call{App: "desk", Method: "read", Params: map[string]string{"id": "1"}, Token: tok.Wire})
	if err != nil || !strings.Contains(string(res.Data), "milk") {
		t.Fatalf("a call by uid: %v", err)
	}
	st, err := s.g.Store.GetToken(ctx, tok.ID)
	if err != nil || st.ClientID != id {
		t.Fatalf("the token was issued to %q, want the uid's client %s (%v)", st.ClientID, id, err)
	}
	// A key over the socket is that key's client, not the uid's: the uid's token is not its own.
	key, _ := s.mustClient(t, clientSpec{name: "keyed"})
	keyed := mustNew(t, &client.Options{Socket: s.socket, Key: key})
	_, err = keyed.Call(ctx, client.Call{App: "desk", Method: "read", Params: map[string]string{"id": "1"}, Token: tok.Wire})
	wantCode(t, "the uid's token under another client's key", err, wire.CodeInvalidToken, 200)
	// Over TCP the uid counts for nothing.
	tcp := mustNew(t, &client.Options{Server: s.url})
	_, err = tcp.Capabilities(ctx)
	wantCode(t, "TCP without a key", err, wire.CodePermissionDenied, http.StatusUnauthorized)
}

// Every error code reaches the caller as a *client.Error of that code, with what the answer
// said about it.
func TestErrorCodes(t *testing.T) {
	t.Parallel()
	s := newServed(t, serveOptions{consentWait: 500 * time.Millisecond, consentTTL: 3 * time.Second})
	ctx := context.Background()
	key, id := s.mustClient(t, clientSpec{name: "agent"})
	c := mustNew(t, &client.Options{Server: s.url, Key: key, Timeout: time.Minute})
	pubKey, _ := s.mustClient(t, clientSpec{name: "pub", trust: "public"})
	pub := mustNew(t, &client.Options{Server: s.url, Key: pubKey})
	neverKey, _ := s.mustClient(t, clientSpec{name: "never", neverAsk: true})
	never := mustNew(t, &client.Options{Server: s.url, Key: neverKey})

	read, err := c.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.read"}, Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	once, err := c.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.read"}, Duration: time.Hour, MaxUses: 1})
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := c.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.read"}, Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revoke(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	expired := mint(t, s, id, []string{"app.desk.read"}, time.Now().Add(-time.Hour), time.Now().Add(-time.Minute))
	publish := mint(t, s, id, []string{"app.desk.publish"}, time.Now(), time.Now().Add(time.Hour))
	desk := func(method string, params any, tok string) error {
		_, err := c.Call(ctx, client.Call{App: "desk", Method: method, Params: params, Token: tok})
		return err
	}
	note1 := map[string]string{"id": "1"}
	if err := desk("read", note1, once.Wire); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name     string
		code     string
		status   int
		run      func() error
		decided  bool // a call the broker decided: decision and call id
		consent  bool // names a consent request
		problems bool // says where the envelope broke a rule
		check    func(t *testing.T, e *client.Error)
	}{
		{name: "unknown app", code: wire.CodeAppNotFound, decided: true, run: func() error {
			_, err := c.Call(ctx, client.Call{App: "mail", Method: "send"})
			return err
		}},
		{name: "unknown method", code: wire.CodeMethodNotFound, decided: true, run: func() error { return desk("shred", nil, read.Wire) }},
		{name: "revoked token", code: wire.CodeInvalidToken, decided: true, run: func() error { return desk("read", note1, revoked.Wire) }},
		{name: "expired token", code: wire.CodeTokenExpired, decided: true, run: func() error { return desk("read", note1, expired) }},
		{name: "exhausted token", code: wire.CodeTokenExhausted, decided: true, run: func() error { return desk("read", note1, once.Wire) }},
		{name: "params against the schema", code: wire.CodeInvalidRequest, decided: true, run: func() error {
			return desk("read", json.RawMessage(`{"id":7}`), read.Wire)
		}},
		{name: "an envelope against its grammar", code: wire.CodeInvalidRequest, problems: true, run: func() error {
			_, err := c.Call(ctx, client.Call{App: "desk", Method: "read", Params: note1, Token: read.Wire, RequestID: "not an id"})
			return err
		}, check: func(t *testing.T, e *client.Error) {
			if e.Problems[0].Path != "header.request_id" || e.RequestID != "" {
				t.Errorf("problems %+v, request id %q", e.Problems, e.RequestID)
			}
		}},
		{name: "params not an object", code: wire.CodeInvalidRequest, problems: true, run: func() error { return desk("read", []int{1}, read.Wire) }},
		{name: "public client, user capability", code: wire.CodePermissionDenied, decided: true, run: func() error {
			_, err := pub.Call(ctx, client.Call{App: "desk", Method: "read", Params: note1})
			return err
		}},
		{name: "unknown key", code: wire.CodePermissionDenied, status: http.StatusUnauthorized, run: func() error {
			_, err := mustNew(t, &client.Options{Server: s.url, Key: "cgk_no-such-client-key"}).Call(ctx, client.Call{App: "desk", Method: "read"})
			return err
		}},
		{name: "token does not cover", code: wire.CodeCapabilityDenied, decided: true, run: func() error {
			return desk("write", map[string]string{"id": "1", "text": "x"}, read.Wire)
		}},
		{name: "handler error", code: wire.CodeExecutionFailed, decided: true, run: func() error {
			return desk("read", map[string]string{"id": "nope"}, read.Wire)
		}, check: func(t *testing.T, e *client.Error) {
			if e.Decision != "allow" || !strings.Contains(e.Message, "no such note") {
				t.Errorf("decision %q, message %q", e.Decision, e.Message)
			}
		}},
		{name: "slow capability", code: wire.CodeTimeout, decided: true, run: func() error { return desk("slow", nil, "") }},
		{name: "no answer in time", code: wire.CodeConsentRequired, decided: true, consent: true, run: func() error {
			return desk("write", map[string]string{"id": "1", "text": "x"}, "")
		}},
		{name: "denied by the person", code: wire.CodeConsentDenied, decided: true, consent: true, run: func() error {
			denied := s.answerNext(t, "call", "deny")
			err := desk("write", map[string]string{"id": "1", "text": "x"}, "")
			if id := <-denied; client.CodeOf(err) == wire.CodeConsentDenied && err.(*client.Error).Consent.ID != id {
				t.Errorf("the answer names %s, the person denied %s", err.(*client.Error).Consent.ID, id)
			}
			return err
		}},
		{name: "mandate hands off", code: wire.CodeHandoff, decided: true, run: func() error {
			if err := s.g.Broker.PutMandate(ctx, store.Mandate{Permission: "app.desk.publish", Autonomy: "handoff", Updated: time.Now()}); err != nil {
				t.Fatal(err)
			}
			return desk("publish", note1, publish)
		}, check: func(t *testing.T, e *client.Error) {
			prep, _ := e.Details["prepared"].(map[string]any)
			if e.Decision != "handoff" || prep["app"] != "desk" || prep["method"] != "publish" {
				t.Errorf("decision %q, prepared %v", e.Decision, e.Details["prepared"])
			}
		}},
		{name: "an undo token unknown", code: wire.CodeInvalidToken, run: func() error {
			_, err := c.Undo(ctx, "undo_000000000000000000000000")
			return err
		}},
		// The token endpoints' flat errors.
		{name: "a token request never asked", code: wire.CodeConsentRequired, status: http.StatusForbidden, run: func() error {
			_, err := never.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.write"}, Duration: time.Hour})
			return err
		}},
		{name: "a token request unanswered until it expired", code: wire.CodeConsentDenied, status: http.StatusForbidden, consent: true, run: func() error {
			_, err := c.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.write"}, Duration: time.Hour})
			return err
		}},
		{name: "a token request denied", code: wire.CodeConsentDenied, status: http.StatusForbidden, run: func() error {
			denied := s.answerNext(t, "token", "deny")
			_, err := c.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.write"}, Duration: time.Hour})
			<-denied
			return err
		}},
		{name: "a token request the gateway cannot issue", code: wire.CodeInvalidRequest, status: http.StatusBadRequest, run: func() error {
			_, err := c.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.read"}, Duration: 365 * 24 * time.Hour})
			return err
		}},
		{name: "constraints the gateway does not know", code: wire.CodeInvalidRequest, status: http.StatusBadRequest, run: func() error {
			_, err := c.RequestCapability(ctx, client.TokenRequest{Capabilities: []string{"app.desk.read"}, Duration: time.Hour,
				ConstraintsJSON: json.RawMessage(`{"allowed_path":["/"]}`)})
			return err
		}},
		{name: "a derivation from a revoked token", code: wire.CodeInvalidToken, status: http.StatusForbidden, run: func() error {
			_, err := c.Derive(ctx, client.DeriveRequest{Parent: revoked.Wire, Capabilities: []string{"app.desk.read"}})
			return err
		}},
		{name: "a revocation of no token", code: wire.CodeInvalidToken, status: http.StatusNotFound, run: func() error {
			_, err := c.Revoke(ctx, "cap_00000000000000000000000000000000")
			return err
		}},
		{name: "an explanation of an envelope against its grammar", code: wire.CodeInvalidRequest, status: http.StatusBadRequest, run: func() error {
			_, err := c.Explain(ctx, client.Call{App: "Desk", Method: "read"})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.status == 0 {
				tc.status = http.StatusOK
			}
			ran := s.desk.invocations()
			e := wantCode(t, tc.name, tc.run(), tc.code, tc.status)
			if e.Message == "" {
				t.Error("no message")
			}
			if tc.decided != (e.Decision != "" && strings.HasPrefix(e.CallID, "call_")) {
				t.Errorf("decision %q, call id %q", e.Decision, e.CallID)
			}
			if tc.consent != (e.Consent != nil && strings.HasPrefix(e.Consent.ID, "req_")) {
				t.Errorf("consent %+v", e.Consent)
			}
			if tc.problems != (len(e.Problems) > 0) {
				t.Errorf("problems %+v", e.Problems)
			}
			// The envelope endpoints hand back the envelope; the flat ones have none.
			if flat := tc.status != http.StatusOK && tc.status != http.StatusUnauthorized && !strings.Contains(tc.name, "explanation"); flat != (e.Envelope == nil) {
				t.Errorf("envelope %+v", e.Envelope)
			}
			if tc.code != wire.CodeExecutionFailed && tc.code != wire.CodeTimeout && s.desk.invocations() != ran {
				t.Error("a refused call reached the app")
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
}

// mint signs a token with the gateway's key and records it, as the broker issues one, for
// the lifetimes the broker would not issue (one that has expired).
func mint(t *testing.T, s *served, clientID string, grants []string, issued, expires time.Time) string {
	t.Helper()
	tok := token.Token{ID: token.NewID(), IssuedAt: issued.Unix(), ExpiresAt: expires.Unix(), Capabilities: grants, ClientID: clientID, AuditTag: "minted by the test"}
	w, err := token.Sign(tok, s.g.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.g.Store.PutToken(context.Background(), store.Token{ID: tok.ID, ClientID: clientID, IssuedAt: issued, ExpiresAt: expires,
		AuditTag: tok.AuditTag, Hash: token.WireHash(w)}); err != nil {
		t.Fatal(err)
	}
	return w
}

// A request the person is still deciding ends at Options.Timeout, or when its context ends:
// the error is the context's, and the gateway withdraws the token request it left.
func TestTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	s := newServed(t, serveOptions{})
	ctx := context.Background()
	key, _ := s.mustClient(t, clientSpec{name: "agent"})
	write := client.TokenRequest{Capabilities: []string{"app.desk.write"}, Duration: time.Hour, Reason: "wait for me"}
	pending := func() int { // token requests waiting for the person
		cs, err := s.g.Store.ListConsents(ctx, store.ConsentPending)
		if err != nil {
			t.Error(err)
		}
		n := 0
		for _, c := range cs {
			if c.Kind == "token" {
				n++
			}
		}
		return n
	}
	withdrawn := func(what string) {
		t.Helper()
		for i := 0; pending() > 0; i++ {
			if i == 500 {
				t.Fatalf("%s: the token request was not withdrawn", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	short := mustNew(t, &client.Options{Server: s.url, Key: key, Timeout: 300 * time.Millisecond})
	_, err := short.RequestCapability(ctx, write)
	if !errors.Is(err, context.DeadlineExceeded) || client.CodeOf(err) != "" {
		t.Fatalf("a token request past Options.Timeout: %v", err)
	}
	withdrawn("Options.Timeout")
	_, err = short.Call(ctx, client.Call{App: "desk", Method: "write", Params: map[string]string{"id": "1", "text": "x"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call past Options.Timeout: %v", err)
	}
	if s.desk.note("1") != "milk" {
		t.Error("the call that timed out ran")
	}

	// An http.Client's own timeout holds as well.
	hc := mustNew(t, &client.Options{Server: s.url, Key: key, HTTPClient: &http.Client{Timeout: 300 * time.Millisecond}})
	_, err = hc.RequestCapability(ctx, write)
	var te interface{ Timeout() bool }
	if !errors.As(err, &te) || !te.Timeout() {
		t.Fatalf("a token request past the http.Client's timeout: %v", err)
	}
	withdrawn("http.Client.Timeout")

	// A context cancelled while the person decides.
	c := mustNew(t, &client.Options{Server: s.url, Key: key})
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		for pending() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err = c.RequestCapability(cctx, write)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a token request cancelled: %v", err)
	}
	withdrawn("a cancelled context")
	// And one cancelled before: nothing is sent.
	_, err = c.Capabilities(cctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a request on a cancelled context: %v", err)
	}
}

// The answers of every endpoint decode into the wire types with no member left over: the
// gateway writes what package wire defines, and the client reads all of it.
func TestWireAnswersStrict(t *testing.T) {
	t.Parallel()
	s := newServed(t, serveOptions{})
	key, _ := s.mustClient(t, clientSpec{name: "agent"})
	post := func(path, body string, v any, status int) {
		t.Helper()
		method := http.MethodPost
		if body == "" {
			method = http.MethodGet
		}
		req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != status {
			t.Fatalf("%s: HTTP %d, want %d", path, resp.StatusCode, status)
		}
		dec := json.NewDecoder(resp.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Errorf("%s (HTTP %d): %v", path, status, err)
		}
	}
	var caps wire.Capabilities
	post("/v1/capabilities", "", &caps, 200)
	var it wire.IssuedToken
	post("/v1/capabilities/request", `{"capabilities":["app.desk.read"],"duration":600}`, &it, 200)
	var child wire.IssuedToken
	post("/v1/tokens/derive", `{"token":"`+it.Token+`","capabilities":["app.desk.read"]}`, &child, 200)
	var fe wire.FlatError
	post("/v1/tokens/derive", `{"token":"`+it.Token+`","capabilities":["app.*"]}`, &fe, 400)
	var resp wire.Response
	post("/v1/ipc", `{"header":{"msg_type":"llm_request","version":"1.0","request_id":"r1"},"body":{"action":"query","app":"desk","method":"read","params":{"id":"1"},"capability_token":"`+it.Token+`"}}`, &resp, 200)
	var refused wire.Response
	post("/v1/ipc", `{"header":{"msg_type":"llm_request","version":"1.0","request_id":"r2"},"body":{"action":"query","app":"desk","method":"write","params":{"id":"1","text":"x"},"capability_token":"`+it.Token+`"}}`, &refused, 200)
	var x wire.Explanation
	post("/v1/explain", `{"header":{"msg_type":"llm_request","version":"1.0","request_id":"r3"},"body":{"action":"execute","app":"desk","method":"write","params":{"id":"1","text":"x"},"capability_token":"`+it.Token+`"}}`, &x, 200)
	var rv wire.Revoked
	post("/v1/tokens/revoke", `{"token":"`+it.TokenID+`"}`, &rv, 200)
	var nf wire.FlatError
	post("/v1/tokens/revoke", `{"token":"cap_none"}`, &nf, 404)
	if len(caps.Capabilities) == 0 || it.Token == "" || child.Token == "" || fe.ErrorCode == "" || resp.Body.Status != "success" ||
		refused.Body.ErrorCode != wire.CodeCapabilityDenied || x.Outcome != "deny" || rv.TokenID != it.TokenID || nf.ErrorCode != wire.CodeInvalidToken {
		t.Errorf("answers: %d tools, token %v, child %v, %+v, %+v, %+v, %+v, %+v, %+v", len(caps.Capabilities), it.Token != "", child.Token != "", fe, resp.Body.Status, refused.Body, x, rv, nf)
	}
	if !slices.ContainsFunc(caps.Capabilities, func(tl wire.Tool) bool { return tl.App == "desk" }) {
		t.Error("the desk app is not listed")
	}
}
