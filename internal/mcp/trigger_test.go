package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
)

// TestProposeTriggerTool proposes a trigger over MCP: the answer is the trigger, proposed,
// with the consent request the person answers; a trigger without an end date, or outside
// the person's mandates, is refused with the rule named.
func TestProposeTriggerTool(t *testing.T) { eachRevision(t, testProposeTriggerTool) }

func testProposeTriggerTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Second)
	cs := e.connect(e.addClient("alice", "user", false), nil)
	args := func(ends string) map[string]any {
		m := map[string]any{
			"source": map[string]any{"kind": "schedule", "cron": "0 8 * * 1-5", "time_zone": "Europe/Istanbul"},
			"action": map[string]any{"app": "org.capgate.settings", "method": "set_setting",
				"params": map[string]any{"category": "sound", "key": "master_volume", "value": 20}},
			"budget": map[string]any{"count": 10}, "reason": "quiet mornings",
		}
		if ends != "" {
			m["ends_at"] = ends
		}
		return m
	}
	ends := time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339)
	if a := e.call(cs, "capgate__propose_trigger", args(ends)); !a.isError || a.str("error_code") != "CAPABILITY_DENIED" || !strings.Contains(a.text, "no mandate") {
		t.Fatalf("without a mandate: %s", a.text)
	}
	if err := e.g.Broker.PutMandate(e.ctx, store.Mandate{Permission: "system.settings.write", Autonomy: "act", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if a := e.call(cs, "capgate__propose_trigger", args("")); !a.isError || !strings.Contains(a.text, "ends_at") {
		t.Fatalf("without an end date: %s", a.text)
	}
	a := e.call(cs, "capgate__propose_trigger", args(ends))
	if a.isError || a.str("state") != "proposed" || a.str("consent_id") == "" || a.str("token") != "" {
		t.Fatalf("proposed: %s", a.text)
	}
	c, err := e.g.Store.GetConsent(e.ctx, a.str("consent_id"))
	if err != nil || c.Kind != consent.KindTrigger || c.State != store.ConsentPending {
		t.Fatalf("its consent request: %+v %v", c, err)
	}
}
