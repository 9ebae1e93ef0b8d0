package trigger_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/trigger"
	"github.com/capgate/capgate/manifest"
)

// Three replicas on one PostgreSQL, their engines stepping at once on the same clock, fire
// each scheduled time of one trigger exactly once: ten times, ten calls, ten uses of its
// budget, whichever replica took each.
func TestThreeReplicasFireOnce(t *testing.T) {
	pg := pgtest.Schema(t)
	dir := t.TempDir()
	c := &clock{now: time.Now().UTC().Truncate(time.Minute).Add(time.Second)}
	var gs []*gateway.Gateway
	for range 3 {
		g, err := gateway.Open(context.Background(), gateway.Config{DataDir: dir, Store: pg, Listen: "-", Socket: "-",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DelayedCommit: -1, TriggerTick: -1, TriggerNow: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		gs = append(gs, g)
	}
	ctx := context.Background()
	gatewaytest.AddClient(t, gs[0].Store, store.Client{ID: "cl_agent", Name: "agent", Trust: manifest.AuthUser})
	if err := gs[1].Broker.PutMandate(ctx, store.Mandate{Permission: "system.settings.write", Autonomy: "act", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	cl, err := gs[2].Store.GetClient(ctx, "cl_agent")
	if err != nil {
		t.Fatal(err)
	}
	p, err := gs[2].Triggers.Propose(ctx, broker.CallerOf(cl), trigger.Spec{
		Source: trigger.Source{Kind: trigger.SourceSchedule, Cron: "* * * * *", TimeZone: "America/New_York"},
		Action: trigger.Action{App: "org.capgate.settings", Method: "set_setting",
			Params: json.RawMessage(`{"category":"sound","key":"master_volume","value":33}`)},
		Budget: trigger.Budget{Count: 100}, EndsAt: time.Now().Add(2 * time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := gs[0].Consent.Approve(ctx, p.ConsentID, "the person", false); err != nil {
		t.Fatal(err)
	}
	step := func() {
		var wg sync.WaitGroup
		for _, g := range gs {
			wg.Go(func() {
				if err := g.Triggers.Step(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	step() // the approval: one replica activates it, the others find its consent spent
	start := c.Now().Truncate(time.Minute)
	for i := 1; i <= 10; i++ {
		c.set(start.Add(time.Duration(i)*time.Minute + time.Second))
		step()
	}
	v, err := gs[0].Triggers.Get(ctx, p.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, f := range v.Recent {
		if f.State == trigger.FiringDone {
			done++
		}
	}
	runs := 0
	for _, r := range gatewaytest.AuditRecords(t, gs[0].Store) {
		if r.AuditTag == "trigger "+p.ID && r.Action == "execute" && r.Result == "success" {
			runs++
		}
	}
	if v.State != trigger.StateActive || done != 10 || runs != 10 || v.Used != 10 {
		t.Fatalf("three replicas over ten minutes: state %s, %d firings done, %d calls run, %d uses; want 10 each", v.State, done, runs, v.Used)
	}
}
