package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
)

// A call with AskOnly asks and returns at once, the request pending; a call naming it waits
// for its answer instead of asking again. The request named proves nothing: another client's,
// another call's or an unknown one is INVALID_REQUEST, and an approval runs one call, once.
func TestCallResumesItsConsent(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	bob := Caller{ClientID: "cl_bob", Name: "bob", Trust: alice.Trust}
	write := func(text string) Request { return call("write", `{"id":"1","text":"`+text+`"}`, "") }

	first := write("eggs")
	first.AskOnly = true
	r := e.b.Call(ctx, alice, first)
	if r.Code != policy.CodeConsentRequired || r.ConsentID == "" || r.Decision.Outcome != policy.Ask {
		t.Fatalf("AskOnly: %+v", r)
	}
	id := r.ConsentID
	if c, err := e.st.GetConsent(ctx, id); err != nil || c.State != store.ConsentPending {
		t.Fatalf("the request after AskOnly: %+v %v", c, err)
	}
	pending := write("eggs")
	pending.Consent, pending.AskOnly = id, true
	if r := e.b.Call(ctx, alice, pending); r.Code != policy.CodeConsentRequired || r.ConsentID != id {
		t.Errorf("naming the pending request: %+v", r)
	}
	if err := e.consents.Approve(ctx, id, "person", false); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		caller Caller
		req    Request
	}{
		"another client":  {bob, write("eggs")},
		"other params":    {alice, write("ham")},
		"another method":  {alice, call("publish", `{"id":"1"}`, "")},
		"an unknown id":   {alice, write("eggs")},
		"a malformed id":  {alice, write("eggs")},
		"a token request": {alice, write("eggs")},
	} {
		tc.req.Consent = id
		switch name {
		case "an unknown id":
			tc.req.Consent = "req_000000000000000000000000"
		case "a malformed id":
			tc.req.Consent = "../etc"
		case "a token request":
			tc.req.Consent = e.tokenRequest(t)
		}
		if r := e.b.Call(ctx, tc.caller, tc.req); r.Code != policy.CodeInvalidRequest || r.OK() {
			t.Errorf("%s: %+v, want INVALID_REQUEST", name, r)
		}
	}
	resumed := write("eggs")
	resumed.Consent = id
	if r := e.b.Call(ctx, alice, resumed); !r.OK() {
		t.Fatalf("the approved call: %+v", r)
	}
	if r := e.b.Call(ctx, alice, resumed); r.Code != policy.CodeInvalidRequest {
		t.Errorf("the approval used twice: %+v", r)
	}
}

// tokenRequest makes a pending token request of alice's and returns its id.
func (e *env) tokenRequest(t *testing.T) string {
	t.Helper()
	iss, err := e.b.RequestCapability(context.Background(), alice, CapabilityRequest{Capabilities: []string{"app.notes.delete"}, Duration: 60, AskOnly: true})
	if !errors.Is(err, ErrIssuePending) || iss.ConsentID == "" {
		t.Fatalf("AskOnly token request: %+v %v", iss, err)
	}
	return iss.ConsentID
}

// A token request names its earlier one in the same way: same client, grants and terms; the
// token expires when the person was shown; one approval issues one token.
func TestTokenRequestResumesItsConsent(t *testing.T) {
	e := newEnv(t)
	e.b.o.TokenKey = e.key
	ctx := context.Background()
	req := CapabilityRequest{Capabilities: []string{"app.notes.delete"}, Duration: 600, MaxUses: 2, Reason: "tidy", AskOnly: true}
	iss, err := e.b.RequestCapability(ctx, alice, req)
	if !errors.Is(err, ErrIssuePending) || iss.ConsentID == "" || iss.Wire != "" {
		t.Fatalf("AskOnly: %+v %v", iss, err)
	}
	id := iss.ConsentID
	_, shown, err := e.consents.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.consents.Approve(ctx, id, "person", false); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]CapabilityRequest{
		"other grants":  {Capabilities: []string{"app.notes.write"}, Duration: 600, MaxUses: 2, Reason: "tidy"},
		"other uses":    {Capabilities: []string{"app.notes.delete"}, Duration: 600, MaxUses: 3, Reason: "tidy"},
		"other life":    {Capabilities: []string{"app.notes.delete"}, Duration: 6000, MaxUses: 2, Reason: "tidy"},
		"other reason":  {Capabilities: []string{"app.notes.delete"}, Duration: 600, MaxUses: 2, Reason: "more"},
		"a call's id":   {Capabilities: []string{"app.notes.delete"}, Duration: 600, MaxUses: 2, Reason: "tidy"},
		"another's own": {Capabilities: []string{"app.notes.delete"}, Duration: 600, MaxUses: 2, Reason: "tidy"},
	} {
		r.Consent = id
		caller := alice
		switch name {
		case "a call's id":
			c := call("write", `{"id":"1","text":"x"}`, "")
			c.AskOnly = true
			r.Consent = e.b.Call(ctx, alice, c).ConsentID
		case "another's own":
			caller = Caller{ClientID: "cl_bob", Name: "bob", Trust: alice.Trust}
		}
		if _, err := e.b.RequestCapability(ctx, caller, r); !errors.Is(err, ErrIssueInvalid) || !errors.Is(err, ErrConsentMismatch) {
			t.Errorf("%s: %v, want ErrIssueInvalid for a mismatch", name, err)
		}
	}
	req.AskOnly, req.Consent = false, id
	iss, err = e.b.RequestCapability(ctx, alice, req)
	if err != nil || iss.Wire == "" || iss.ConsentID != id || !iss.ExpiresAt.Equal(shown.Token.ExpiresAt) {
		t.Fatalf("the approved request: %+v %v (shown expiry %v)", iss, err, shown.Token.ExpiresAt)
	}
	if _, err := e.b.RequestCapability(ctx, alice, req); !errors.Is(err, ErrConsentSpent) {
		t.Errorf("a second token from one approval: %v", err)
	}
}
