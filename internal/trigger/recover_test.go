package trigger_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/trigger"
)

// A firing whose process died (a kill -9 between taking it and finishing it) is finished by
// another engine once its lease ran out, as far as the audit log says it got: never decided,
// it is decided and runs now; allowed with no outcome, the action may have run, and a
// capability that is not idempotent is not run again: the firing is marked interrupted.
func TestInterruptedFirings(t *testing.T) {
	for _, c := range []struct {
		name    string
		allowed bool // the dead process's decision is in the log
		want    string
		volume  string
	}{
		{"never decided", false, trigger.FiringDone, "60"},
		{"allowed, no outcome", true, trigger.FiringInterrupted, "unset"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			p := e.propose(e.spec("*/5 * * * *", "UTC", 60, 10))
			e.approve(p)
			slot := e.nextSlot()
			key := fmt.Sprintf("t%012d", slot.Unix())
			id := trigger.FiringID(p.ID, key)
			head, _ := e.g.Store.AuditHead(e.ctx)
			row, _ := json.Marshal(trigger.Firing{ID: id, Trigger: p.ID, Key: key, At: slot, State: trigger.FiringTaken,
				Runner: "eng_dead", Lease: slot.Add(time.Second), AuditFrom: head.Seq, Updated: slot})
			if err := e.g.Store.CreateState(e.ctx, trigger.StateApp, "firing/"+p.ID+"/"+key, row); err != nil {
				t.Fatal(err)
			}
			if c.allowed {
				if _, err := e.g.Audit.Append(e.ctx, audit.Record{Action: "execute", ClientID: e.client, Decision: audit.DecisionAllow,
					Kind: audit.KindDecision, CallID: id, AuditTag: "trigger " + p.ID}); err != nil {
					t.Fatal(err)
				}
			}
			// At its time the row is there: this engine does not take it again while the dead
			// one's lease holds.
			e.at(slot.Add(500 * time.Millisecond))
			if e.volume() != "unset" || e.firings(p.ID)[trigger.FiringTaken] != 1 {
				t.Fatalf("under the dead process's lease: volume %s, firings %v", e.volume(), e.firings(p.ID))
			}
			e.at(slot.Add(2 * time.Second))
			if got := e.firings(p.ID)[c.want]; got != 1 || e.volume() != c.volume {
				t.Fatalf("after the lease: firings %v, volume %s; want one %s and volume %s", e.firings(p.ID), e.volume(), c.want, c.volume)
			}
			// Taken up once: a step after does nothing more.
			e.step()
			if n := e.countRecords(p.ID, "execute", "success"); (c.want == trigger.FiringDone) != (n == 1) || n > 1 {
				t.Fatalf("%d runs recorded", n)
			}
		})
	}
}
