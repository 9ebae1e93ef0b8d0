package a2a

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/capgate/capgate/client/wire"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/manifest"
)

// run is a task running in this process. Its goroutine (Handler.run, started by Options.Go)
// alone writes its record to the store, so that the writes of one task never race.
type run struct {
	key    runKey
	caller broker.Caller
	req    broker.Request
	ctx    context.Context // the call's: ends at tasks/cancel, MaxTaskTime, or the host closing
	cancel context.CancelFunc
	// dirty says that rec changed outside the goroutine (the broker's OnConsent, which
	// must not block on the store): the goroutine writes it.
	dirty chan struct{}
	done  chan struct{} // closed once the run ended and its final state was written

	// Guarded by Handler.mu.
	rec      record
	canceled bool          // tasks/cancel asked
	changed  chan struct{} // closed at every change of rec, then replaced
}

// Tasks refused before they start.
var (
	errBusy = fmt.Errorf("%w: the client has %d tasks running: ask for their status, and give this task when one is over",
		a2asdk.ErrServerError, MaxRunningPerClient)
	errClosing = fmt.Errorf("%w: capgate is closing", a2asdk.ErrServerError)
)

// start creates the task t gives for caller, records it in the store (submitted), and runs
// it on a goroutine of Options.Go. The run is in h.runs from before its record exists until
// after its final state is written, so that a task is always found in one or the other.
func (h *Handler) start(ctx context.Context, caller broker.Caller, t task) (*run, error) {
	now := h.o.Now()
	rec := record{ID: string(a2asdk.NewTaskID()), ContextID: t.ContextID, State: a2asdk.TaskStateSubmitted, At: now, Created: now,
		Runner: h.instance, Lease: now.Add(LeaseTTL)}
	if rec.ContextID == "" {
		rec.ContextID = a2asdk.NewContextID()
	}
	rctx, cancel := context.WithTimeout(context.Background(), MaxTaskTime)
	r := &run{
		key: runKey{caller.ClientID, rec.ID}, caller: caller, ctx: rctx, cancel: cancel,
		req: broker.Request{
			RequestID: "a2a-" + rec.ID, Action: h.action(t), App: t.App, Method: t.Method,
			Params: t.Params, ParamsValue: t.ParamsValue,
			// A task that ends while it waits for the person (cancelled, out of time,
			// capgate closing) is never asked again: its question is withdrawn.
			WithdrawOnCancel: true,
		},
		dirty: make(chan struct{}, 1), done: make(chan struct{}), rec: rec, changed: make(chan struct{}),
	}
	h.mu.Lock()
	n := 0
	for k := range h.runs {
		if k.client == caller.ClientID {
			n++
		}
	}
	if n >= MaxRunningPerClient {
		h.mu.Unlock()
		cancel()
		return nil, errBusy
	}
	h.runs[r.key] = r
	h.mu.Unlock()
	forget := func() {
		h.mu.Lock()
		delete(h.runs, r.key)
		h.mu.Unlock()
		cancel()
	}
	running := func(id string) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		_, ok := h.runs[runKey{caller.ClientID, id}]
		return ok
	}
	if err := h.recs.room(ctx, caller.ClientID, h.instance, now, running); err != nil {
		forget()
		if errors.Is(err, errFull) {
			return nil, err
		}
		h.o.Logger.Error("a2a: making room for a task", "client", caller.ClientID, "err", err)
		return nil, a2asdk.ErrInternalError
	}
	if err := h.recs.create(ctx, caller.ClientID, rec); err != nil {
		forget()
		h.o.Logger.Error("a2a: recording a task", "client", caller.ClientID, "err", err)
		return nil, a2asdk.ErrInternalError
	}
	if !h.o.Go(func(life context.Context) { h.run(life, r) }) {
		h.finish(r, a2asdk.TaskStateFailed, broker.Result{})
		return nil, errClosing
	}
	return r, nil
}

// action is the IPC action of the task's call, for its audit record: a query when its
// capability declares no side effect above read, an execute otherwise (or when it is not
// found: the broker refuses it then).
func (h *Handler) action(t task) string {
	if h.o.Registry != nil {
		if c, ok := h.o.Registry.Method(t.App, t.Method); ok && c.Cap != nil && c.Cap.SideEffects.Rank() <= manifest.SideEffectRead.Rank() {
			return wire.ActionQuery
		}
	}
	return wire.ActionExecute
}

// run is the task's goroutine: working, the call (auth-required while it waits for the
// person), its final state. It renews the record's lease every LeaseRefresh while the call
// runs, and returns once the final state is written.
func (h *Handler) run(life context.Context, r *run) {
	stop := context.AfterFunc(life, r.cancel)
	defer stop()
	h.setState(r, a2asdk.TaskStateWorking) // written by the loop below, as every change is
	result := make(chan broker.Result, 1)
	go func() { result <- h.call(r) }()
	tick := time.NewTicker(LeaseRefresh)
	defer tick.Stop()
	for {
		select {
		case res := <-result:
			h.finish(r, h.outcome(r, res), res)
			return
		case <-r.dirty:
			h.persist(r)
		case <-tick.C:
			h.persist(r)
		}
	}
}

