package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/policy"
)

// TestWallClock: the broker's clock reads as time.Now does, never runs backwards between
// rebases, and reads the wall clock again after clockRebase.
func TestWallClock(t *testing.T) {
	var c wallClock
	first := c.now()
	var last time.Time
	for range 10000 {
		before := time.Now()
		got := c.now()
		after := time.Now()
		// Between the two time.Now readings, on the wall clock (Round(0) drops the monotonic
		// readings, so that the comparison is of the wall times the decision uses).
		if got.Round(0).Before(before.Round(0).Add(-time.Millisecond)) || got.Round(0).After(after.Round(0).Add(time.Millisecond)) {
			t.Fatalf("clock read %v outside [%v, %v]", got, before, after)
		}
		if got.Before(last) {
			t.Fatalf("clock ran backwards: %v after %v", got, last)
		}
		last = got
	}
	base := *c.base.Load()
	time.Sleep(clockRebase + 10*time.Millisecond)
	c.now()
	if b := *c.base.Load(); !b.After(base) || b.Equal(first) {
		t.Fatalf("the clock did not read the wall clock again after clockRebase")
	}
}

func TestWallClockConcurrent(t *testing.T) {
	var c wallClock
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 2000 {
				if d := time.Since(c.now()); d < -time.Millisecond || d > time.Second {
					t.Errorf("clock off by %v", d)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestExpiredTokenRefusedAtUseWhateverTheDecisionsClock: the decision's one-read clock may be
// behind the wall clock for up to clockRebase after a step or a resume from suspend; the use
// of a token is checked by the exact clock, so an expired token never runs a call, with a
// use limit (TakeUse) or without (the check at use).
func TestExpiredTokenRefusedAtUseWhateverTheDecisionsClock(t *testing.T) {
	for _, maxUses := range []int64{0, 5} {
		e := newEnv(t)
		wire := e.issue(t, alice.ClientID, []string{"app.notes.*"}, maxUses, -time.Minute, e.key)
		// As if the machine had slept for half an hour and the decision's clock had not yet
		// read the wall clock again.
		e.b.decisionNow = func() time.Time { return time.Now().Add(-30 * time.Minute) }
		if d := e.b.Decide(context.Background(), alice, call("write", `{"id":"9","text":"x"}`, wire)); !d.Allowed() {
			t.Fatalf("max uses %d: the lagging decision did not allow the call (%s %s): the test proves nothing", maxUses, d.Code, d.Explanation)
		}
		r := e.b.Call(context.Background(), alice, call("write", `{"id":"9","text":"x"}`, wire))
		if r.OK() || r.Code != policy.CodeTokenExpired {
			t.Fatalf("max uses %d: an expired token was used: %+v", maxUses, r)
		}
		if _, ran := e.app.notes["9"]; ran {
			t.Fatalf("max uses %d: the call ran", maxUses)
		}
	}
}
