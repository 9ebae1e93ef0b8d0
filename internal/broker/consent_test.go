package broker

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
)

// pendingRequest waits for a pending consent request of kind and returns it decoded.
func (e *env) pendingRequest(t *testing.T, kind string) (string, consent.Request) {
	t.Helper()
	for range 1000 {
		cs, err := e.consents.List(context.Background(), store.ConsentPending)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Kind == kind {
				_, r, err := e.consents.Get(context.Background(), c.ID)
				if err != nil {
					t.Fatal(err)
				}
				return c.ID, r
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s request became pending", kind)
	return "", consent.Request{}
}

// The person asked for a token sees what would be signed: the grants, the use limit, the
// expiry (fixed at the request, and the token's own), and every constraint; the request is
// revocable, never "cannot be undone".
func TestTokenRequestShowsTheTerms(t *testing.T) {
	e := newEnv(t)
	e.b.o.TokenKey = e.key
	ctx := context.Background()
	cons := token.Constraints{AllowedPaths: []string{"/srv/ws/**"}, AllowedCommands: []string{"ls"}, DeniedCommands: []string{"rm"},
		DeniedPatterns: []string{"rm -rf"}, Condition: `permission == "app.notes.write"`}
	type issued struct {
		iss Issued
		err error
	}
	done := make(chan issued, 1)
	go func() {
		iss, err := e.b.RequestCapability(ctx, alice, CapabilityRequest{Capabilities: []string{"app.notes.write"},
			Duration: 700 * 3600, MaxUses: 1000, Reason: "tidy the workspace", Constraints: cons})
		done <- issued{iss, err}
	}()
	id, r := e.pendingRequest(t, consent.KindToken)
	want := consent.TokenTerms{MaxUses: 1000, Lifetime: 700 * 3600, AllowedPaths: cons.AllowedPaths, AllowedCommands: cons.AllowedCommands,
		DeniedCommands: cons.DeniedCommands, DeniedPatterns: cons.DeniedPatterns, Condition: cons.Condition}
	if r.Token == nil {
		t.Fatal("the token request records no terms")
	}
	got := *r.Token
	got.ExpiresAt = time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("terms %+v, want %+v", got, want)
	}
	if r.Reversibility != consent.Revocable {
		t.Errorf("reversibility %q", r.Reversibility)
	}
	if d := consent.Describe(r); d.Uses != "at most 1000 uses" || d.Lifetime != "29 days 4 h" || len(d.Constraints) != 5 || !d.Revocable || d.Irreversible {
		t.Errorf("described as %+v", d)
	}
	if err := e.consents.Approve(ctx, id, "person", false); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !res.iss.ExpiresAt.Equal(r.Token.ExpiresAt) {
		t.Errorf("the token expires at %v; the person was shown %v", res.iss.ExpiresAt, r.Token.ExpiresAt)
	}
	tok, err := e.b.o.Tokens.Verify(res.iss.Wire)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Constraints.MaxUses != 1000 || !reflect.DeepEqual(tok.Constraints.AllowedPaths, cons.AllowedPaths) || tok.Constraints.Condition != cons.Condition {
		t.Errorf("the token signed is not the one shown: %+v", tok.Constraints)
	}
}

// A call's request carries its undo window, so the person reads how long it can be undone.
func TestCallRequestShowsTheUndoWindow(t *testing.T) {
	e := newEnv(t)
	wire := e.issue(t, alice.ClientID, []string{"app.notes.delete"}, 0, time.Hour, e.key)
	done := make(chan Result, 1)
	go func() { done <- e.b.Call(context.Background(), alice, call("delete", `{"id":"1"}`, wire)) }()
	id, r := e.pendingRequest(t, consent.KindCall)
	if r.UndoWindowMS != 60000 || r.Reversibility != consent.Reversible {
		t.Errorf("the delete's request: undo window %d, reversibility %q", r.UndoWindowMS, r.Reversibility)
	}
	if d := consent.Describe(r); d.Undo != "can be undone within 1 min after it runs" || d.Irreversible {
		t.Errorf("described as %q (irreversible %v)", d.Undo, d.Irreversible)
	}
	if err := e.consents.Deny(context.Background(), id, "person"); err != nil {
		t.Fatal(err)
	}
	<-done
}

// A token request whose terms cannot be shown to the person as they are (a condition with a
// bidirectional override) is refused as invalid, and nothing is asked or issued.
func TestTokenRequestThatCannotBeShownIsRefused(t *testing.T) {
	e := newEnv(t)
	e.b.o.TokenKey = e.key
	ctx := context.Background()
	_, err := e.b.RequestCapability(ctx, alice, CapabilityRequest{Capabilities: []string{"app.notes.write"}, Duration: 60,
		Reason: "tidy", Constraints: token.Constraints{Condition: "params.id != \"\u202eevil\""}})
	if !errors.Is(err, ErrIssueInvalid) || !strings.Contains(err.Error(), "token.condition") {
		t.Fatalf("a condition that cannot be shown: %v", err)
	}
	if cs, _ := e.consents.List(ctx, ""); len(cs) != 0 {
		t.Errorf("%d consent requests recorded", len(cs))
	}
}