// call runs the task's call through the broker as its client. When the broker stops
// waiting for the person while the consent request is still pending, the call waits for
// that same request again (Request.Consent), so that the task waits as long as the request
// lives (it expires as denied) or MaxTaskTime, never asking the person twice.
func (h *Handler) call(r *run) broker.Result {
	req := r.req
	req.OnConsent = func(string) { h.setState(r, a2asdk.TaskStateAuthRequired) }
	var res broker.Result
	for range MaxConsentRounds {
		res = h.o.Broker.Call(r.ctx, r.caller, req)
		if res.Code != policy.CodeConsentRequired || res.Decision.Outcome != policy.Ask || res.ConsentID == "" || r.ctx.Err() != nil {
			break
		}
		req.Consent = res.ConsentID
	}
	return res
}

// outcome is the final state of a run whose call answered res: completed when the call
// ran and succeeded (even when a cancel came too late to stop it: it ran), canceled when
// tasks/cancel stopped it, failed when it was allowed and then failed, or its run was cut
// short (MaxTaskTime, the host closing), and rejected when it was refused (a decision of
// deny, a consent denied or expired, an unknown capability, params its schema refuses).
func (h *Handler) outcome(r *run, res broker.Result) a2asdk.TaskState {
	h.mu.Lock()
	canceled := r.canceled
	h.mu.Unlock()
	switch {
	case res.OK():
		return a2asdk.TaskStateCompleted
	case canceled:
		return a2asdk.TaskStateCanceled
	case r.ctx.Err() != nil, res.Decision.Allowed():
		return a2asdk.TaskStateFailed
	}
	return a2asdk.TaskStateRejected
}

// setState sets the run's state, unless it is over, and tells its goroutine to write it.
// It does not block: the broker calls it from OnConsent.
func (h *Handler) setState(r *run, s a2asdk.TaskState) {
	h.mu.Lock()
	if r.rec.over() || r.rec.State == s {
		h.mu.Unlock()
		return
	}
	r.rec.State, r.rec.At = s, h.o.Now()
	close(r.changed)
	r.changed = make(chan struct{})
	h.mu.Unlock()
	select {
	case r.dirty <- struct{}{}:
	default: // a write is due already
	}
}

// persist writes the run's record as it stands, with a new lease while it is not over.
func (h *Handler) persist(r *run) {
	h.mu.Lock()
	rec := r.rec
	h.mu.Unlock()
	if !rec.over() {
		rec.Runner, rec.Lease = h.instance, h.o.Now().Add(LeaseTTL)
	}
	if err := h.recs.put(r.ctx, r.key.client, rec); err != nil {
		h.o.Logger.Warn("a2a: writing a task's state", "client", r.key.client, "task", rec.ID, "err", err)
	}
}

// finish gives the run its final state s, writes it, and only then lets the run go from
// h.runs, so that a tasks/get never finds neither. One line is logged per task: who, what,
// the state, the broker's code and the call's id; never params or a result.
func (h *Handler) finish(r *run, s a2asdk.TaskState, res broker.Result) {
	h.mu.Lock()
	r.rec.State, r.rec.At, r.rec.Runner, r.rec.Lease = s, h.o.Now(), "", time.Time{}
	h.mu.Unlock()
	h.persist(r)
	h.mu.Lock()
	delete(h.runs, r.key)
	close(r.changed)
	r.changed = make(chan struct{})
	h.mu.Unlock()
	r.cancel()
	close(r.done)
	h.o.Logger.LogAttrs(context.Background(), slog.LevelDebug, "a2a task", slog.String("client", r.key.client),
		slog.String("task", r.key.id), slog.String("app", r.req.App), slog.String("method", r.req.Method),
		slog.String("state", string(s)), slog.String("code", res.Code), slog.String("call_id", res.CallID))
}

// wait waits until the run's record satisfies until, ctx ends or max has passed, and
// returns the record as it then stands.
func (h *Handler) wait(ctx context.Context, r *run, until func(record) bool, max time.Duration) record {
	timer := time.NewTimer(max)
	defer timer.Stop()
	for {
		h.mu.Lock()
		rec, ch := r.rec, r.changed
		h.mu.Unlock()
		if until(rec) {
			return rec
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return rec
		case <-timer.C:
			return rec
		}
	}
}

// lookup finds the caller's task id: running here, else in the store. Another client's task
// and an unknown one are both a2a's ErrTaskNotFound, so that ids cannot be probed. A record
// that stands for a run that ended unsaid (record.interrupted) is failed, and written so.
func (h *Handler) lookup(ctx context.Context, caller broker.Caller, id string) (record, *run, error) {
	if !isID(id) {
		return record{}, nil, a2asdk.ErrTaskNotFound
	}
	k := runKey{caller.ClientID, id}
	h.mu.Lock()
	r, ok := h.runs[k]
	var rec record
	if ok {
		rec = r.rec
	}
	h.mu.Unlock()
	if ok {
		return rec, r, nil
	}
	rec, err := h.recs.get(ctx, caller.ClientID, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return record{}, nil, a2asdk.ErrTaskNotFound
	case err != nil:
		h.o.Logger.Error("a2a: reading a task", "client", caller.ClientID, "err", err)
		return record{}, nil, a2asdk.ErrInternalError
	}
	if now := h.o.Now(); rec.interrupted(h.instance, now) {
		rec.State, rec.At, rec.Runner, rec.Lease = a2asdk.TaskStateFailed, now, "", time.Time{}
		if err := h.recs.put(ctx, caller.ClientID, rec); err != nil {
			h.o.Logger.Warn("a2a: recording an interrupted task as failed", "client", caller.ClientID, "task", id, "err", err)
		}
	}
	return rec, nil, nil
}
