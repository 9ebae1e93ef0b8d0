package consent_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
)

func TestAskApproveWait(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	clk := newClock()
	svc := quietService(st, clk)

	c, err := svc.Ask(ctx, callRequest())
	must(t, err)
	if c.State != store.ConsentPending || c.Kind != consent.KindCall || c.ClientID != "cl_agent" {
		t.Fatalf("asked: %+v", c)
	}
	if !c.Expires.Equal(clk.Now().Add(consent.DefaultTTL)) {
		t.Errorf("Expires = %v, want now + DefaultTTL", c.Expires)
	}
	got := waitAsync(ctx, svc, c.ID)
	settle()
	clk.Advance(time.Second)
	must(t, svc.Approve(ctx, c.ID, "ada", false))

	r := receive(t, got)
	must(t, r.err)
	if r.c.State != store.ConsentApproved || r.c.AnsweredBy != "ada" || !r.c.Answered.Equal(clk.Now()) {
		t.Errorf("Wait = %+v, want approved by ada now", r.c)
	}
	if r.c.Wording != callRequest().Wording {
		t.Errorf("Wording = %q, want the request's", r.c.Wording)
	}
	// Without remember, no agreement is recorded.
	if _, err := st.GetMandate(ctx, "fs.delete"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetMandate after approve without remember: %v, want ErrNotFound", err)
	}
	// A second answer loses.
	if err := svc.Deny(ctx, c.ID, "ada"); !errors.Is(err, consent.ErrNotPending) {
		t.Errorf("Deny after approve: %v, want ErrNotPending", err)
	}
}

func TestDeny(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	svc := quietService(st, newClock())
	c, got := askWaiting(t, ctx, svc)
	must(t, svc.Deny(ctx, c.ID, "ada"))
	r := receive(t, got)
	must(t, r.err)
	if r.c.State != store.ConsentDenied || r.c.AnsweredBy != "ada" || r.c.Wording != "" {
		t.Errorf("Wait = %+v, want denied by ada without wording", r.c)
	}
}

func TestGetRoundTrip(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	svc := service(st, newClock())
	want := callRequest()
	want.Reversibility = "" // undeclared: recorded as irreversible
	c, err := svc.Ask(ctx, want)
	must(t, err)
	gc, got, err := svc.Get(ctx, c.ID)
	must(t, err)
	if gc.ID != c.ID || gc.State != store.ConsentPending {
		t.Errorf("Get record = %+v", gc)
	}
	want.Reversibility = consent.Irreversible
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Get request:\n got %+v\nwant %+v", got, want)
	}
	if d := consent.Describe(got); d.Undo != consent.UndoNever || !d.Irreversible {
		t.Errorf("Describe: undo %q, irreversible %v", d.Undo, d.Irreversible)
	}
	// The payload is snake_case JSON with the params as given.
	var m map[string]json.RawMessage
	must(t, json.Unmarshal(gc.Payload, &m))
	if string(m["params"]) != `{"path":"/home/ada/notes.txt"}` || string(m["permission"]) != `"fs.delete"` {
		t.Errorf("payload = %s", gc.Payload)
	}
	if _, _, err := svc.Get(ctx, "req_000000000000000000000fff"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a missing request: %v, want ErrNotFound", err)
	}
}

func TestExpiry(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	clk := newClock()
	svc := consent.New(st, &consent.Options{Surface: true, Now: clk.Now, Poll: time.Hour,
		TTL: time.Minute, NewID: seqID})
	c, err := svc.Ask(ctx, callRequest())
	must(t, err)
	other, err := svc.Ask(ctx, callRequest())
	must(t, err)
	got := waitAsync(ctx, svc, c.ID)
	settle() // Wait reads the request and sleeps: a minute, in real time

	clk.Advance(59 * time.Second)
	ids, err := svc.Sweep(ctx)
	must(t, err)
	if len(ids) != 0 {
		t.Fatalf("Sweep before expiry = %v", ids)
	}
	clk.Advance(time.Second)
	// At the expiry, before any sweep, answers are refused.
	if err := svc.Approve(ctx, other.ID, "ada", false); !errors.Is(err, consent.ErrNotPending) {
		t.Errorf("Approve at expiry: %v, want ErrNotPending", err)
	}
	ids, err = svc.Sweep(ctx)
	must(t, err)
	if !reflect.DeepEqual(ids, []string{c.ID, other.ID}) {
		t.Errorf("Sweep = %v, want both", ids)
	}
	// Poll is an hour: only the sweep's notification can wake the waiter.
	r := receive(t, got)
	must(t, r.err)
	if r.c.State != store.ConsentExpired {
		t.Errorf("Wait = %q, want expired", r.c.State)
	}
	if err := svc.Deny(ctx, c.ID, "ada"); !errors.Is(err, consent.ErrNotPending) {
		t.Errorf("Deny after expiry: %v, want ErrNotPending", err)
	}
}

