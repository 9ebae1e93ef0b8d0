package broker

import (
	"maps"
	"sync/atomic"

	"github.com/capgate/capgate/manifest"
)

// The evaluation gate: only tested, working capabilities take calls and reach planning. The
// gateway runs each capability's conformance suite against its provider (at install and on
// a schedule) and tells the broker which ones failed their last run (SetFailedEvaluations);
// a failed capability is then as a provider that is down: step 1 of the decision refuses its
// calls as not working right now, UsableBy (and so planning and every listing) leaves it
// out, and ListAll shows it as not working right now, with why. What a provider says of its
// own tests is never asked: only the host's runs count.

// evaluations is one published set of failed capabilities; a new set replaces it whole.
type evaluations struct {
	failed  map[manifest.CapabilityID]string // why, in words for the person
	version uint64
}

// evalState is the broker's current set. The zero value holds none.
type evalState struct {
	cur     atomic.Pointer[evaluations]
	version atomic.Uint64
}

// SetFailedEvaluations replaces the set of capabilities whose last evaluation failed: by
// capability id, why (the suite's case and rule, in the host's words). Ids that are no
// capability id are ignored (no capability has them). A set equal to the current one changes
// nothing, so that a listing's stamp (UsableStamp) moves only when the answer would. It is
// safe to call at any time, from any goroutine; a call decided after it returns sees it.
func (b *Broker) SetFailedEvaluations(failed map[string]string) {
	next := make(map[manifest.CapabilityID]string, len(failed))
	for id, why := range failed {
		if cid, err := manifest.ParseCapabilityID(id); err == nil {
			next[cid] = why
		}
	}
	if cur := b.evals.cur.Load(); cur != nil && maps.Equal(cur.failed, next) {
		return
	}
	if cur := b.evals.cur.Load(); cur == nil && len(next) == 0 {
		return
	}
	b.evals.cur.Store(&evaluations{failed: next, version: b.evals.version.Add(1)})
}

// EvaluationFailed reports whether the last evaluation of id failed, and why.
func (b *Broker) EvaluationFailed(id manifest.CapabilityID) (string, bool) {
	cur := b.evals.cur.Load()
	if cur == nil {
		return "", false
	}
	why, failed := cur.failed[id]
	return why, failed
}

// evaluationVersion moves whenever the set of failed capabilities changes.
func (b *Broker) evaluationVersion() uint64 {
	if cur := b.evals.cur.Load(); cur != nil {
		return cur.version
	}
	return 0
}
