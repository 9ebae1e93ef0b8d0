package trigger_test

// The trigger engine tested against a real gateway (SQLite store, registry with the
// built-in apps, tokens, consent, audit, broker) on a temporary data folder, with the
// engine's clock in the test's hands and its steps taken by the test (TriggerTick -1). The
// person answers through the consent service, as the approval page does. The broker keeps
// the real clock: the test's clock starts at the real time and moves forward from there, so
// that a token's expiry (the trigger's end date) is judged alike by both.

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/settings"
	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/trigger"
	"github.com/capgate/capgate/manifest"
)

// clock is the engine's clock, moved by the test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

type env struct {
	t       *testing.T
	ctx     context.Context
	g       *gateway.Gateway
	clock   *clock
	client  string // the agent's client id
	key     string // its key
	trusted string // the trusted app keys' folder
}

// newEnv opens a gateway whose trigger engine the test steps, with an agent client trusted
// as user and the person's mandate act for system.settings.write.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), clock: &clock{now: time.Now().UTC().Truncate(time.Second)}, trusted: t.TempDir()}
	g, err := gateway.Open(e.ctx, gateway.Config{DataDir: t.TempDir(), Listen: "-", Socket: "-", TrustedDir: e.trusted,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DelayedCommit: -1, ConsentWait: 10 * time.Millisecond,
		TriggerTick: -1, TriggerNow: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	e.g = g
	e.client = "cl_agent"
	e.key = gatewaytest.AddClient(t, g.Store, store.Client{ID: e.client, Name: "agent", Trust: manifest.AuthUser})
	e.mandate("system.settings.write", "act")
	return e
}

// mandate sets the person's mandate for permission.
func (e *env) mandate(permission, autonomy string) {
	e.t.Helper()
	if err := e.g.Broker.PutMandate(e.ctx, store.Mandate{Permission: permission, Autonomy: autonomy, Updated: time.Now()}); err != nil {
		e.t.Fatal(err)
	}
}

// spec is a proposal to set the master volume to volume on cron in zone, count times at most,
// ending in a day.
func (e *env) spec(cron, zone string, volume, count int) trigger.Spec {
	return trigger.Spec{
		Source: trigger.Source{Kind: trigger.SourceSchedule, Cron: cron, TimeZone: zone},
		Action: trigger.Action{App: settings.AppID, Method: "set_setting",
			Params: json.RawMessage(`{"category":"sound","key":"master_volume","value":` + itoa(volume) + `}`)},
		Budget: trigger.Budget{Count: int64(count)},
		EndsAt: e.clock.Now().Add(24 * time.Hour),
		Reason: "keep the volume down at night",
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// propose proposes spec as the agent and fails the test on an error.
func (e *env) propose(spec trigger.Spec) trigger.Proposal {
	e.t.Helper()
	p, err := e.g.Triggers.Propose(e.ctx, e.caller(), spec)
	if err != nil {
		e.t.Fatalf("propose: %v", err)
	}
	return p
}

// approve approves the trigger's proposal as the person, and steps the engine.
func (e *env) approve(p trigger.Proposal) {
	e.t.Helper()
	if err := e.g.Consent.Approve(e.ctx, p.ConsentID, "the person", false); err != nil {
		e.t.Fatal(err)
	}
	e.step()
	if v := e.get(p.ID); v.State != trigger.StateActive {
		e.t.Fatalf("after the approval the trigger is %s (%s), want active", v.State, v.Stopped)
	}
}

// step takes one step of the engine at the clock's time, failing on an error.
func (e *env) step() {
	e.t.Helper()
	if err := e.g.Triggers.Step(e.ctx); err != nil {
		e.t.Fatalf("step: %v", err)
	}
}

// at sets the clock and steps.
func (e *env) at(t time.Time) {
	e.t.Helper()
	e.clock.set(t)
	e.step()
}

func (e *env) get(id string) trigger.View {
	e.t.Helper()
	v, err := e.g.Triggers.Get(e.ctx, id, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// volume reads the master volume from the settings app, as the person's settings hold it.
func (e *env) volume() string {
	e.t.Helper()
	b, err := e.g.Store.GetState(e.ctx, settings.AppID, "sound.master_volume")
	if err != nil {
		return "unset"
	}
	return string(b)
}

// firings counts the trigger's firings by state.
func (e *env) firings(id string) map[string]int {
	e.t.Helper()
	out := map[string]int{}
	for _, f := range e.get(id).Recent {
		out[f.State]++
	}
	return out
}

// records returns the audit records tagged with the trigger's id.
func (e *env) records(id string) []audit.Record {
	e.t.Helper()
	var out []audit.Record
	for _, r := range gatewaytest.AuditRecords(e.t, e.g.Store) {
		if r.AuditTag == "trigger "+id {
			out = append(out, r)
		}
	}
	return out
}

// countRecords counts the trigger's records whose action and result are those given ("":
// any).
func (e *env) countRecords(id, action, result string) int {
	n := 0
	for _, r := range e.records(id) {
		if (action == "" || r.Action == action) && (result == "" || r.Result == result) {
			n++
		}
	}
	return n
}