// TestWaitSweeps: Wait returns expired for a request past its expiry without waiting for
// the server's Sweep.
func TestWaitSweeps(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	clk := newClock()
	svc := consent.New(st, &consent.Options{Surface: true, Now: clk.Now, Poll: testPoll,
		TTL: time.Minute, NewID: seqID})
	c, err := svc.Ask(ctx, callRequest())
	must(t, err)
	got := waitAsync(ctx, svc, c.ID)
	clk.Advance(time.Minute)
	r := receive(t, got)
	must(t, r.err)
	if r.c.State != store.ConsentExpired {
		t.Errorf("Wait = %q, want expired", r.c.State)
	}
}

// TestAnswerFromAnotherProcess: an answer given through another Service on another store
// on the same file (as the CLI `capgate approvals` in another process) wakes Wait by
// polling.
func TestAnswerFromAnotherProcess(t *testing.T) {
	ctx := t.Context()
	st, path := openDB(t)
	clk := newClock()
	svc := service(st, clk)
	cli := service(openPath(t, path), clk)

	for _, answer := range []string{store.ConsentApproved, store.ConsentDenied, store.ConsentCancelled} {
		t.Run(answer, func(t *testing.T) {
			c, got := askWaiting(t, ctx, svc)
			switch answer {
			case store.ConsentApproved:
				must(t, cli.Approve(ctx, c.ID, "ada", false))
			case store.ConsentDenied:
				must(t, cli.Deny(ctx, c.ID, "ada"))
			case store.ConsentCancelled:
				must(t, cli.Cancel(ctx, c.ID, "ada"))
			}
			r := receive(t, got)
			must(t, r.err)
			if r.c.State != answer {
				t.Errorf("Wait = %q, want %q", r.c.State, answer)
			}
		})
	}
}

// TestConcurrentAnswers: of 16 answers at once, from two stores on one file, exactly one
// wins.
func TestConcurrentAnswers(t *testing.T) {
	ctx := t.Context()
	st, path := openDB(t)
	clk := newClock()
	svcs := []*consent.Service{service(st, clk), service(openPath(t, path), clk)}
	for round := range 3 {
		c, err := svcs[0].Ask(ctx, callRequest())
		must(t, err)
		const n = 16
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				svc := svcs[i%2]
				<-start
				if i%4 < 2 {
					errs[i] = svc.Approve(ctx, c.ID, "ada", false)
				} else {
					errs[i] = svc.Deny(ctx, c.ID, "ada")
				}
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: answers %d and %d both won", round, winner, i)
				}
				winner = i
			case !errors.Is(err, consent.ErrNotPending):
				t.Errorf("round %d: answer %d: %v, want ErrNotPending", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no answer won", round)
		}
		want := store.ConsentApproved
		if winner%4 >= 2 {
			want = store.ConsentDenied
		}
		got, err := st.GetConsent(ctx, c.ID)
		must(t, err)
		if got.State != want {
			t.Errorf("round %d: state %q, want the winner's %q", round, got.State, want)
		}
	}
}

