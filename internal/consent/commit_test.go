package consent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
)

const testWindow = 50 * time.Millisecond

// commitAsync runs Commit in a goroutine and delivers its result.
type commitResult struct {
	id  string
	err error
}

func commitAsync(ctx context.Context, svc *consent.Service, window time.Duration) <-chan commitResult {
	ch := make(chan commitResult, 1)
	go func() {
		id, err := svc.Commit(ctx, callRequest(), window)
		ch <- commitResult{id, err}
	}()
	return ch
}

func receiveCommit(t *testing.T, ch <-chan commitResult) commitResult {
	t.Helper()
	return within(t, ch, "Commit")
}

// pendingCommit returns the id of the one pending commit request, once it is recorded.
func pendingCommit(t *testing.T, svc *consent.Service) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		cs, err := svc.List(t.Context(), store.ConsentPending)
		must(t, err)
		for _, c := range cs {
			if c.Kind == consent.KindCommit {
				return c.ID
			}
		}
	}
	t.Fatal("no pending commit request")
	return ""
}

func TestCommitWindowElapses(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	svc := service(st, newClock())
	start := time.Now()
	id, err := svc.Commit(ctx, callRequest(), testWindow)
	must(t, err)
	if time.Since(start) < testWindow {
		t.Errorf("Commit returned before its window")
	}
	c, r, err := svc.Get(ctx, id)
	must(t, err)
	if c.Kind != consent.KindCommit || r.Kind != consent.KindCommit {
		t.Errorf("kind %q / %q, want commit", c.Kind, r.Kind)
	}
	if c.State != store.ConsentApproved || c.AnsweredBy != consent.ByWindowElapsed {
		t.Errorf("commit request = %q by %q, want approved by %q", c.State, c.AnsweredBy, consent.ByWindowElapsed)
	}
}

func TestCommitCancelled(t *testing.T) {
	ctx := t.Context()
	st, path := openDB(t)
	clk := newClock()
	svc := service(st, clk)
	for name, canceller := range map[string]*consent.Service{
		"same service":    svc,
		"another process": service(openPath(t, path), clk),
	} {
		t.Run(name, func(t *testing.T) {
			// The window is long: only the cancel can end it in time.
			got := commitAsync(ctx, svc, time.Minute)
			id := pendingCommit(t, canceller)
			must(t, canceller.Cancel(ctx, id, "ada"))
			r := receiveCommit(t, got)
			if !errors.Is(r.err, consent.ErrCancelled) {
				t.Fatalf("Commit: %v, want ErrCancelled", r.err)
			}
			c, err := st.GetConsent(ctx, id)
			must(t, err)
			if c.State != store.ConsentCancelled || c.AnsweredBy != "ada" {
				t.Errorf("commit request = %q by %q, want cancelled by ada", c.State, c.AnsweredBy)
			}
		})
	}
}

func TestCommitDenied(t *testing.T) {
	ctx := t.Context()
	st, _ := openDB(t)
	svc := service(st, newClock())
	got := commitAsync(ctx, svc, time.Minute)
	id := pendingCommit(t, svc)
	if err := svc.Approve(ctx, id, "ada", false); !errors.Is(err, consent.ErrInvalidRequest) {
		t.Errorf("Approve of a commit request: %v, want ErrInvalidRequest", err)
	}
	must(t, svc.Deny(ctx, id, "ada"))
	if r := receiveCommit(t, got); !errors.Is(r.err, consent.ErrDenied) {
		t.Errorf("Commit: %v, want ErrDenied", r.err)
	}
}

func TestCommitContextCancelled(t *testing.T) {
	st, _ := openDB(t)
	svc := service(st, newClock())
	ctx, cancel := context.WithCancel(t.Context())
	got := commitAsync(ctx, svc, time.Minute)
	id := pendingCommit(t, svc)
	cancel()
	r := receiveCommit(t, got)
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Commit: %v, want context.Canceled", r.err)
	}
	c, err := st.GetConsent(t.Context(), id)
	must(t, err)
	if c.State != store.ConsentCancelled || c.AnsweredBy != consent.ByCallerGone {
		t.Errorf("commit request = %q by %q, want cancelled by %q", c.State, c.AnsweredBy, consent.ByCallerGone)
	}
	// Nothing is committed later either.
	if err := svc.Cancel(t.Context(), id, "ada"); !errors.Is(err, consent.ErrNotPending) {
		t.Errorf("Cancel after: %v, want ErrNotPending", err)
	}
}

func TestCommitWindowLimits(t *testing.T) {
	st, _ := openDB(t)
	svc := service(st, newClock())
	// Bounded, so that a broken limit fails the test instead of holding it for the window.
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, err := svc.Commit(ctx, callRequest(), consent.MaxCommitWindow+time.Second); !errors.Is(err, consent.ErrInvalidRequest) {
		t.Errorf("Commit over MaxCommitWindow: %v, want ErrInvalidRequest", err)
	}
	cs, err := svc.List(t.Context(), "")
	must(t, err)
	if len(cs) != 0 {
		t.Errorf("a refused Commit recorded %d requests", len(cs))
	}
}
