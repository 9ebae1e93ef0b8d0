package trigger_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/trigger"
)

func (e *env) caller() broker.Caller {
	e.t.Helper()
	c, err := e.g.Store.GetClient(e.ctx, e.client)
	if err != nil {
		e.t.Fatal(err)
	}
	return broker.CallerOf(c)
}

// nextSlot is the first time after the clock on a five-minute boundary.
func (e *env) nextSlot() time.Time {
	return e.clock.Now().Truncate(5 * time.Minute).Add(5 * time.Minute)
}

// A trigger an agent proposes waits for the person, who sees it in plain words; approved, it
// fires on schedule, each firing decided afresh and audited with the trigger's id, and it
// stops for good at its budget, its token revoked.
func TestProposeApproveFireStopAtBudget(t *testing.T) {
	e := newEnv(t)
	p := e.propose(e.spec("*/5 * * * *", "Europe/Istanbul", 20, 2))
	if p.State != trigger.StateProposed || p.ConsentID == "" || p.MaxFirings != 2 || p.Mandate != "system.settings.write" {
		t.Fatalf("proposed: %+v", p.Trigger)
	}
	if p.Token != "" || p.HookSecret != "" {
		t.Fatal("a proposal shows no token, and a schedule has no secret")
	}
	_, req, err := e.g.Consent.Get(e.ctx, p.ConsentID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Kind != consent.KindTrigger || req.Trigger == nil || req.Reason != "keep the volume down at night" {
		t.Fatalf("the consent request: %+v", req)
	}
	words := strings.Join(consent.Describe(req).Trigger, "\n")
	for _, want := range []string{"when: ", "Europe/Istanbul", "settings.org.capgate.settings.set_setting", "at most 2 firings", "until: ", "skipped", "mandate for system.settings.write"} {
		if !strings.Contains(words, want) {
			t.Errorf("the person reads %q, without %q", words, want)
		}
	}
	// Nothing fires before the person answers.
	e.at(e.nextSlot().Add(time.Second))
	if got := e.volume(); got != "unset" {
		t.Fatalf("fired before approval: volume %s", got)
	}
	e.approve(p)
	v := e.get(p.ID)
	if v.TokenID == "" || v.Left != 2 || v.Next == nil {
		t.Fatalf("active: %+v", v)
	}
	slot := e.nextSlot()
	e.at(slot.Add(time.Second))
	if got := e.volume(); got != "20" {
		t.Fatalf("after the first firing the volume is %s, want 20", got)
	}
	if n := e.firings(p.ID)[trigger.FiringDone]; n != 1 {
		t.Fatalf("%d firings done, want 1", n)
	}
	// The same time again fires nothing more.
	e.step()
	if n := e.firings(p.ID)[trigger.FiringDone]; n != 1 {
		t.Fatalf("a step at the same time fired again: %d done", n)
	}
	e.at(slot.Add(5*time.Minute + time.Second))
	v = e.get(p.ID)
	if v.State != trigger.StateStopped || !strings.Contains(v.Stopped, "budget is used up") || v.Left != 0 {
		t.Fatalf("after its budget: %s (%s), left %d", v.State, v.Stopped, v.Left)
	}
	tok, err := e.g.Store.GetToken(e.ctx, v.TokenID)
	if err != nil || !tok.Revoked {
		t.Fatalf("its token after the stop: %+v, %v", tok, err)
	}
	e.at(slot.Add(10*time.Minute + time.Second))
	if n := e.firings(p.ID)[trigger.FiringDone]; n != 2 {
		t.Fatalf("%d firings done after the stop, want 2", n)
	}
	// Every firing is in the log with the trigger's id: its decision and its outcome.
	if n := e.countRecords(p.ID, "execute", "success"); n != 2 {
		t.Fatalf("%d successful outcomes tagged with the trigger, want 2: %+v", n, e.records(p.ID))
	}
	for _, a := range []string{"trigger.propose", "trigger.activate", "trigger.stop"} {
		if e.countRecords(p.ID, a, "") != 1 {
			t.Errorf("no %s record", a)
		}
	}
}

// What an agent proposes is checked before the person is asked: a rule broken is named, an
// action outside the client's trust or the person's mandates is refused.
func TestProposeRefusals(t *testing.T) {
	e := newEnv(t)
	base := func() trigger.Spec { return e.spec("0 9 * * *", "Europe/Istanbul", 10, 3) }
	cases := []struct {
		name   string
		change func(*trigger.Spec)
		err    error
		want   string
	}{
		{"no end date", func(s *trigger.Spec) { s.EndsAt = time.Time{} }, trigger.ErrInvalid, "ends_at: is required"},
		{"end date past", func(s *trigger.Spec) { s.EndsAt = e.clock.Now().Add(-time.Minute) }, trigger.ErrInvalid, "ends_at: must be in the future"},
		{"end date beyond the host's limit", func(s *trigger.Spec) { s.EndsAt = e.clock.Now().Add(91 * 24 * time.Hour) }, trigger.ErrInvalid, "ends_at: must be within"},
		{"no count", func(s *trigger.Spec) { s.Budget.Count = 0 }, trigger.ErrInvalid, "budget.count"},
		{"negative count", func(s *trigger.Spec) { s.Budget.Count = -1 }, trigger.ErrInvalid, "budget.count"},
		{"huge count", func(s *trigger.Spec) { s.Budget.Count = 1 << 40 }, trigger.ErrInvalid, "budget.count"},
		{"bad cron", func(s *trigger.Spec) { s.Source.Cron = "* * *" }, trigger.ErrInvalid, "source.cron"},
		{"no zone", func(s *trigger.Spec) { s.Source.TimeZone = "" }, trigger.ErrInvalid, "source.time_zone"},
		{"no source", func(s *trigger.Spec) { s.Source = trigger.Source{} }, trigger.ErrInvalid, "source.kind"},
		{"unknown source", func(s *trigger.Spec) { s.Source.Kind = "email" }, trigger.ErrInvalid, "source.kind"},
		{"schedule with an app", func(s *trigger.Spec) { s.Source.App = "x" }, trigger.ErrInvalid, "source"},
		{"condition not bool", func(s *trigger.Spec) { s.Condition = "1 + 1" }, trigger.ErrInvalid, "condition"},
		{"condition over params", func(s *trigger.Spec) { s.Condition = "params.x == 1" }, trigger.ErrInvalid, "condition"},
		{"missed policy", func(s *trigger.Spec) { s.Missed = "twice" }, trigger.ErrInvalid, "missed"},
		{"unknown app", func(s *trigger.Spec) { s.Action.App = "org.example.none" }, trigger.ErrInvalid, "action"},
		{"unknown method", func(s *trigger.Spec) { s.Action.Method = "delete_everything" }, trigger.ErrInvalid, "action"},
		{"params not an object", func(s *trigger.Spec) { s.Action.Params = json.RawMessage(`[1]`) }, trigger.ErrInvalid, "action.params"},
		{"params against the schema", func(s *trigger.Spec) {
			s.Action.Params = json.RawMessage(`{"category":"sound","key":"master_volume","value":1,"extra":2}`)
		}, trigger.ErrInvalid, "action.params"},
		{"no mandate", func(s *trigger.Spec) {
			s.Action = trigger.Action{App: "org.capgate.files", Method: "write_file", Params: json.RawMessage(`{"path":"a.txt","content":"x"}`)}
		}, trigger.ErrRefused, "no mandate"},
		{"amount over a non-number", func(s *trigger.Spec) {
			s.Budget.Amount = &trigger.Amount{Field: "key", Max: "100"}
		}, trigger.ErrInvalid, "budget.amount.field"},
		{"amount below one firing", func(s *trigger.Spec) {
			s.Budget.Amount = &trigger.Amount{Field: "value", Max: "5"}
		}, trigger.ErrInvalid, "budget.amount.max"},
		{"reason too long", func(s *trigger.Spec) { s.Reason = strings.Repeat("x", trigger.MaxReasonBytes+1) }, trigger.ErrInvalid, "reason"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base()
			c.change(&s)
			_, err := e.g.Triggers.Propose(e.ctx, e.caller(), s)
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %v naming %q", err, c.err, c.want)
			}
			for _, v := range []string{"org.example.none", "delete_everything"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("the error echoes the value %q: %v", v, err)
				}
			}
		})
	}
	t.Run("handoff mandate", func(t *testing.T) {
		e.mandate("system.settings.write", "handoff")
		defer e.mandate("system.settings.write", "act")
		_, err := e.g.Triggers.Propose(e.ctx, e.caller(), base())
		if !errors.Is(err, trigger.ErrRefused) || !strings.Contains(err.Error(), "handoff") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("client below the action's trust", func(t *testing.T) {
		c := e.caller()
		c.Trust = "public"
		_, err := e.g.Triggers.Propose(e.ctx, c, base())
		if !errors.Is(err, trigger.ErrRefused) || !strings.Contains(err.Error(), "trusted as") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("client set never to ask", func(t *testing.T) {
		c := e.caller()
		c.NeverAsk = true
		_, err := e.g.Triggers.Propose(e.ctx, c, base())
		if !errors.Is(err, trigger.ErrRefused) || !strings.Contains(err.Error(), "never to ask") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("the amount bounds the count", func(t *testing.T) {
		s := base()
		s.Budget.Amount = &trigger.Amount{Field: "value", Max: "25"}
		p := e.propose(s)
		if p.MaxFirings != 2 {
			t.Fatalf("a sum of 25 over firings of 10 allows %d, want 2", p.MaxFirings)
		}
	})
	// Nothing refused left a trigger behind: only the last case proposed one.
	vs, err := e.g.Triggers.List(e.ctx, "")
	if err != nil || len(vs) != 1 {
		t.Fatalf("%d triggers after the refusals, want 1 (%v)", len(vs), err)
	}
}

// A proposal is read strictly: unknown members, duplicate members, other types and a
// missing end date are named.
func TestParseSpec(t *testing.T) {
	good := `{"source":{"kind":"schedule","cron":"0 9 * * *","time_zone":"UTC"},"action":{"app":"a","method":"m","params":{}},"budget":{"count":1},"ends_at":"2027-01-01T00:00:00Z"}`
	if _, err := trigger.ParseSpec([]byte(good)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ body, want string }{
		{`{"source":{"kind":"schedule"},"target":"x"}`, "target"},
		{`{"source":{"kind":"schedule","kind":"webhook"}}`, "strict JSON"},
		{`{"budget":{"count":"ten"}}`, "budget.count"},
		{`{"ends_at":"tomorrow"}`, "ends_at"},
		{`[]`, "object"},
		{`{} {}`, "strict JSON"},
		{`{"action":{"app":"a","method":"m","params":{},"target":"/etc"}}`, "target"},
		{strings.Repeat(" ", trigger.MaxSpecBytes+1), "longer"},
	} {
		_, err := trigger.ParseSpec([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: got %v, want one naming %q", c.body, err, c.want)
		}
	}
}

// The mandate is read afresh at every firing: narrowed to ask, the next firing waits for the
// person and runs once they approve; withdrawn, the trigger stops for good.
func TestMandateNarrowedThenWithdrawn(t *testing.T) {
	e := newEnv(t)
	p := e.propose(e.spec("*/5 * * * *", "UTC", 30, 10))
	e.approve(p)
	slot := e.nextSlot()
	e.at(slot.Add(time.Second))
	if e.volume() != "30" {
		t.Fatalf("volume %s after the first firing", e.volume())
	}
	e.mandate("system.settings.write", "ask")
	if err := e.g.Store.PutState(e.ctx, "org.capgate.settings", "sound.master_volume", []byte("50")); err != nil {
		t.Fatal(err)
	}
	e.at(slot.Add(5*time.Minute + time.Second))
	if e.volume() != "50" {
		t.Fatalf("a firing under an ask mandate ran without the person: volume %s", e.volume())
	}
	waiting := e.firings(p.ID)[trigger.FiringWaiting]
	if waiting != 1 {
		t.Fatalf("%d firings wait, want 1: %+v", waiting, e.get(p.ID).Recent)
	}
	var consentID string
	for _, f := range e.get(p.ID).Recent {
		if f.State == trigger.FiringWaiting {
			consentID = f.ConsentID
		}
	}
	c, err := e.g.Store.GetConsent(e.ctx, consentID)
	if err != nil || c.Kind != consent.KindCall || c.State != store.ConsentPending {
		t.Fatalf("the firing's question: %+v, %v", c, err)
	}
	if err := e.g.Consent.Approve(e.ctx, consentID, "the person", false); err != nil {
		t.Fatal(err)
	}
	e.step()
	if e.volume() != "30" {
		t.Fatalf("the approved firing did not run: volume %s", e.volume())
	}
	if n := e.firings(p.ID)[trigger.FiringDone]; n != 2 {
		t.Fatalf("%d firings done, want 2", n)
	}
	if err := e.g.Broker.DeleteMandate(e.ctx, "system.settings.write"); err != nil {
		t.Fatal(err)
	}
	e.at(slot.Add(10*time.Minute + time.Second))
	v := e.get(p.ID)
	if v.State != trigger.StateStopped || !strings.Contains(v.Stopped, "withdrew its mandate") {
		t.Fatalf("after the mandate went: %s (%s)", v.State, v.Stopped)
	}
}

// A trigger stops for good at its end date, and its token with it.
func TestEndDate(t *testing.T) {
	e := newEnv(t)
	s := e.spec("*/5 * * * *", "UTC", 30, 10)
	s.EndsAt = e.clock.Now().Add(7 * time.Minute)
	p := e.propose(s)
	e.approve(p)
	e.at(s.EndsAt.Add(time.Second))
	v := e.get(p.ID)
	if v.State != trigger.StateStopped || !strings.Contains(v.Stopped, "end date") {
		t.Fatalf("past its end date: %s (%s)", v.State, v.Stopped)
	}
	if tok, _ := e.g.Store.GetToken(e.ctx, v.TokenID); !tok.Revoked {
		t.Fatal("its token was not revoked")
	}
}

// Scheduled times that passed while capgate was down follow the trigger's missed policy:
// skipped and recorded, or run once for them all.
func TestMissedTimes(t *testing.T) {
	for _, policy := range []string{trigger.MissedSkip, trigger.MissedOnce} {
		t.Run(policy, func(t *testing.T) {
			e := newEnv(t)
			s := e.spec("*/5 * * * *", "UTC", 40, 100)
			s.Missed = policy
			p := e.propose(s)
			e.approve(p)
			// An hour passes without a step: twelve times, all late.
			e.at(e.nextSlot().Add(time.Hour - time.Second))
			f := e.firings(p.ID)
			switch policy {
			case trigger.MissedSkip:
				if f[trigger.FiringSkipped] != 12 || f[trigger.FiringDone] != 0 || e.volume() != "unset" {
					t.Fatalf("skip: firings %v, volume %s", f, e.volume())
				}
				if n := e.countRecords(p.ID, "trigger.fire", "skipped"); n != 12 {
					t.Fatalf("%d skips recorded, want 12", n)
				}
			case trigger.MissedOnce:
				if f[trigger.FiringDone] != 1 || len(e.get(p.ID).Recent) != 1 || e.volume() != "40" {
					t.Fatalf("once: firings %v, volume %s", f, e.volume())
				}
				if m := e.get(p.ID).Recent[0].Missed; m != 12 {
					t.Fatalf("the firing stands for %d missed times, want 12", m)
				}
			}
		})
	}
}

// Pausing lets the times pass unrun; resuming fires again from then on. Deleting removes the
// trigger and revokes its token.
func TestPauseResumeDelete(t *testing.T) {
	e := newEnv(t)
	p := e.propose(e.spec("*/5 * * * *", "UTC", 35, 100))
	e.approve(p)
	if _, err := e.g.Triggers.Pause(e.ctx, p.ID, "the person"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.Triggers.Pause(e.ctx, p.ID, "the person"); !errors.Is(err, trigger.ErrState) {
		t.Fatalf("pausing a paused trigger: %v", err)
	}
	slot := e.nextSlot()
	e.at(slot.Add(time.Second))
	if e.volume() != "unset" {
		t.Fatal("a paused trigger fired")
	}
	if _, err := e.g.Triggers.Resume(e.ctx, p.ID, "the person"); err != nil {
		t.Fatal(err)
	}
	e.at(slot.Add(5*time.Minute + time.Second))
	if e.volume() != "35" {
		t.Fatalf("a resumed trigger did not fire: volume %s", e.volume())
	}
	v, err := e.g.Triggers.Delete(e.ctx, p.ID, "the person")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.g.Triggers.Get(e.ctx, p.ID, ""); !errors.Is(err, trigger.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if tok, _ := e.g.Store.GetToken(e.ctx, v.TokenID); !tok.Revoked {
		t.Fatal("the deleted trigger's token was not revoked")
	}
	if e.countRecords(p.ID, "trigger.delete", "") != 1 || e.countRecords(p.ID, "trigger.pause", "") != 1 {
		t.Fatal("the changes were not recorded")
	}
}

// A proposal the person denies never fires, and stops.
func TestDenied(t *testing.T) {
	e := newEnv(t)
	p := e.propose(e.spec("*/5 * * * *", "UTC", 35, 100))
	if err := e.g.Consent.Deny(e.ctx, p.ConsentID, "the person"); err != nil {
		t.Fatal(err)
	}
	e.at(e.nextSlot().Add(time.Second))
	v := e.get(p.ID)
	if v.State != trigger.StateStopped || v.TokenID != "" || e.volume() != "unset" {
		t.Fatalf("denied: %+v, volume %s", v.Trigger, e.volume())
	}
}

// Several engines on one store fire each scheduled time once: the firing's row is taken by
// one of them.
func TestEnginesFireEachTimeOnce(t *testing.T) {
	e := newEnv(t)
	p := e.propose(e.spec("* * * * *", "UTC", 45, 1000))
	e.approve(p)
	engines := []*trigger.Engine{e.g.Triggers}
	for range 2 {
		engines = append(engines, trigger.New(trigger.Options{Store: e.g.Store, Broker: e.g.Broker, Registry: e.g.Registry,
			Consent: e.g.Consent, Audit: e.g.Audit, Now: e.clock.Now}))
	}
	start := e.clock.Now().Truncate(time.Minute)
	for i := 1; i <= 5; i++ {
		e.clock.set(start.Add(time.Duration(i)*time.Minute + time.Second))
		done := make(chan error, len(engines))
		for _, en := range engines {
			go func() { done <- en.Step(e.ctx) }()
		}
		for range engines {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := e.firings(p.ID)[trigger.FiringDone]; n != 5 {
		t.Fatalf("%d firings done over five minutes by three engines, want 5", n)
	}
	if n := e.countRecords(p.ID, "execute", "success"); n != 5 {
		t.Fatalf("%d calls ran, want 5", n)
	}
}

// A trigger stopped while a firing waits for the person withdraws that question; a stopped
// trigger is listed for a month, then forgotten.
func TestStoppedWithdrawsAndIsForgotten(t *testing.T) {
	e := newEnv(t)
	e.mandate("system.settings.write", "ask")
	p := e.propose(e.spec("*/5 * * * *", "UTC", 30, 10))
	e.approve(p)
	e.at(e.nextSlot().Add(time.Second))
	var consentID string
	for _, f := range e.get(p.ID).Recent {
		if f.State == trigger.FiringWaiting {
			consentID = f.ConsentID
		}
	}
	if consentID == "" {
		t.Fatalf("no firing waits: %+v", e.get(p.ID).Recent)
	}
	if _, err := e.g.Triggers.Pause(e.ctx, p.ID, "the person"); err != nil {
		t.Fatal(err)
	}
	e.mandate("system.settings.write", "handoff")
	if _, err := e.g.Triggers.Resume(e.ctx, p.ID, "the person"); err != nil {
		t.Fatal(err)
	}
	e.at(e.nextSlot().Add(time.Second))
	v := e.get(p.ID)
	if v.State != trigger.StateStopped {
		t.Fatalf("under a handoff mandate: %s", v.State)
	}
	if c, err := e.g.Store.GetConsent(e.ctx, consentID); err != nil || c.State != store.ConsentCancelled {
		t.Fatalf("the waiting firing's question after the stop: %+v %v", c, err)
	}
	e.at(e.clock.Now().Add(29 * 24 * time.Hour))
	if _, err := e.g.Triggers.Get(e.ctx, p.ID, ""); err != nil {
		t.Fatalf("a stopped trigger is gone before a month: %v", err)
	}
	e.at(e.clock.Now().Add(2 * 24 * time.Hour))
	if _, err := e.g.Triggers.Get(e.ctx, p.ID, ""); !errors.Is(err, trigger.ErrNotFound) {
		t.Fatalf("a stopped trigger a month on: %v", err)
	}
}
