package a2a

import "time"

const (
	// MaxRequestBytes bounds a JSON-RPC request's body, as the IPC API bounds an envelope
	// (ipc.MaxEnvelopeBytes): a task is one capability's params, small JSON; anything larger
	// is an attack or a bug.
	MaxRequestBytes = 1 << 20
	// MaxDepth bounds the nesting of a JSON-RPC request: the IPC envelope's 32 for the
	// params, and the few levels of A2A's wrapping around them (params, message, parts, the
	// part, its data).
	MaxDepth = 40
	// MaxIDBytes bounds a task or context id a client sends: ours are UUIDs (36 bytes), and
	// a longer one names no task, so it is refused before the store is asked.
	MaxIDBytes = 64
	// MaxRunningPerClient bounds the tasks one client has running at once in one process:
	// each holds a goroutine and may hold a consent request open on the person's approval
	// page, which a client could otherwise fill.
	MaxRunningPerClient = 4
	// MaxTasksPerClient bounds the tasks kept for one client in the store; giving one more
	// forgets the oldest that is over. A client asks for the status of tasks it just gave.
	MaxTasksPerClient = 100
	// MaxBlockingWait bounds how long a blocking message/send waits for its task to be over
	// or to wait for the person, before it answers the task as it stands (the client then
	// asks with tasks/get): shorter than the usual HTTP client's timeout.
	MaxBlockingWait = 60 * time.Second
	// MaxTaskTime bounds a task's whole run, the waits for the person included (a consent
	// request lives five minutes by default): a task past it is failed, never working for
	// ever.
	MaxTaskTime = 15 * time.Minute
	// MaxConsentRounds bounds the broker calls of one task that wait for the same consent
	// request (run.call): each waits the broker's ConsentWait (two minutes by default), so
	// MaxTaskTime ends a task long before; the bound only keeps a broker that answered at
	// once from spinning.
	MaxConsentRounds = 256
	// CancelWait bounds how long tasks/cancel waits for the canceled call to end, so that it
	// answers the task's final state: a call that was already running may still complete.
	CancelWait = 5 * time.Second
	// LeaseRefresh is how often a running task's record is written again with a new lease.
	LeaseRefresh = 10 * time.Second
	// LeaseTTL is how long a lease vouches for a running task: a record found not over whose
	// lease has run out belongs to a process that ended (a crash, a restart) and is reported
	// failed. Three refreshes, so that one slow write does not fail a task that runs.
	LeaseTTL = 3 * LeaseRefresh
	// StoreTimeout bounds one write of a task's record, which is made on a context of its
	// own: the task's ends when it is canceled, and its final state must still be recorded.
	StoreTimeout = 10 * time.Second
)
