package broker

import (
	"sync"
	"testing"
	"time"
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
