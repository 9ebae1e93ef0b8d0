package operator_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
)

// storeTokens and storeMandates are the real store as the broker's Revoke, PutMandate and
// DeleteMandate reach it (without the broker's caches, which the fronts' tests cover).
type storeTokens struct{ st store.Store }

func (s storeTokens) Revoke(ctx context.Context, id string) error {
	if _, err := s.st.GetToken(ctx, id); err != nil {
		return err
	}
	return s.st.Revoke(ctx, id, time.Now())
}

type storeMandates struct{ st store.Store }

func (s storeMandates) PutMandate(ctx context.Context, m store.Mandate) error {
	return s.st.PutMandate(ctx, m)
}
func (s storeMandates) DeleteMandate(ctx context.Context, p string) error {
	return s.st.DeleteMandate(ctx, p)
}

// failing is a Recorder that cannot record.
type failing struct{}

func (failing) Append(context.Context, audit.Record) (int64, error) {
	return 0, errors.New("the disk is full")
}

// Every action of the Service writes its decision, makes the change and writes its outcome,
// under the one action name of the table and the code of Code; a widening one is not made
// when its decision cannot be recorded, a narrowing one is.
func TestServiceActions(t *testing.T) {
	st, w := open(t)
	ctx := context.Background()
	cs := consent.New(st, &consent.Options{Surface: true, TTL: time.Minute})
	var warned []string
	s := &operator.Service{Audit: w, Consent: cs, Tokens: storeTokens{st}, Mandates: storeMandates{st},
		Warn: func(action string, err error) { warned = append(warned, action) }}
	by := operator.Actor{ID: "person (test)", Who: "the person", Where: "in the test"}
	ask := func() string {
		t.Helper()
		c, err := cs.Ask(ctx, consent.Request{ClientID: "cl_a", Kind: consent.KindCall, CapabilityID: "notes.org.example.notes.write",
			Permission: "app.notes.write", Summary: "write", Params: []byte(`{}`), Risk: "medium", SideEffects: "write", Reversibility: "reversible", Wording: "let the agent write notes"})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	now := time.Now()
	if err := st.PutToken(ctx, store.Token{ID: "tok_a", ClientID: "cl_a", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	approved, denied, cancelled := ask(), ask(), ask()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Answer(ctx, by, approved, operator.Approve, true))
	must(s.Answer(ctx, by, denied, operator.Deny, false))
	must(s.Answer(ctx, by, cancelled, operator.Cancel, false))
	if err := s.Answer(ctx, by, approved, operator.Deny, false); !errors.Is(err, consent.ErrNotPending) {
		t.Errorf("answering twice: %v", err)
	}
	if err := s.Answer(ctx, by, ask(), "maybe", false); err == nil {
		t.Error("an answer that is none was taken")
	}
	must(s.Revoke(ctx, by, "tok_a"))
	if err := s.Revoke(ctx, by, "tok_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking an unknown token: %v", err)
	}
	must(s.SetMandate(ctx, by, store.Mandate{Permission: "app.notes.write", Autonomy: "handoff", Updated: now}))
	must(s.DeleteMandate(ctx, by, "app.notes.write"))
	must(s.DeleteMandate(ctx, by, "app.notes.write")) // none left: what was asked
	if m, err := st.GetMandate(ctx, "app.notes.write"); err == nil {
		t.Errorf("the mandate is still there: %+v", m)
	}
	if c, _ := st.GetConsent(ctx, approved); c.State != store.ConsentApproved || c.AnsweredBy != by.ID {
		t.Errorf("the approved request: %+v", c)
	}
	if _, err := st.GetMandate(ctx, "app.notes.write"); !errors.Is(err, store.ErrNotFound) {
		t.Error("a remembered agreement outlived its removal")
	}
	tk, _ := st.GetToken(ctx, "tok_a")
	if !tk.Revoked {
		t.Error("the token is not revoked")
	}
	w.Close()
	var got []string
	for _, r := range records(t, st) {
		if r.ClientID != by.ID {
			t.Errorf("a record not by the actor: %+v", r)
		}
		got = append(got, r.Action+"|"+r.Kind+"|"+r.Result+"|"+r.Code)
	}
	want := []string{
		"consent.approve|decision|approve requested|", "consent.approve|outcome|success|",
		"consent.deny|decision|deny requested|", "consent.deny|outcome|success|",
		"consent.cancel|decision|cancel requested|", "consent.cancel|outcome|success|",
		"consent.deny|decision|deny requested|", "consent.deny|outcome|error|INVALID_REQUEST",
		"token.revoke|decision|revoke requested|", "token.revoke|outcome|success|",
		"token.revoke|decision|revoke requested|", "token.revoke|outcome|error|INVALID_TOKEN",
		"mandate.set|decision|mandate handoff requested|", "mandate.set|outcome|success|",
		"mandate.delete|decision|mandate removal requested|", "mandate.delete|outcome|success|",
		"mandate.delete|decision|mandate removal requested|", "mandate.delete|outcome|success|",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(warned) != 0 {
		t.Errorf("warned: %v", warned)
	}

	// Unrecorded: an approval and a mandate are not made; a denial and a revocation are.
	u := &operator.Service{Audit: failing{}, Consent: cs, Tokens: storeTokens{st}, Mandates: storeMandates{st},
		Warn: func(action string, err error) { warned = append(warned, action) }}
	pending := ask()
	if err := u.Answer(ctx, by, pending, operator.Approve, false); !errors.Is(err, operator.ErrNotRecorded) {
		t.Errorf("an unrecorded approval: %v", err)
	}
	if err := u.SetMandate(ctx, by, store.Mandate{Permission: "app.notes.write", Autonomy: "act", Updated: now}); !errors.Is(err, operator.ErrNotRecorded) {
		t.Errorf("an unrecorded mandate: %v", err)
	}
	if _, err := st.GetMandate(ctx, "app.notes.write"); !errors.Is(err, store.ErrNotFound) {
		t.Error("an unrecorded mandate was set")
	}
	if c, _ := st.GetConsent(ctx, pending); c.State != store.ConsentPending {
		t.Errorf("an unrecorded approval was given: %s", c.State)
	}
	must(u.Answer(ctx, by, pending, operator.Deny, false))
	if c, _ := st.GetConsent(ctx, pending); c.State != store.ConsentDenied {
		t.Errorf("an unrecorded denial was not given: %s", c.State)
	}
	// Without what a change needs, it is not available.
	var none operator.Service
	for name, err := range map[string]error{
		"answer": none.Answer(ctx, by, pending, operator.Deny, false), "revoke": none.Revoke(ctx, by, "tok_a"),
		"set": none.SetMandate(ctx, by, store.Mandate{}), "delete": none.DeleteMandate(ctx, by, "x"),
	} {
		if !errors.Is(err, operator.ErrUnavailable) {
			t.Errorf("%s on a bare Service: %v", name, err)
		}
	}
}