// TestNoSurface: without an approval surface every request is denied at once.
func TestNoSurface(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	for name, opts := range map[string]*consent.Options{"nil options": nil, "Surface false": {Poll: time.Hour}} {
		t.Run(name, func(t *testing.T) {
			svc := consent.New(st, opts)
			c, err := svc.Ask(ctx, callRequest())
			must(t, err)
			if c.State != store.ConsentDenied || c.AnsweredBy != consent.ByNoSurface || c.Answered.IsZero() {
				t.Fatalf("Ask = %+v, want denied by %q", c, consent.ByNoSurface)
			}
			stored, err := st.GetConsent(ctx, c.ID)
			must(t, err)
			if stored.State != store.ConsentDenied {
				t.Errorf("stored state %q", stored.State)
			}
			w, err := svc.Wait(ctx, c.ID)
			must(t, err)
			if w.State != store.ConsentDenied {
				t.Errorf("Wait = %q", w.State)
			}
			if err := svc.Approve(ctx, c.ID, "ada", false); !errors.Is(err, consent.ErrNotPending) {
				t.Errorf("Approve: %v, want ErrNotPending", err)
			}
			if _, err := svc.Commit(ctx, callRequest(), 10*time.Millisecond); !errors.Is(err, consent.ErrDenied) {
				t.Errorf("Commit: %v, want ErrDenied", err)
			}
		})
	}
}

func TestApproveRemember(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	clk := newClock()
	svc := service(st, clk)
	req := callRequest()
	c, err := svc.Ask(ctx, req)
	must(t, err)
	clk.Advance(3 * time.Second)
	must(t, svc.Approve(ctx, c.ID, "ada", true))
	m, err := st.GetMandate(ctx, req.Permission)
	must(t, err)
	want := store.Mandate{Permission: "fs.delete", Autonomy: consent.AutonomyActIfAgreed, AgreedID: c.ID,
		Wording: req.Wording, AgreedAt: clk.Now(), Updated: clk.Now()}
	if !m.AgreedAt.Equal(want.AgreedAt) || !m.Updated.Equal(want.Updated) {
		t.Errorf("mandate times %v %v, want %v", m.AgreedAt, m.Updated, want.AgreedAt)
	}
	m.AgreedAt, m.Updated, want.AgreedAt, want.Updated = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if m != want {
		t.Errorf("mandate:\n got %+v\nwant %+v", m, want)
	}
	got, err := st.GetConsent(ctx, c.ID)
	must(t, err)
	if got.State != store.ConsentApproved || got.Wording != req.Wording {
		t.Errorf("consent = %+v", got)
	}
}

// TestRememberNeedsWording: a request without wording cannot be remembered, and a refused
// remember answers nothing; a remember that loses the race writes no mandate.
func TestRememberNeedsWording(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	svc := service(st, newClock())
	req := callRequest()
	req.Wording = ""
	c, err := svc.Ask(ctx, req)
	must(t, err)
	if err := svc.Approve(ctx, c.ID, "ada", true); !errors.Is(err, consent.ErrCannotRemember) {
		t.Fatalf("Approve with remember, no wording: %v, want ErrCannotRemember", err)
	}
	if got, _ := st.GetConsent(ctx, c.ID); got.State != store.ConsentPending {
		t.Errorf("state after refused remember = %q, want pending", got.State)
	}
	must(t, svc.Approve(ctx, c.ID, "ada", false))
	if _, err := st.GetMandate(ctx, req.Permission); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("mandate without wording: %v, want ErrNotFound", err)
	}

	// A denied request approved with remember afterwards loses and records nothing.
	c2, err := svc.Ask(ctx, callRequest())
	must(t, err)
	must(t, svc.Deny(ctx, c2.ID, "ada"))
	if err := svc.Approve(ctx, c2.ID, "ada", true); !errors.Is(err, consent.ErrNotPending) {
		t.Fatalf("Approve with remember after deny: %v, want ErrNotPending", err)
	}
	if _, err := st.GetMandate(ctx, "fs.delete"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("mandate after a lost approve: %v, want ErrNotFound", err)
	}
}

func TestCancel(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	svc := quietService(st, newClock())
	c, got := askWaiting(t, ctx, svc)
	must(t, svc.Cancel(ctx, c.ID, "ada"))
	if r := receive(t, got); r.err != nil || r.c.State != store.ConsentCancelled {
		t.Errorf("Wait = %q, %v; want cancelled", r.c.State, r.err)
	}
	// Cancel of a request no longer pending, whatever its state.
	if err := svc.Cancel(ctx, c.ID, "ada"); !errors.Is(err, consent.ErrNotPending) {
		t.Errorf("Cancel of cancelled: %v, want ErrNotPending", err)
	}
	c2, err := svc.Ask(ctx, callRequest())
	must(t, err)
	must(t, svc.Approve(ctx, c2.ID, "ada", false))
	if err := svc.Cancel(ctx, c2.ID, "ada"); !errors.Is(err, consent.ErrNotPending) {
		t.Errorf("Cancel of approved: %v, want ErrNotPending", err)
	}
	if err := svc.Cancel(ctx, "req_00000000000000000000dead", "ada"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Cancel of missing: %v, want ErrNotFound", err)
	}
}

