package consent

import (
	"context"
	"fmt"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// Wait blocks until the request is no longer pending and returns its record: approved,
// denied, cancelled or expired (which callers treat as denied). It wakes at once for an
// answer given through this Service and within Poll for one given elsewhere (another
// process or replica on the same store). A request past its expiry is swept, so Wait
// returns expired without waiting for the server's periodic Sweep. When ctx ends, Wait
// returns ctx's error promptly; the request stays as it is.
func (s *Service) Wait(ctx context.Context, id string) (store.Consent, error) {
	if err := checkID("wait", id); err != nil {
		return store.Consent{}, err
	}
	for {
		changed := s.signal()
		c, done, err := s.settled(ctx, id)
		if err != nil || done {
			return c, err
		}
		d := s.poll
		if left := c.Expires.Sub(s.now()); !c.Expires.IsZero() && left < d {
			d = max(left, 0) + time.Millisecond
		}
		if err := sleep(ctx, d, changed); err != nil {
			return store.Consent{}, fmt.Errorf("consent: wait %s: %w", id, err)
		}
	}
}

// settled reads the request and reports whether it is no longer pending, sweeping it
// first if it is past its expiry.
func (s *Service) settled(ctx context.Context, id string) (store.Consent, bool, error) {
	c, err := s.st.GetConsent(ctx, id)
	if err != nil {
		return store.Consent{}, false, fmt.Errorf("consent: wait %s: %w", id, err)
	}
	if c.State != store.ConsentPending {
		return c, true, nil
	}
	if c.Expires.IsZero() || s.now().Before(c.Expires) {
		return c, false, nil
	}
	if _, err := s.Sweep(ctx); err != nil {
		return store.Consent{}, false, fmt.Errorf("consent: wait %s: %w", id, err)
	}
	c, err = s.st.GetConsent(ctx, id)
	if err != nil {
		return store.Consent{}, false, fmt.Errorf("consent: wait %s: %w", id, err)
	}
	return c, c.State != store.ConsentPending, nil
}

// sleep waits for d, for changed to close, or for ctx to end (its error).
func sleep(ctx context.Context, d time.Duration, changed <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed:
	case <-t.C:
	}
	return nil
}
