package trigger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// Run takes a Step every Tick until ctx ends.
func (e *Engine) Run(ctx context.Context) {
	tick := time.NewTicker(e.o.Tick)
	defer tick.Stop()
	for {
		if err := e.Step(ctx); err != nil && ctx.Err() == nil {
			e.o.Logger.Error("triggers: a pass failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Step takes one pass over every trigger: a proposal the person answered is activated or
// stopped, a trigger past its end date stops, a schedule's due times fire, and firings that
// wait for the person or were interrupted are taken up. Tests drive it with their own clock.
func (e *Engine) Step(ctx context.Context) error {
	if e.o.Broker == nil {
		return ErrNotServed
	}
	ts, _, err := e.recs.list(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range ts {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := e.stepOne(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("trigger %s: %w", t.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (e *Engine) stepOne(ctx context.Context, t Trigger) error {
	now := e.o.Now()
	switch t.State {
	case StateStopped:
		// A stopped trigger is kept for the person to see why, then forgotten (the audit
		// log keeps its history), so that the host's MaxTriggers holds live ones.
		if now.Sub(t.Updated) > KeepStopped {
			return e.forget(ctx, t.ID)
		}
	case StateProposed:
		return e.settle(ctx, t)
	case StateActive, StatePaused:
		if !now.Before(t.EndsAt) {
			e.stop(ctx, &t, "its end date passed")
			return nil
		}
		if err := e.openFirings(ctx, t); err != nil {
			return err
		}
		if t.Source.Kind == SourceSchedule {
			return e.due(ctx, t)
		}
	}
	return nil
}

// forget removes trigger id and its firings.
func (e *Engine) forget(ctx context.Context, id string) error {
	fs, err := e.recs.firings(ctx, id)
	if err != nil {
		return err
	}
	for _, f := range fs {
		if err := e.recs.deleteFiring(ctx, id, f.Key); err != nil {
			return err
		}
	}
	return e.recs.delete(ctx, id)
}

// settle activates a proposal the person approved, and stops one they did not.
func (e *Engine) settle(ctx context.Context, t Trigger) error {
	c, err := e.o.Store.GetConsent(ctx, t.ConsentID)
	if errors.Is(err, store.ErrNotFound) {
		e.stop(ctx, &t, "its proposal is gone")
		return nil
	}
	if err != nil {
		return err
	}
	switch c.State {
	case store.ConsentPending:
		if !e.o.Now().Before(c.Expires) {
			e.stop(ctx, &t, "the person did not answer its proposal in time")
		}
		return nil
	case store.ConsentDenied:
		e.stop(ctx, &t, "the person did not approve it")
		return nil
	case store.ConsentExpired:
		e.stop(ctx, &t, "the person did not answer its proposal in time")
		return nil
	case store.ConsentCancelled:
		e.stop(ctx, &t, "its proposal was withdrawn")
		return nil
	}
	client, err := e.o.Store.GetClient(ctx, t.ClientID)
	if err != nil || client.Disabled {
		e.stop(ctx, &t, "its client was removed or disabled")
		return nil
	}
	iss, err := e.o.Broker.IssueAgreed(ctx, broker.CallerOf(client), broker.Agreed{ConsentID: t.ConsentID,
		Grants: []string{t.Permission}, ExpiresAt: t.EndsAt, MaxUses: t.MaxFirings, AuditTag: auditTag(t.ID)})
	if errors.Is(err, broker.ErrConsentSpent) {
		// Another engine activated it, or is writing it. A record still proposed long after
		// its approval was left so by an engine that died between the token and the record.
		fresh, gerr := e.recs.get(ctx, t.ID)
		if gerr == nil && fresh.State == StateProposed && e.o.Now().Sub(c.Answered) > ActivationGrace {
			e.stop(ctx, &fresh, "its activation was interrupted: propose it again")
		}
		return nil
	}
	if err != nil {
		e.stop(ctx, &t, "its token could not be issued: "+err.Error())
		return nil
	}
	t.State, t.TokenID, t.Token, t.Cursor, t.Updated = StateActive, iss.ID, iss.Wire, e.o.Now(), e.o.Now()
	if err := e.recs.put(ctx, t); err != nil {
		return err
	}
	rec := e.record(t, "trigger.activate")
	rec.Decision, rec.Result = audit.DecisionAllow, "success"
	rec.Explanation = "the person approved the trigger: it fires from now until " + t.EndsAt.UTC().Format(time.RFC3339)
	if _, err := e.o.Audit.Append(ctx, rec); err != nil {
		e.o.Logger.Error("triggers: an activation could not be recorded", "trigger", t.ID, "err", err)
	}
	return nil
}

// due fires a schedule's times from its cursor to now: those late by more than MissedAfter
// by its missed policy, the others each once.
func (e *Engine) due(ctx context.Context, t Trigger) error {
	s, err := ParseSchedule(t.Source.Cron, t.Source.TimeZone)
	if err != nil {
		e.stop(ctx, &t, "its schedule no longer parses")
		return nil
	}
	now := e.o.Now()
	from := t.Cursor
	if from.IsZero() {
		from = t.Created
	}
	cursor := from
	if t.State == StatePaused {
		// The times pass unrun: resuming starts from then.
		cursor = now
	} else {
		late, more := s.Between(from, now.Add(-MissedAfter), MaxFirings)
		if len(late) > 0 {
			last := late[len(late)-1]
			n := int64(len(late))
			if more {
				n++ // at least
			}
			if err := e.missed(ctx, t, late, n); err != nil {
				return err
			}
			cursor = last
		}
		onTime, _ := s.Between(cursor, now, MaxDuePerPass)
		for _, at := range onTime {
			if !at.Before(t.EndsAt) {
				break
			}
			if _, err := e.fire(ctx, t, scheduleKey(at), at, scheduleEvent(t, at), 0); err != nil && !errors.Is(err, errTaken) {
				return err
			}
			cursor = at
		}
	}
	if cursor.Equal(t.Cursor) {
		return nil
	}
	// Read it again: a change made meanwhile (a pause, a stop) is kept, and only the cursor
	// moves.
	fresh, err := e.recs.get(ctx, t.ID)
	if err != nil {
		return err
	}
	if fresh.Cursor.After(cursor) {
		return nil
	}
	fresh.Cursor = cursor
	return e.recs.put(ctx, fresh)
}

// missed handles scheduled times that passed while capgate was down: run once for them all,
// or record them skipped (one by one up to MaxMissedRecorded, else as one that counts them).
func (e *Engine) missed(ctx context.Context, t Trigger, late []time.Time, n int64) error {
	last := late[len(late)-1]
	if t.Missed == MissedOnce {
		if _, err := e.fire(ctx, t, scheduleKey(last), last, scheduleEvent(t, last), n); err != nil && !errors.Is(err, errTaken) {
			return err
		}
		return nil
	}
	why := "missed while capgate was down, and its missed policy is skip"
	if len(late) <= MaxMissedRecorded {
		for _, at := range late {
			if err := e.skip(ctx, t, scheduleKey(at), at, 1, why); err != nil {
				return err
			}
		}
		return nil
	}
	return e.skip(ctx, t, scheduleKey(last), last, n, fmt.Sprintf("%d scheduled times up to this one were %s", n, why))
}

// scheduleEvent is a scheduled time's event, as its condition reads it.
func scheduleEvent(t Trigger, at time.Time) map[string]any {
	return map[string]any{"source": SourceSchedule, "trigger": t.ID, "scheduled_at": at.UTC().Format(time.RFC3339)}
}

// skip records a firing that does not run, taking its key so that it never runs after.
func (e *Engine) skip(ctx context.Context, t Trigger, key string, at time.Time, n int64, why string) error {
	f := Firing{ID: FiringID(t.ID, key), Trigger: t.ID, Key: key, At: at, State: FiringSkipped, Why: why, Updated: e.o.Now()}
	if n > 1 {
		f.Missed = n
	}
	if err := e.recs.takeFiring(ctx, f); errors.Is(err, store.ErrExists) {
		return nil
	} else if err != nil {
		return err
	}
	e.recordSkip(ctx, t, f)
	return nil
}

func (e *Engine) recordSkip(ctx context.Context, t Trigger, f Firing) {
	rec := e.record(t, "trigger.fire")
	rec.CallID, rec.Decision, rec.Code, rec.Result = f.ID, audit.DecisionDeny, codeSkipped, "skipped"
	rec.Explanation = "the firing was skipped: " + f.Why
	if _, err := e.o.Audit.Append(ctx, rec); err != nil {
		e.o.Logger.Error("triggers: a skip could not be recorded", "trigger", t.ID, "err", err)
	}
}

// errTaken is a firing another engine (or an earlier pass) took.
var errTaken = errors.New("the firing was taken already")

// fire takes the firing of t for key and runs it: its row first, so that one engine on any
// replica runs it, then the decision and the action. errTaken when it was taken.
func (e *Engine) fire(ctx context.Context, t Trigger, key string, at time.Time, event map[string]any, missed int64) (Firing, error) {
	now := e.o.Now()
	f := Firing{ID: FiringID(t.ID, key), Trigger: t.ID, Key: key, At: at, State: FiringTaken, Runner: e.instance,
		Lease: now.Add(FiringLease), Updated: now}
	if missed > 1 {
		f.Missed = missed
	}
	if h, err := e.o.Store.AuditHead(ctx); err == nil {
		f.AuditFrom = h.Seq
	} else if !errors.Is(err, store.ErrNotFound) {
		return Firing{}, err
	}
	if err := e.recs.takeFiring(ctx, f); errors.Is(err, store.ErrExists) {
		return Firing{}, errTaken
	} else if err != nil {
		return Firing{}, err
	}
	return e.run(ctx, f, event)
}

// run decides the firing afresh and runs its action when the decision allows it, then
// writes what came of it.
func (e *Engine) run(ctx context.Context, f Firing, event map[string]any) (Firing, error) {
	t, err := e.recs.get(ctx, f.Trigger)
	if errors.Is(err, ErrNotFound) {
		return f, nil // deleted meanwhile: its rows went with it
	}
	if err != nil {
		return f, err
	}
	end := func(state, why, code string) (Firing, error) {
		f.State, f.Why, f.Code, f.Updated, f.Runner, f.Lease = state, why, code, e.o.Now(), "", time.Time{}
		if state == FiringSkipped {
			e.recordSkip(ctx, t, f)
		}
		return f, e.recs.putFiring(ctx, f)
	}
	now := e.o.Now()
	switch {
	case t.State == StatePaused:
		return end(FiringSkipped, "the trigger is paused", "")
	case t.State != StateActive:
		return end(FiringSkipped, "the trigger is "+t.State, "")
	case !now.Before(t.EndsAt):
		e.stop(ctx, &t, "its end date passed")
		return end(FiringSkipped, "the trigger's end date passed", "")
	}
	// The mandate it is bound to must still be there; the decision then reads the mandates
	// of the moment, which may narrow it (a firing that asks).
	if _, err := e.o.Store.GetMandate(ctx, t.Mandate); errors.Is(err, store.ErrNotFound) {
		e.stop(ctx, &t, "the person withdrew its mandate for "+t.Mandate)
		return end(FiringSkipped, "its mandate was withdrawn", "")
	} else if err != nil {
		return f, err
	}
	if m, ok, err := e.o.Broker.MandateFor(ctx, permissionOf(t)); err != nil {
		return f, err
	} else if ok && m.Autonomy == string(manifest.AutonomyHandoff) {
		e.stop(ctx, &t, "the person now keeps "+t.Permission+" to themselves (its mandate is handoff)")
		return end(FiringSkipped, "its mandate is now handoff", "")
	}
	if _, ok := e.o.Registry.Capability(t.Capability); !ok {
		if _, installed := e.o.Registry.App(t.App); !installed {
			e.stop(ctx, &t, "its action's app is no longer installed")
			return end(FiringSkipped, "its action's app is no longer installed", "")
		}
		// The app is there and the capability is gone, or the app disabled: the decision
		// below refuses it, and says why.
	}
	if t.Condition != "" && f.ConsentID == "" {
		if ok, err := eventHolds(t, event, now); !ok {
			why := "its condition does not hold for this event"
			if err != nil {
				why = "its condition could not be evaluated for this event: " + err.Error()
			}
			return end(FiringSkipped, why, "")
		}
	}
	client, err := e.o.Store.GetClient(ctx, t.ClientID)
	if err != nil || client.Disabled {
		e.stop(ctx, &t, "its client was removed or disabled")
		return end(FiringSkipped, "its client was removed or disabled", "")
	}
	stopRenewing := e.renew(ctx, f)
	res := e.o.Broker.Call(ctx, broker.CallerOf(client), broker.Request{RequestID: f.ID, CallID: f.ID, Action: t.action(),
		App: t.App, Method: t.Method, Params: t.Params, Token: t.Token, AskOnly: true, Consent: f.ConsentID})
	stopRenewing()
	switch {
	case res.OK():
		f, err := end(FiringDone, "", "")
		if err == nil {
			e.afterUse(ctx, t)
		}
		return f, err
	case res.Code == policy.CodeConsentRequired && res.Decision.Outcome == policy.Ask && res.ConsentID != "":
		f.State, f.ConsentID, f.Why, f.Updated = FiringWaiting, res.ConsentID, "waits for the person's answer", e.o.Now()
		f.Runner, f.Lease = "", time.Time{}
		return f, e.recs.putFiring(ctx, f)
	case res.Code == policy.CodeTokenExhausted:
		e.stop(ctx, &t, "its budget is used up")
		return end(FiringRefused, "its budget is used up", res.Code)
	case res.Code == policy.CodeTokenExpired:
		e.stop(ctx, &t, "its end date passed")
		return end(FiringRefused, "its end date passed", res.Code)
	case res.Code == policy.CodeInvalidToken:
		e.stop(ctx, &t, "its token was revoked")
		return end(FiringRefused, "its token was revoked", res.Code)
	case res.Decision.Allowed():
		return end(FiringFailed, res.Message, res.Code)
	}
	return end(FiringRefused, res.Message, res.Code)
}

// renew keeps the lease of the taken firing f while its call runs, every FiringLease/3, and
// returns what stops it (and waits until it has, so that no renewal follows the firing's
// last write).
func (e *Engine) renew(ctx context.Context, f Firing) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(FiringLease / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				f.Lease, f.Updated = e.o.Now().Add(FiringLease), e.o.Now()
				if err := e.recs.putFiring(ctx, f); err != nil {
					e.o.Logger.Warn("triggers: a firing's lease could not be renewed", "firing", f.ID, "err", err)
				}
			}
		}
	}()
	return func() { close(stop); <-done }
}

// afterUse stops t once a firing used the last of its budget.
func (e *Engine) afterUse(ctx context.Context, t Trigger) {
	tok, err := e.o.Store.GetToken(ctx, t.TokenID)
	if err != nil || t.MaxFirings <= 0 || tok.Uses < t.MaxFirings {
		return
	}
	fresh, err := e.recs.get(ctx, t.ID)
	if err != nil {
		return
	}
	e.stop(ctx, &fresh, fmt.Sprintf("its budget is used up (%d firings)", t.MaxFirings))
}

// eventHolds evaluates t's condition over event.
func eventHolds(t Trigger, event map[string]any, now time.Time) (bool, error) {
	return token.EventConditionHolds(t.Condition, event, t.Permission, now)
}

// openFirings takes up t's firings that wait for the person (once the person answered) and
// those a process took and left (its lease ran out).
func (e *Engine) openFirings(ctx context.Context, t Trigger) error {
	fs, err := e.recs.firings(ctx, t.ID)
	if err != nil {
		return err
	}
	now := e.o.Now()
	for i, f := range fs {
		switch {
		case f.State == FiringWaiting:
			c, err := e.o.Store.GetConsent(ctx, f.ConsentID)
			if err != nil || (c.State == store.ConsentPending && now.Before(c.Expires)) {
				continue
			}
			if g, ok := e.takeOver(ctx, f); ok {
				if _, err := e.run(ctx, g, nil); err != nil {
					return err
				}
			}
		case f.State == FiringTaken && f.Runner != e.instance && (!now.Before(f.Lease) || gone(f.Runner)):
			if g, ok := e.takeOver(ctx, f); ok {
				if err := e.recover(ctx, t, g); err != nil {
					return err
				}
			}
		case !f.open() && i >= KeepFirings && e.forgettable(t, f, now):
			_ = e.recs.deleteFiring(ctx, t.ID, f.Key)
		}
	}
	return nil
}

// forgettable reports whether an old firing's row can go: its key can no longer come again.
func (e *Engine) forgettable(t Trigger, f Firing, now time.Time) bool {
	switch t.Source.Kind {
	case SourceSchedule:
		return !f.At.After(t.Cursor)
	case SourceWebhook:
		return now.Sub(f.Updated) > 2*HookWindow
	}
	return now.Sub(f.Updated) > 24*time.Hour
}

// takeOver makes this engine the one that goes on with f, once across every engine: each
// attempt has a key of its own, created once.
func (e *Engine) takeOver(ctx context.Context, f Firing) (Firing, bool) {
	f.Attempt++
	key := "takeover/" + f.ID + "/" + strconv.Itoa(f.Attempt)
	if err := e.o.Store.CreateState(ctx, StateApp, key, []byte(e.instance)); err != nil {
		return f, false
	}
	now := e.o.Now()
	f.Runner, f.Lease, f.Updated = e.instance, now.Add(FiringLease), now
	if f.State != FiringWaiting {
		f.State = FiringTaken
	}
	if err := e.recs.putFiring(ctx, f); err != nil {
		return f, false
	}
	return f, true
}

// recover finishes a firing whose process died after taking it: the audit log says how far
// it got. Not decided: it is decided now. Decided and refused, or run to its outcome: that
// is what came of it. Allowed with no outcome: the action may have run, so it runs again
// only when its capability is idempotent (its id, the call's, is the key); else it is
// interrupted, for the person to see, and never repeated.
func (e *Engine) recover(ctx context.Context, t Trigger, f Firing) error {
	decision, outcome, err := e.findCall(ctx, f)
	if err != nil {
		return err
	}
	done := func(state, why, code string) error {
		f.State, f.Why, f.Code, f.Updated, f.Runner, f.Lease = state, why, code, e.o.Now(), "", time.Time{}
		return e.recs.putFiring(ctx, f)
	}
	switch {
	case outcome != nil && outcome.Result == "success":
		return done(FiringDone, "finished before its process stopped", "")
	case outcome != nil:
		return done(FiringFailed, "it ran and failed before its process stopped", outcome.Code)
	case decision == nil:
		_, err := e.run(ctx, f, recoveredEvent(t, f))
		return err
	case decision.Decision == audit.DecisionAsk && decision.ConsentID != "":
		f.State, f.ConsentID, f.Why = FiringWaiting, decision.ConsentID, "waits for the person's answer"
		return done(FiringWaiting, f.Why, "")
	case decision.Decision != audit.DecisionAllow:
		return done(FiringRefused, decision.Explanation, decision.Code)
	}
	c, ok := e.o.Registry.Capability(t.Capability)
	if ok && (c.Cap.Idempotency == manifest.IdempotencyKeyed || c.Cap.Idempotency == manifest.IdempotencyNatural) {
		_, err := e.run(ctx, f, recoveredEvent(t, f))
		return err
	}
	return done(FiringInterrupted, "its process stopped after the action was allowed: it may have run, and it is not repeated", "")
}

// recoveredEvent is the event of a firing taken up after a crash: a schedule's is its time
// again; another source's payload is not kept, so its condition, checked before the decision
// that the log does not hold, is checked over nothing and refuses unless it holds of that.
func recoveredEvent(t Trigger, f Firing) map[string]any {
	if t.Source.Kind == SourceSchedule {
		return scheduleEvent(t, f.At)
	}
	return map[string]any{"source": t.Source.Kind, "trigger": t.ID}
}

// findCall reads the audit log after the firing was taken for the records of its call: its
// decision and its outcome, nil for those not there.
func (e *Engine) findCall(ctx context.Context, f Firing) (decision, outcome *audit.Record, err error) {
	from := f.AuditFrom + 1
	read := 0
	for read < MaxAuditScan {
		es, err := e.o.Store.AuditRange(ctx, from, 0, 1024)
		if err != nil {
			return nil, nil, err
		}
		if len(es) == 0 {
			break
		}
		for _, en := range es {
			if !bytes.Contains(en.Body, []byte(f.ID)) {
				continue
			}
			r, err := audit.DecodeRecord(en.Body)
			if err != nil || r.CallID != f.ID || r.Action == "trigger.fire" {
				continue
			}
			if r.Kind == audit.KindOutcome {
				outcome = &r
			} else {
				decision = &r
			}
		}
		read += len(es)
		from = es[len(es)-1].Seq + 1
	}
	return decision, outcome, nil
}

// ErrInactive is an event for a trigger that does not fire now (proposed, paused, stopped).
var ErrInactive = errors.New("the trigger does not fire now")

// ErrReplay is a webhook request or an event already taken: the same signed request again.
var ErrReplay = errors.New("this event was taken already")

// Hook takes a webhook request for trigger id: the signature over body (VerifyHook), then a
// firing keyed by the request's event id, so that a replay is refused, run on a goroutine of
// Options.Go. The body must be a JSON object: it is the event its condition reads.
func (e *Engine) Hook(ctx context.Context, id, signature string, body []byte) (Firing, error) {
	if e.o.Broker == nil {
		return Firing{}, ErrNotServed
	}
	if !ValidID(id) {
		return Firing{}, ErrNotFound
	}
	t, err := e.recs.get(ctx, id)
	if err != nil {
		return Firing{}, err
	}
	if t.Source.Kind != SourceWebhook {
		return Firing{}, ErrNotFound
	}
	eventID, err := VerifyHook(t.HookSecret, id, signature, body, e.o.Now())
	if err != nil {
		return Firing{}, err
	}
	event, err := eventObject(body)
	if err != nil {
		return Firing{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return e.take(ctx, t, eventID, event)
}

// take takes the firing of an event of t and runs it on a goroutine of Options.Go.
func (e *Engine) take(ctx context.Context, t Trigger, key string, event map[string]any) (Firing, error) {
	if t.State != StateActive {
		return Firing{}, fmt.Errorf("%w: it is %s", ErrInactive, t.State)
	}
	now := e.o.Now()
	if !now.Before(t.EndsAt) {
		return Firing{}, fmt.Errorf("%w: its end date passed", ErrInactive)
	}
	f := Firing{ID: FiringID(t.ID, key), Trigger: t.ID, Key: key, At: now, State: FiringTaken, Runner: e.instance,
		Lease: now.Add(FiringLease), Updated: now}
	if h, err := e.o.Store.AuditHead(ctx); err == nil {
		f.AuditFrom = h.Seq
	}
	if err := e.recs.takeFiring(ctx, f); errors.Is(err, store.ErrExists) {
		return Firing{}, ErrReplay
	} else if err != nil {
		return Firing{}, err
	}
	if !e.o.Go(func(life context.Context) {
		if _, err := e.run(life, f, event); err != nil {
			e.o.Logger.Error("triggers: a firing failed", "trigger", t.ID, "firing", f.ID, "err", err)
		}
	}) {
		// The host is closing: the row stays taken, and its lease hands it on.
		return f, nil
	}
	return f, nil
}

// Reply takes a typed reply for trigger id from caller: the trigger must wait for replies
// from that very client (another's, or no such trigger, is ErrNotFound alike), and the reply
// must pass the trigger's schema. replyID, which the sender makes unique, keys the firing: the
// same id again is ErrReplay.
func (e *Engine) Reply(ctx context.Context, caller broker.Caller, id, replyID string, reply json.RawMessage) (Firing, error) {
	if e.o.Broker == nil {
		return Firing{}, ErrNotServed
	}
	if !ValidID(id) {
		return Firing{}, ErrNotFound
	}
	t, err := e.recs.get(ctx, id)
	if err != nil {
		return Firing{}, err
	}
	if t.Source.Kind != SourceReply || t.Source.From != caller.ClientID {
		return Firing{}, ErrNotFound
	}
	if replyID == "" || len(replyID) > 128 {
		return Firing{}, fmt.Errorf("%w: id: must be 1 to 128 bytes", ErrInvalid)
	}
	event, err := eventObject(reply)
	if err != nil {
		return Firing{}, fmt.Errorf("%w: reply: %w", ErrInvalid, err)
	}
	s, err := manifest.CompileSchema(t.Source.Schema, "source.schema")
	if err != nil {
		return Firing{}, fmt.Errorf("%w: the trigger's schema no longer compiles", ErrInvalid)
	}
	if err := s.ValidateJSON(reply, "reply"); err != nil {
		return Firing{}, fmt.Errorf("%w: the reply breaks the trigger's schema: %w", ErrInvalid, err)
	}
	return e.take(ctx, t, "reply:"+replyID, event)
}

// eventObject reads an event's payload: strict JSON of an object, at most MaxEventBytes.
func eventObject(body []byte) (map[string]any, error) {
	if len(body) > MaxEventBytes {
		return nil, fmt.Errorf("the event is longer than %d bytes", MaxEventBytes)
	}
	if _, err := jcs.Parse(body, &jcs.Options{MaxBytes: MaxEventBytes}); err != nil {
		return nil, errors.New("the event must be strict JSON")
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, errors.New("the event must be a JSON object")
	}
	return m, nil
}

// Listens reports whether an active trigger waits for the event type of the app (by id):
// an app that has to look for its events (a folder scanned) looks only then.
func (e *Engine) Listens(ctx context.Context, appID, eventType string) (bool, error) {
	ts, _, err := e.recs.list(ctx)
	if err != nil {
		return false, err
	}
	for _, t := range ts {
		if t.State == StateActive && t.Source.Kind == SourceEvent && t.Source.Event == eventType && t.Source.App == appID {
			return true, nil
		}
	}
	return false, nil
}

// Emit is an app's event: payload is checked against the payload_schema its manifest
// declares for eventType, then every active trigger on that event takes a firing keyed by
// eventID (which the app makes unique; the same id again is the same event) and runs it.
// It returns the firings taken.
func (e *Engine) Emit(ctx context.Context, appID, eventType, eventID string, payload json.RawMessage) ([]Firing, error) {
	if e.o.Broker == nil {
		return nil, ErrNotServed
	}
	a, ok := e.o.Registry.App(appID)
	if !ok {
		return nil, fmt.Errorf("%w: no app %s is installed", ErrInvalid, appID)
	}
	ev, ok := e.eventOf(appID, eventType)
	if !ok {
		return nil, fmt.Errorf("%w: the app %s declares no event %s", ErrInvalid, appID, eventType)
	}
	if eventID == "" || len(eventID) > 128 {
		return nil, fmt.Errorf("%w: the event's id must be 1 to 128 bytes", ErrInvalid)
	}
	event, err := eventObject(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(ev.PayloadSchema) > 0 {
		s := a.Doc.EventSchema(eventType)
		if s == nil {
			return nil, fmt.Errorf("%w: the event's payload_schema does not compile", ErrInvalid)
		}
		if err := s.ValidateJSON(payload, "payload"); err != nil {
			return nil, fmt.Errorf("%w: the payload breaks the event's payload_schema: %w", ErrInvalid, err)
		}
	}
	ts, _, err := e.recs.list(ctx)
	if err != nil {
		return nil, err
	}
	var out []Firing
	for _, t := range ts {
		if t.Source.Kind != SourceEvent || t.Source.Event != eventType || (t.Source.App != appID && t.Source.App != a.Alias && t.Source.App != a.ID.String()) {
			continue
		}
		f, err := e.take(ctx, t, "ev:"+eventID, event)
		switch {
		case errors.Is(err, ErrInactive), errors.Is(err, ErrReplay):
			continue
		case err != nil:
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

// permissionOf is t's permission, parsed; the zero Permission (which no mandate covers but a
// pattern's text) when the stored text no longer parses.
func permissionOf(t Trigger) manifest.Permission {
	p, _ := manifest.ParsePermission(t.Permission)
	return p
}
