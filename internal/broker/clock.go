package broker

import (
	"sync/atomic"
	"time"
)

// wallClock is time.Now at one clock read instead of two. time.Now reads the wall clock and
// the monotonic clock (two reads of the host's clock, some 55 ns in a VM whose clock is
// kvm-clock, a sixth of a decision with a cached token); this reads the monotonic clock
// only, as time.Since does, and adds what it measured to a wall-clock time read at most
// clockRebase ago. The two clocks advance at one rate (NTP slews both), so the result is
// time.Now's but for a step of the wall clock (settimeofday, an NTP step) and a suspend of the
// machine (the monotonic clock stops while it sleeps), which it follows within clockRebase of
// running. So it is only the decision's clock (Broker.decisionNow): a token's use is checked
// by Options.Now, time.Now by default, and a token that expired while the clock lagged is
// refused there (TestExpiredTokenRefusedAtUseWhateverTheDecisionsClock).
type wallClock struct {
	base atomic.Pointer[time.Time] // a time.Now, with its monotonic reading
}

func (c *wallClock) now() time.Time {
	if b := c.base.Load(); b != nil {
		if d := time.Since(*b); d >= 0 && d < clockRebase {
			return b.Add(d)
		}
	}
	t := time.Now()
	c.base.Store(&t)
	return t
}
