package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// Recorder writes an audit record and returns once it is durable; *audit.Writer is one.
type Recorder interface {
	Append(ctx context.Context, rec audit.Record) (int64, error)
}

// Options configures an Engine.
type Options struct {
	Store store.Store
	// Broker decides and runs firings and issues a trigger's token; nil for an engine that
	// only lists and changes triggers (the command line beside a running gateway, whose
	// engine fires them).
	Broker   *broker.Broker
	Registry *registry.Registry // resolves actions and events; nil with a nil Broker
	Consent  *consent.Service   // asks the person about proposals; nil with a nil Broker
	Audit    Recorder           // records every proposal, firing, skip and stop
	// MaxLifetime is the host's bound on a trigger's end date from its proposal; zero means
	// DefaultMaxLifetime.
	MaxLifetime time.Duration
	Tick        time.Duration // how often Run takes a step; zero means DefaultTick
	// Go runs f on a goroutine the host waits for at close (a webhook's firing); false when
	// the host is closing. Nil runs it on a plain goroutine.
	Go     func(f func(ctx context.Context)) bool
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: slog.Default()
}

// Engine proposes, fires and changes triggers. It is safe for concurrent use, and any
// number of engines, in one process or many, may share one store.
type Engine struct {
	o        Options
	recs     records
	instance string // names this engine in the firings it takes
}

