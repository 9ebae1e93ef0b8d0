package main

import (
	"fmt"
	"runtime"
	"slices"
	"time"
)

// An op is one contender's single operation: one decision, one verification, one call. It
// returns an error when the operation did not do what it should (a decision that denies what
// it must allow, a call that failed): a race of wrong answers measures nothing.
type op struct {
	name string
	fn   func() error

	batch int       // operations per round, set by calibrate
	ns    []float64 // ns/op of each round
}

// Limits of the measuring loop.
const (
	// calibrateFor is how long each op runs, unmeasured, to warm its caches and connections
	// and to estimate its cost.
	calibrateFor = 100 * time.Millisecond
	// maxBatch bounds the operations of one round: a batch of a fast op within the round
	// time, not more.
	maxBatch = 1 << 22
)

// calibrate warms o up and sets its batch so that one round of it takes about round.
func (o *op) calibrate(round time.Duration) error {
	n := 0
	start := time.Now()
	for time.Since(start) < calibrateFor || n < 3 {
		if err := o.fn(); err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
		n++
	}
	per := time.Since(start) / time.Duration(n)
	o.batch = int(min(max(round/max(per, 1), 1), maxBatch))
	return nil
}

// runBatch times one batch of o and records its ns/op. The heap is collected first, as
// testing.Benchmark does, so that no op pays for the garbage of the one before it.
func (o *op) runBatch() error {
	runtime.GC()
	start := time.Now()
	for range o.batch {
		if err := o.fn(); err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
	}
	o.ns = append(o.ns, float64(time.Since(start).Nanoseconds())/float64(o.batch))
	return nil
}

// median is the median of o's rounds in ns/op.
func (o *op) median() float64 {
	if len(o.ns) == 0 {
		return 0
	}
	s := slices.Clone(o.ns)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// measure calibrates every op, then runs rounds rounds; in each round every op runs one
// batch, in an order rotated by one each round, so that a change of the machine's load
// meets every op alike and no op always follows the same neighbour.
func measure(ops []*op, rounds int, round time.Duration, progress func(string)) error {
	for _, o := range ops {
		progress("warming up " + o.name)
		if err := o.calibrate(round); err != nil {
			return err
		}
	}
	for r := range rounds {
		progress(fmt.Sprintf("round %d of %d", r+1, rounds))
		for i := range ops {
			if err := ops[(i+r)%len(ops)].runBatch(); err != nil {
				return err
			}
		}
	}
	return nil
}
