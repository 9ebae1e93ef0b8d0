package consent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// Commit runs the delayed-commit window of an allowed irreversible call. It records r as a
// commit request (its Kind set to KindCommit) that the person can list and cancel, waits out
// window (zero or negative: DefaultCommitWindow; longer than MaxCommitWindow is
// ErrInvalidRequest), and then marks it approved by ByWindowElapsed and returns nil: the
// call goes ahead.
//
// It returns ErrCancelled when the person cancelled within the window (or before the
// window's end was recorded: the store decides which came first), ErrDenied when the person
// denied it or there is no approval surface (fail closed), and ErrExpired when its process
// could not record the window's end in time. When ctx ends first, Commit cancels the request
// (by ByCallerGone) and returns ctx's error. Any error means the call must not run.
//
// The window runs in real time from the moment the request is recorded; a cancel given
// elsewhere is seen within Poll, and at the latest at the window's end.
func (s *Service) Commit(ctx context.Context, r Request, window time.Duration) (string, error) {
	if window <= 0 {
		window = DefaultCommitWindow
	}
	if window > MaxCommitWindow {
		return "", fmt.Errorf("consent: commit: %w: window must be at most MaxCommitWindow", ErrInvalidRequest)
	}
	r.Kind = KindCommit
	c, err := s.put(ctx, "commit", r, window+commitGrace)
	if err != nil {
		return "", err
	}
	id := c.ID
	end := time.NewTimer(window)
	defer end.Stop()
	for {
		changed := s.signal()
		c, err := s.st.GetConsent(ctx, id)
		if err != nil {
			return id, s.abandon(ctx, id, fmt.Errorf("consent: commit %s: %w", id, err))
		}
		if c.State != store.ConsentPending {
			return id, commitOutcome(id, c)
		}
		t := time.NewTimer(s.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return id, s.abandon(ctx, id, fmt.Errorf("consent: commit %s: %w", id, ctx.Err()))
		case <-changed:
		case <-t.C:
		case <-end.C:
			t.Stop()
			return id, s.elapse(ctx, id)
		}
		t.Stop()
	}
}

// elapse records the end of the window: approved by ByWindowElapsed, unless an answer came
// first, in which case that answer decides.
func (s *Service) elapse(ctx context.Context, id string) error {
	err := s.st.AnswerConsent(ctx, id, store.ConsentApproved, ByWindowElapsed, "", s.now())
	if err == nil {
		s.notify()
		return nil
	}
	if !errors.Is(err, store.ErrConflict) {
		return s.abandon(ctx, id, fmt.Errorf("consent: commit %s: %w", id, err))
	}
	c, gerr := s.st.GetConsent(ctx, id)
	if gerr != nil {
		return fmt.Errorf("consent: commit %s: %w", id, gerr)
	}
	if c.State == store.ConsentPending {
		// Still pending but refused: past its expiry. It will be swept; it never ran.
		return fmt.Errorf("consent: commit %s: %w", id, ErrExpired)
	}
	return commitOutcome(id, c)
}

// commitOutcome maps an answered commit request to Commit's result.
func commitOutcome(id string, c store.Consent) error {
	switch c.State {
	case store.ConsentApproved:
		return nil
	case store.ConsentCancelled:
		return fmt.Errorf("consent: commit %s: %w", id, ErrCancelled)
	case store.ConsentExpired:
		return fmt.Errorf("consent: commit %s: %w", id, ErrExpired)
	default:
		return fmt.Errorf("consent: commit %s: %w", id, ErrDenied)
	}
}

// abandon cancels the commit request of a Commit that stops with cause, so that it is not
// left listed as pending, and returns cause. The caller's context may be done already, so
// the write runs on its own short deadline. If the cancel loses to another answer, or
// fails, the request is left to that answer or to its expiry; the call does not run
// either way.
func (s *Service) abandon(ctx context.Context, id string, cause error) error {
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), abandonTimeout)
	defer stop()
	if err := s.st.AnswerConsent(ctx, id, store.ConsentCancelled, ByCallerGone, "", s.now()); err == nil {
		s.notify()
	}
	return cause
}
