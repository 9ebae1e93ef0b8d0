package a2a

import (
	"context"
	"fmt"
	"iter"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
)

// requests is capgate's own a2asrv.RequestHandler, which the SDK's JSON-RPC binding calls
// after serveRPC authenticated the caller. It is not the SDK's default handler, which keeps
// a task's messages and artifacts and answers them: here a task is its state, and nothing
// of what it ran or returned is kept or shown.
type requests struct{ h *Handler }

var _ a2asrv.RequestHandler = requests{}

// OnSendMessage gives a task: the one capability of the message's data part, which
// serveRPC read (parseSend), run as the caller. A blocking request (any whose
// configuration.blocking is not false) waits for the task to be over or to wait for the
// person, at most MaxBlockingWait; one that says blocking false is answered at once.
func (q requests) OnSendMessage(ctx context.Context, p *a2asdk.MessageSendParams) (a2asdk.SendMessageResult, error) {
	caller, ok := callerOf(ctx)
	t, hasTask := ctx.Value(taskKey{}).(task)
	if !ok || !hasTask {
		return nil, a2asdk.ErrInternalError // serveRPC puts both there
	}
	if p.Config != nil && p.Config.PushConfig != nil {
		return nil, fmt.Errorf("%w: params.configuration.pushNotificationConfig: push notifications are not served", a2asdk.ErrPushNotificationNotSupported)
	}
	r, err := q.h.start(ctx, caller, t)
	if err != nil {
		return nil, err
	}
	// Blocking unless the request says blocking false: the SDK's client sends no
	// configuration when it blocks, and its server takes none as blocking.
	wait := MaxBlockingWait
	if p.Config != nil && p.Config.Blocking != nil && !*p.Config.Blocking {
		wait = 0
	}
	rec := q.h.wait(ctx, r, func(rec record) bool {
		return rec.over() || rec.State == a2asdk.TaskStateAuthRequired
	}, wait)
	return rec.task(), nil
}

// OnGetTask answers the state of one of the caller's tasks. The query's historyLength is
// read by nobody: a task has no history to show.
func (q requests) OnGetTask(ctx context.Context, query *a2asdk.TaskQueryParams) (*a2asdk.Task, error) {
	caller, ok := callerOf(ctx)
	if !ok {
		return nil, a2asdk.ErrInternalError
	}
	rec, _, err := q.h.lookup(ctx, caller, string(query.ID))
	if err != nil {
		return nil, err
	}
	return rec.task(), nil
}

// OnCancelTask cancels one of the caller's running tasks: its call's context ends, and the
// answer is the state it ends in, within CancelWait (completed when the call had already
// run). A task that is over is not cancelable, nor one that runs in another process.
func (q requests) OnCancelTask(ctx context.Context, p *a2asdk.TaskIDParams) (*a2asdk.Task, error) {
	caller, ok := callerOf(ctx)
	if !ok {
		return nil, a2asdk.ErrInternalError
	}
	rec, r, err := q.h.lookup(ctx, caller, string(p.ID))
	switch {
	case err != nil:
		return nil, err
	case rec.over():
		return nil, fmt.Errorf("%w: the task is %s", a2asdk.ErrTaskNotCancelable, rec.State)
	case r == nil:
		return nil, fmt.Errorf("%w: the task runs in another capgate process", a2asdk.ErrTaskNotCancelable)
	}
	q.h.mu.Lock()
	over := r.rec.over()
	r.canceled = true
	q.h.mu.Unlock()
	if over {
		return nil, fmt.Errorf("%w: the task is over", a2asdk.ErrTaskNotCancelable)
	}
	r.cancel()
	select {
	case <-r.done:
	case <-ctx.Done():
	case <-time.After(CancelWait):
	}
	q.h.mu.Lock()
	rec = r.rec
	q.h.mu.Unlock()
	return rec.task(), nil
}

// errNoStreaming answers the streaming methods: the card says streaming is false, and a
// task's states are asked for with tasks/get.
var errNoStreaming = fmt.Errorf("%w: streaming is not served: give the task with message/send and ask with tasks/get", a2asdk.ErrUnsupportedOperation)

func (requests) OnResubscribeToTask(context.Context, *a2asdk.TaskIDParams) iter.Seq2[a2asdk.Event, error] {
	return func(yield func(a2asdk.Event, error) bool) { yield(nil, errNoStreaming) }
}

func (requests) OnSendMessageStream(context.Context, *a2asdk.MessageSendParams) iter.Seq2[a2asdk.Event, error] {
	return func(yield func(a2asdk.Event, error) bool) { yield(nil, errNoStreaming) }
}

// errNoPush answers the push-notification methods: the card says pushNotifications is
// false, and capgate calls no URL a client names.
var errNoPush = fmt.Errorf("%w: push notifications are not served", a2asdk.ErrPushNotificationNotSupported)

func (requests) OnGetTaskPushConfig(context.Context, *a2asdk.GetTaskPushConfigParams) (*a2asdk.TaskPushConfig, error) {
	return nil, errNoPush
}

func (requests) OnListTaskPushConfig(context.Context, *a2asdk.ListTaskPushConfigParams) ([]*a2asdk.TaskPushConfig, error) {
	return nil, errNoPush
}

func (requests) OnSetTaskPushConfig(context.Context, *a2asdk.TaskPushConfig) (*a2asdk.TaskPushConfig, error) {
	return nil, errNoPush
}

func (requests) OnDeleteTaskPushConfig(context.Context, *a2asdk.DeleteTaskPushConfigParams) error {
	return errNoPush
}

// OnGetExtendedAgentCard: there is no card beyond the public one, which holds all there is.
func (requests) OnGetExtendedAgentCard(context.Context) (*a2asdk.AgentCard, error) {
	return nil, a2asdk.ErrAuthenticatedExtendedCardNotConfigured
}
