package broker

import "time"

// maxAppProblems bounds the field paths an app's own ParamValidator can add to a refusal:
// the explanation lists a few and counts the rest, and an app's answer must not grow the
// audit record or the answer without bound.
const maxAppProblems = 64

// recordGrace bounds the write of a refusal or an outcome record after the call's own
// context has ended: the log still says how the call ended, and a store that does not answer
// holds the call's goroutine no longer than this.
const recordGrace = 5 * time.Second

// clockRebase is how long the broker's clock adds the monotonic clock's advance to one wall
// clock reading before it reads the wall clock again (wallClock): the longest a step of the
// wall clock, or a suspend, goes unseen by decisions (never by the check of a token at use).
const clockRebase = 100 * time.Millisecond