func TestWaitContext(t *testing.T) {
	st, _ := openDB(t)
	svc := consent.New(st, &consent.Options{Surface: true, Poll: time.Hour, NewID: seqID})
	c, err := svc.Ask(t.Context(), callRequest())
	must(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	got := waitAsync(ctx, svc, c.ID)
	cancel()
	r := receive(t, got)
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("Wait after cancel: %v, want context.Canceled", r.err)
	}
	if s, _ := st.GetConsent(t.Context(), c.ID); s.State != store.ConsentPending {
		t.Errorf("state = %q, want still pending", s.State)
	}
}

// closedStore is a store that fails every call: an id check that passed would reach it.
func closedStore(t *testing.T) consent.Store {
	st, _ := openDB(t)
	must(t, st.Close())
	return st
}

func TestInvalidID(t *testing.T) {
	ctx := t.Context()
	svc := consent.New(closedStore(t), &consent.Options{Surface: true})
	for _, id := range []string{"", "req_", "req_123", "REQ_00000000000000000000dead", "req_00000000000000000000DEAD",
		"req_00000000000000000000dead0", "req_00000000000000000000dea\x00", "x' OR 1=1 --"} {
		for op, f := range map[string]func() error{
			"approve": func() error { return svc.Approve(ctx, id, "ada", false) },
			"deny":    func() error { return svc.Deny(ctx, id, "ada") },
			"cancel":  func() error { return svc.Cancel(ctx, id, "ada") },
			"wait":    func() error { _, err := svc.Wait(ctx, id); return err },
			"get":     func() error { _, _, err := svc.Get(ctx, id); return err },
		} {
			err := f()
			if !errors.Is(err, consent.ErrInvalidID) {
				t.Errorf("%s(%q): %v, want ErrInvalidID", op, id, err)
			}
			if id != "" && strings.Contains(err.Error(), id) {
				t.Errorf("%s: error echoes the id: %v", op, err)
			}
		}
	}
	if !consent.ValidID("req_00000000000000000000dead") {
		t.Error("ValidID refuses a valid id")
	}
}

func TestInvalidBy(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	svc := service(st, newClock())
	c, err := svc.Ask(ctx, callRequest())
	must(t, err)
	for _, by := range []string{"", consent.ByWindowElapsed, "capgate:me", "ada\x1b[2J", strings.Repeat("a", consent.MaxFieldBytes+1)} {
		if err := svc.Approve(ctx, c.ID, by, false); !errors.Is(err, consent.ErrInvalidRequest) {
			t.Errorf("Approve by %q: %v, want ErrInvalidRequest", by, err)
		}
	}
	if s, _ := st.GetConsent(ctx, c.ID); s.State != store.ConsentPending {
		t.Errorf("state = %q, want pending", s.State)
	}
}

func TestList(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	clk := newClock()
	svc := service(st, clk)
	a, err := svc.Ask(ctx, callRequest())
	must(t, err)
	clk.Advance(time.Millisecond)
	b, err := svc.Ask(ctx, callRequest())
	must(t, err)
	must(t, svc.Deny(ctx, a.ID, "ada"))
	pending, err := svc.List(ctx, store.ConsentPending)
	must(t, err)
	if len(pending) != 1 || pending[0].ID != b.ID {
		t.Errorf("List(pending) = %v", pending)
	}
	all, err := svc.List(ctx, "")
	must(t, err)
	if len(all) != 2 || all[0].ID != a.ID {
		t.Errorf("List(\"\") = %v", all)
	}
	if _, err := svc.List(ctx, "bogus"); !errors.Is(err, consent.ErrInvalidRequest) {
		t.Errorf("List(bogus): %v, want ErrInvalidRequest", err)
	}
}