// New returns an engine on o.
func New(o Options) *Engine {
	if o.MaxLifetime <= 0 {
		o.MaxLifetime = DefaultMaxLifetime
	}
	if o.Tick <= 0 {
		o.Tick = DefaultTick
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Go == nil {
		o.Go = func(f func(context.Context)) bool { go f(context.Background()); return true }
	}
	return &Engine{o: o, recs: records{st: o.Store}, instance: newInstance()}
}

// Errors of Propose and the changes; a front maps them to its codes.
var (
	// ErrInvalid is a proposal that breaks a rule: the error names the member and the rule.
	ErrInvalid = errors.New("invalid trigger")
	// ErrRefused is a proposal whose action lies outside what the client may do or the
	// person's mandate: the error says which.
	ErrRefused = errors.New("trigger refused")
	// ErrTooMany is a client that holds MaxTriggersPerClient triggers already.
	ErrTooMany = errors.New("too many triggers")
	// ErrNotServed is a proposal to an engine without a broker.
	ErrNotServed = errors.New("triggers are proposed to a running gateway")
	// ErrState is a change the trigger's state does not allow (resuming a stopped one).
	ErrState = errors.New("the trigger's state does not allow it")
)

// auditTag is the audit tag of every record of trigger id, its token's included.
func auditTag(id string) string { return "trigger " + id }

// Proposal is what Propose answers the client.
type Proposal struct {
	View
	// HookSecret is a webhook's secret, shown this once: the sender signs with it.
	HookSecret string `json:"hook_secret,omitempty"`
}

// View is a trigger as it is shown: the record without its token or secret, with its
// webhook's path, its budget used and left, its next scheduled time and its recent firings.
type View struct {
	Trigger
	HookPath string     `json:"hook_path,omitempty"`
	Used     int64      `json:"used"` // firings that took a use of its budget
	Left     int64      `json:"left"`
	Next     *time.Time `json:"next,omitempty"`
	Recent   []Firing   `json:"recent,omitempty"`
}

// HookPath is the path of trigger id's webhook.
func HookPath(id string) string { return "/v1/hooks/" + id }

// Propose checks spec for caller and records it as a trigger waiting for the person: a
// consent request of kind trigger shows it in plain words. The action must resolve to an
// installed capability the client may call (steps 1 to 4 of a decision), its params pass
// the capability's schema and are its fixed target, and a mandate of the person's must cover
// its permission and not keep it to the person (handoff).
func (e *Engine) Propose(ctx context.Context, caller broker.Caller, spec Spec) (Proposal, error) {
	if e.o.Broker == nil || e.o.Consent == nil || e.o.Registry == nil {
		return Proposal{}, ErrNotServed
	}
	if caller.NeverAsk {
		return Proposal{}, fmt.Errorf("%w: the client is set never to ask, and a trigger waits for the person's approval", ErrRefused)
	}
	now := e.o.Now()
	t, schedWords, err := e.check(ctx, caller, spec, now)
	if err != nil {
		return Proposal{}, err
	}
	ts, _, err := e.recs.list(ctx)
	if err != nil {
		return Proposal{}, err
	}
	live := 0
	for _, o := range ts {
		if o.ClientID == caller.ClientID && o.live() {
			live++
		}
	}
	if live >= MaxTriggersPerClient {
		return Proposal{}, fmt.Errorf("%w: the client holds %d triggers: delete one first", ErrTooMany, live)
	}
	if len(ts) >= MaxTriggers {
		return Proposal{}, fmt.Errorf("%w: the host holds %d triggers", ErrTooMany, len(ts))
	}
	var secretText string
	if t.Source.Kind == SourceWebhook {
		t.HookSecret, secretText = NewHookSecret()
	}
	c, _ := e.o.Registry.Method(t.App, t.Method)
	budget := ""
	if t.Amount != nil {
		budget = "a sum of at most " + t.Amount.Max.String() + " in " + t.Amount.Field
	}
	terms := &consent.TriggerTerms{ID: t.ID, Event: schedWords, Condition: t.Condition, Capability: t.Capability,
		MaxFirings: t.MaxFirings, Budget: budget, EndsAt: t.EndsAt, Missed: t.Missed, Mandate: t.Mandate}
	req := consent.Request{ClientID: caller.ClientID, ClientName: caller.Name, Kind: consent.KindTrigger,
		CapabilityID: t.Capability, Permission: t.Permission, Summary: "set up a trigger: " + c.Cap.Name, Params: t.Params,
		Risk: string(c.Cap.Risk), SideEffects: string(c.Cap.SideEffects), Reason: t.Reason, AuditTag: auditTag(t.ID), Trigger: terms}
	rec := e.record(t, "trigger.propose")
	rec.Decision, rec.Result = audit.DecisionAsk, "pending"
	rec.Explanation = "proposed a trigger (" + schedWords + "): it waits for the person's answer"
	// Nothing waits on the person unaudited: the record is durable before the request is.
	if _, err := e.o.Audit.Append(ctx, rec); err != nil {
		return Proposal{}, fmt.Errorf("the trigger was not proposed: its audit record could not be written: %w", err)
	}
	cr, err := e.o.Consent.Propose(ctx, req)
	if errors.Is(err, consent.ErrInvalidRequest) {
		return Proposal{}, fmt.Errorf("%w: it cannot be shown to the person: %w", ErrInvalid, err)
	}
	if err != nil {
		return Proposal{}, err
	}
	t.ConsentID = cr.ID
	if err := e.recs.create(ctx, t); err != nil {
		_ = e.o.Consent.Cancel(context.WithoutCancel(ctx), cr.ID, "capgate (the trigger was not recorded)")
		return Proposal{}, err
	}
	e.o.Consent.Changed()
	v, err := e.view(ctx, t, false)
	if err != nil {
		return Proposal{}, err
	}
	return Proposal{View: v, HookSecret: secretText}, nil
}

// Create is a trigger the person sets up themselves (the triggers page), to fire as the client
// caller: checked as Propose checks an agent's, its proposal approved at once by by (who is
// recorded as having approved it), and activated.
func (e *Engine) Create(ctx context.Context, caller broker.Caller, spec Spec, by string) (Proposal, error) {
	p, err := e.Propose(ctx, caller, spec)
	if err != nil {
		return Proposal{}, err
	}
	if err := e.o.Consent.Approve(ctx, p.ConsentID, by, false); err != nil {
		return Proposal{}, err
	}
	t, err := e.recs.get(ctx, p.ID)
	if err != nil {
		return Proposal{}, err
	}
	if err := e.settle(ctx, t); err != nil {
		return Proposal{}, err
	}
	v, err := e.Get(ctx, p.ID, "")
	if err != nil {
		return Proposal{}, err
	}
	p.View = v
	return p, nil
}

// check reads spec into a proposed trigger for caller, or says what is wrong with it. It
// returns the event source in words, for the person.
func (e *Engine) check(ctx context.Context, caller broker.Caller, spec Spec, now time.Time) (Trigger, string, error) {
	invalid := func(format string, a ...any) (Trigger, string, error) {
		return Trigger{}, "", fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	t := Trigger{ID: newTriggerID(), ClientID: caller.ClientID, ClientName: caller.Name, State: StateProposed, Source: spec.Source,
		Condition: spec.Condition, App: spec.Action.App, Method: spec.Action.Method, EndsAt: spec.EndsAt.UTC(), Missed: spec.Missed,
		Reason: spec.Reason, Created: now, Updated: now}
	var words string
	switch s := spec.Source; s.Kind {
	case SourceSchedule:
		if s.App != "" || s.Event != "" {
			return invalid("source: a schedule has no app or event")
		}
		sched, err := ParseSchedule(s.Cron, s.TimeZone)
		if err != nil {
			return invalid("%s", strings.ReplaceAll(err.Error(), "schedule.", "source."))
		}
		words = sched.Words()
	case SourceWebhook:
		if s.Cron != "" || s.TimeZone != "" || s.App != "" || s.Event != "" {
			return invalid("source: a webhook has no cron, time_zone, app or event")
		}
		words = "a request to its webhook signed with its secret (POST " + HookPath(t.ID) + ")"
	case SourceEvent:
		if s.Cron != "" || s.TimeZone != "" {
			return invalid("source: an app event has no cron or time_zone")
		}
		if s.App == "" || s.Event == "" {
			return invalid("source: an app event names its app and event")
		}
		if _, ok := e.eventOf(s.App, s.Event); !ok {
			return invalid("source.event: the app declares no event of that type in its manifest")
		}
		words = "the event " + s.Event + " of the app " + s.App
	case SourceReply:
		if s.Cron != "" || s.TimeZone != "" || s.App != "" || s.Event != "" {
			return invalid("source: a reply has no cron, time_zone, app or event")
		}
		from, err := e.client(ctx, s.From)
		if err != nil {
			return invalid("source.from: names no client (its id or name)")
		}
		if from.ID == caller.ClientID {
			return invalid("source.from: names the proposing client itself: a reply comes from another")
		}
		if len(s.Schema) == 0 {
			return invalid("source.schema: is required: the type of the reply")
		}
		if _, err := manifest.CompileSchema(s.Schema, "source.schema"); err != nil {
			return invalid("%v", err)
		}
		canon, _ := jcs.Canonicalize(s.Schema)
		t.Source.From, t.Source.Schema = from.ID, canon
		words = "a reply from the client " + from.Name + " of the type its schema gives"
	case "":
		return invalid("source.kind: is required: schedule, webhook, event or reply")
	default:
		return invalid("source.kind: must be schedule, webhook, event or reply")
	}
	if spec.Source.Kind != SourceReply && (spec.Source.From != "" || len(spec.Source.Schema) > 0) {
		return invalid("source: only a reply has from and schema")
	}
	if t.Condition != "" {
		if err := token.CompileEventCondition(t.Condition); err != nil {
			return invalid("condition: not a condition over event: %v", err)
		}
	}
	switch t.Missed {
	case "":
		t.Missed = MissedSkip
	case MissedSkip, MissedOnce:
	default:
		return invalid("missed: must be skip or once")
	}
	if len(t.Reason) > MaxReasonBytes {
		return invalid("reason: longer than %d bytes", MaxReasonBytes)
	}
	switch {
	case spec.EndsAt.IsZero():
		return invalid("ends_at: is required: there are no open-ended triggers")
	case !spec.EndsAt.After(now):
		return invalid("ends_at: must be in the future")
	case spec.EndsAt.After(now.Add(e.o.MaxLifetime)):
		return invalid("ends_at: must be within %s of now (the host's limit on a trigger's life)", consent.ShowDuration(e.o.MaxLifetime))
	}
	if spec.Action.App == "" || spec.Action.Method == "" {
		return invalid("action: names its app and method")
	}
	params := spec.Action.Params
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	canon, err := jcs.Canonicalize(params)
	if err != nil || canon[0] != '{' {
		return invalid("action.params: must be a JSON object")
	}
	t.Params = canon
	c, ok := e.o.Registry.Method(spec.Action.App, spec.Action.Method)
	if !ok {
		return invalid("action: names no enabled capability of an installed app (app and method as GET /v1/capabilities lists them)")
	}
	t.Capability, t.Permission = c.ID.String(), c.Permission.String()
	t.Query = c.Cap.SideEffects.Rank() <= manifest.SideEffectRead.Rank()
	// Steps 1 to 4 of a decision: installed and working, params, trust, kind of assistant.
	// Step 5 on is the token's and the mandate's, decided at every firing.
	d := e.o.Broker.Explain(ctx, caller, broker.Request{Action: t.action(), App: t.App, Method: t.Method, Params: t.Params})
	if !d.Allowed() && d.Step >= 1 && d.Step <= 4 {
		if d.Step == 3 {
			return Trigger{}, "", fmt.Errorf("%w: action.params: %s", ErrInvalid, d.Explanation)
		}
		return Trigger{}, "", fmt.Errorf("%w: %s", ErrRefused, d.Explanation)
	}
	m, ok, err := e.o.Broker.MandateFor(ctx, c.Permission)
	switch {
	case err != nil:
		return Trigger{}, "", err
	case !ok:
		return Trigger{}, "", fmt.Errorf("%w: no mandate of the person's covers %s: a trigger is always bound to one (the mandates page)", ErrRefused, t.Permission)
	case m.Autonomy == string(manifest.AutonomyHandoff):
		return Trigger{}, "", fmt.Errorf("%w: the person keeps %s to themselves (its mandate is handoff): no trigger may take it", ErrRefused, t.Permission)
	}
	t.Mandate = m.Permission
	count := spec.Budget.Count
	if count <= 0 || count > MaxFirings {
		return invalid("budget.count: must be 1 to %d firings", MaxFirings)
	}
	if a := spec.Budget.Amount; a != nil {
		n, err := amountBound(a, t.Params)
		if err != nil {
			return Trigger{}, "", err
		}
		count = min(count, n)
		t.Amount = a
	}
	t.MaxFirings = count
	return t, words, nil
}

// amountBound checks a sum budget against the fixed params and returns the firings it
// allows: the sum's bound divided by the one amount every firing spends.
func amountBound(a *Amount, params json.RawMessage) (int64, error) {
	invalid := func(format string, args ...any) (int64, error) {
		return 0, fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	maxSum, err := a.Max.Float64()
	if err != nil || maxSum <= 0 || math.IsInf(maxSum, 0) {
		return invalid("budget.amount.max: must be a positive number")
	}
	if a.Field == "" {
		return invalid("budget.amount.field: names the action's amount param")
	}
	var m map[string]any
	if json.Unmarshal(params, &m) != nil {
		return invalid("action.params: must be a JSON object")
	}
	v, ok := m[a.Field].(float64)
	if !ok || v <= 0 {
		return invalid("budget.amount.field: the action's params hold no positive number at %s", a.Field)
	}
	n := math.Floor(maxSum/v + 1e-9)
	if n < 1 {
		return invalid("budget.amount.max: is less than one firing's amount")
	}
	return int64(min(n, MaxFirings)), nil
}

// action is the IPC action of the trigger's calls: a query when its capability changes
// nothing.
func (t Trigger) action() string {
	if t.Query {
		return "query"
	}
	return "execute"
}

// client finds a client by id, else by name.
func (e *Engine) client(ctx context.Context, ref string) (store.Client, error) {
	if ref == "" {
		return store.Client{}, store.ErrNotFound
	}
	if c, err := e.o.Store.GetClient(ctx, ref); err == nil {
		return c, nil
	}
	return e.o.Store.ClientByName(ctx, ref)
}

// eventOf finds the event type an app declares in its manifest.
func (e *Engine) eventOf(app, eventType string) (manifest.Event, bool) {
	a, ok := e.o.Registry.App(app)
	if !ok || a.Doc == nil {
		return manifest.Event{}, false
	}
	for _, ev := range a.Doc.Manifest().Events {
		if ev.EventType == eventType {
			return ev, true
		}
	}
	return manifest.Event{}, false
}

// record is the audit record of one step of trigger t: its client, action and tag.
func (e *Engine) record(t Trigger, action string) audit.Record {
	rec := audit.Record{Action: action, ClientID: t.ClientID, App: t.App, Method: t.Method, Capability: t.Capability,
		Permission: t.Permission, AuditTag: auditTag(t.ID), ConsentID: t.ConsentID, TokenID: t.TokenID, Kind: audit.KindDecision}
	if h, err := audit.ParamsHash(t.Params); err == nil {
		rec.ParamsHash = h
	}
	return rec
}

// List returns the triggers of client ("" for every client), oldest first, as shown.
func (e *Engine) List(ctx context.Context, client string) ([]View, error) {
	ts, bad, err := e.recs.list(ctx)
	if err != nil {
		return nil, err
	}
	if bad > 0 {
		e.o.Logger.Error("triggers: stored records that do not decode were left out", "count", bad)
	}
	out := make([]View, 0, len(ts))
	for _, t := range ts {
		if client != "" && t.ClientID != client {
			continue
		}
		v, err := e.view(ctx, t, false)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Get returns trigger id as shown, with its recent firings; client "" reads any client's,
// else only that client's (another's is ErrNotFound).
func (e *Engine) Get(ctx context.Context, id, client string) (View, error) {
	if !ValidID(id) {
		return View{}, ErrNotFound
	}
	t, err := e.recs.get(ctx, id)
	if err != nil {
		return View{}, err
	}
	if client != "" && t.ClientID != client {
		return View{}, ErrNotFound
	}
	return e.view(ctx, t, true)
}

// view is t as shown: no token, no secret; its budget from its token's uses.
func (e *Engine) view(ctx context.Context, t Trigger, recent bool) (View, error) {
	v := View{Trigger: t}
	v.Token, v.HookSecret = "", nil
	if t.Source.Kind == SourceWebhook {
		v.HookPath = HookPath(t.ID)
	}
	if t.TokenID != "" {
		if tok, err := e.o.Store.GetToken(ctx, t.TokenID); err == nil {
			v.Used = tok.Uses
		}
	}
	v.Left = max(t.MaxFirings-v.Used, 0)
	if t.State == StateActive && t.Source.Kind == SourceSchedule {
		if s, err := ParseSchedule(t.Source.Cron, t.Source.TimeZone); err == nil {
			from := t.Cursor
			if from.IsZero() {
				from = e.o.Now()
			}
			if n := s.Next(from); !n.IsZero() && n.Before(t.EndsAt) {
				n = n.UTC()
				v.Next = &n
			}
		}
	}
	if recent {
		fs, err := e.recs.firings(ctx, t.ID)
		if err != nil {
			return View{}, err
		}
		v.Recent = fs[:min(len(fs), KeepFirings)]
	}
	return v, nil
}

// Pause stops trigger id from firing until it is resumed: its scheduled times pass unrun,
// and its webhook and events are refused. by is who paused it, for the audit log.
func (e *Engine) Pause(ctx context.Context, id, by string) (View, error) {
	return e.change(ctx, id, by, "trigger.pause", func(t *Trigger) error {
		if t.State != StateActive {
			return fmt.Errorf("%w: only an active trigger can be paused, and it is %s", ErrState, t.State)
		}
		t.State = StatePaused
		return nil
	})
}

// Resume lets a paused trigger fire again, from now: the times that passed while it was
// paused are not run.
func (e *Engine) Resume(ctx context.Context, id, by string) (View, error) {
	return e.change(ctx, id, by, "trigger.resume", func(t *Trigger) error {
		if t.State != StatePaused {
			return fmt.Errorf("%w: only a paused trigger can be resumed, and it is %s", ErrState, t.State)
		}
		t.State, t.Cursor = StateActive, e.o.Now()
		return nil
	})
}

// Delete stops trigger id for good and removes it and its firings: its token is revoked,
// a proposal still waiting is withdrawn, and the audit log keeps its history.
func (e *Engine) Delete(ctx context.Context, id, by string) (View, error) {
	v, err := e.change(ctx, id, by, "trigger.delete", func(t *Trigger) error {
		e.halt(ctx, t, "deleted by "+by)
		return nil
	})
	if err != nil {
		return View{}, err
	}
	return v, e.forget(ctx, id)
}

// change makes one change to trigger id, recorded as the decision of by before and its
// outcome after. A change that only takes away (a pause, a delete) is made even when its
// record cannot be written; a resume is not.
func (e *Engine) change(ctx context.Context, id, by, action string, fn func(t *Trigger) error) (View, error) {
	if !ValidID(id) {
		return View{}, ErrNotFound
	}
	t, err := e.recs.get(ctx, id)
	if err != nil {
		return View{}, err
	}
	if err := fn(&t); err != nil {
		return View{}, err
	}
	rec := e.record(t, action)
	rec.ClientID, rec.Decision, rec.Result = by, audit.DecisionAllow, "success"
	rec.Explanation = action + " of " + t.ID + " by " + by
	if _, err := e.o.Audit.Append(ctx, rec); err != nil && action == "trigger.resume" {
		return View{}, fmt.Errorf("not resumed: its audit record could not be written: %w", err)
	}
	t.Updated = e.o.Now()
	if err := e.recs.put(ctx, t); err != nil {
		return View{}, err
	}
	return e.view(ctx, t, false)
}

// halt marks t stopped for why, revokes its token and withdraws a proposal still waiting;
// the caller writes t.
func (e *Engine) halt(ctx context.Context, t *Trigger, why string) {
	if t.State == StateProposed && t.ConsentID != "" && e.o.Consent != nil {
		_ = e.o.Consent.Cancel(ctx, t.ConsentID, "capgate (the trigger stopped)")
	}
	t.State, t.Stopped, t.Updated = StateStopped, why, e.o.Now()
	// A firing that waits for the person waits on nothing now: its question is withdrawn.
	if fs, err := e.recs.firings(ctx, t.ID); err == nil {
		for _, f := range fs {
			if f.State != FiringWaiting {
				continue
			}
			if f.ConsentID != "" && e.o.Consent != nil {
				_ = e.o.Consent.Cancel(ctx, f.ConsentID, "capgate (the trigger stopped)")
			}
			f.State, f.Why, f.Updated = FiringRefused, "the trigger stopped: "+why, e.o.Now()
			_ = e.recs.putFiring(ctx, f)
		}
	}
	if t.TokenID != "" {
		var err error
		if e.o.Broker != nil {
			err = e.o.Broker.Revoke(ctx, t.TokenID)
		} else {
			err = e.o.Store.Revoke(ctx, t.TokenID, e.o.Now())
		}
		if err != nil {
			e.o.Logger.Error("triggers: its token could not be revoked", "trigger", t.ID, "err", err)
		}
	}
}

// stop stops t for good for why, and records it.
func (e *Engine) stop(ctx context.Context, t *Trigger, why string) {
	if t.over() {
		return
	}
	e.halt(ctx, t, why)
	rec := e.record(*t, "trigger.stop")
	rec.Decision, rec.Code, rec.Result = audit.DecisionDeny, codeStopped, "stopped"
	rec.Explanation = "the trigger stopped for good: " + why
	if _, err := e.o.Audit.Append(ctx, rec); err != nil {
		e.o.Logger.Error("triggers: a stop could not be recorded", "trigger", t.ID, "err", err)
	}
	if err := e.recs.put(ctx, *t); err != nil {
		e.o.Logger.Error("triggers: a stop could not be written", "trigger", t.ID, "err", err)
	}
}

// Codes of the records the engine writes for what a decision did not refuse.
const (
	codeStopped = "TRIGGER_STOPPED"
	codeSkipped = "TRIGGER_SKIPPED"
)
