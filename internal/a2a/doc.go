// Package a2a is capgate's Agent2Agent (A2A v0.3) front: capgate as an agent that other
// assistants call, beside the IPC API (internal/ipc) and MCP (internal/mcp). Another
// assistant gets only two context-free skills: give a task (run one capability of capgate)
// and ask for a task's status, which carries the task's state and nothing of its content.
//
// Serving. [Handler] serves the agent card at [CardPath] (GET, /.well-known/agent-card.json,
// without a key: it holds nothing private) and the JSON-RPC binding at [Path] (POST, /a2a).
// The card names the two skills ([SkillGiveTask], [SkillTaskStatus]), JSONRPC as the
// transport, streaming and push notifications as false, and an HTTP bearer scheme as
// required; its url is [Path] under Options.BaseURL, else under the scheme and Host the card
// was asked by. Every JSON-RPC request is authenticated before anything else: without an
// Authorization header, or with a key capgate does not know, it is 401 with
// WWW-Authenticate: Bearer realm="capgate". Its body is then read within [MaxRequestBytes]
// and strictly (no duplicate members, valid UTF-8, at most [MaxDepth] levels), and handed to
// the SDK's JSON-RPC binding (a2asrv.NewJSONRPCHandler) around capgate's own
// a2asrv.RequestHandler, never the SDK's default one, which keeps and answers a task's
// messages and artifacts.
//
// Giving a task (message/send). The message is exactly one data part whose data is
// {"capability": "<capability id>", "params": {...}}, or as the IPC envelope says it,
// {"app": "...", "method": "...", "params": {...}}; params may be left out for {}. Anything
// else is JSON-RPC invalid params (-32602) naming the field path and the rule: a member the
// data does not define, a missing capability, two parts, a text or file part (a task names a
// capability: capgate reads no words as a call), a taskId (a task takes one message). The
// task gets a random id and runs detached from the request, through broker.Broker.Call as
// the calling client, under that client's grant: read-only by default, since a call that
// writes or acts needs a token or the person's consent, which this front never supplies.
// Its params are the canonical JSON of what the client sent. A request waits, at most
// [MaxBlockingWait], until the task is over or waits for the person, unless its
// configuration says blocking false (as the SDK's server, capgate takes a request without
// one as blocking); one that does is answered at once, submitted or working.
//
// States. submitted, then working; auth-required while the call waits for the person's
// consent (the broker's OnConsent), for as long as the consent request lives (the task waits
// for the same request again when the broker's own wait ends, and never asks twice); then
// one final state: completed (the call ran and succeeded), rejected (it was refused: denied,
// consent denied or expired, an unknown capability, params its schema refuses), failed (it
// was allowed and failed, or its run was cut short: [MaxTaskTime], capgate closing, a
// process that ended) or canceled (tasks/cancel ended its call). Every answer, of
// message/send, tasks/get and tasks/cancel, is an A2A task with only id, contextId, kind and
// status {state, timestamp}: no history, no artifacts, no status message, no metadata. What
// a capability returns never goes back to the other assistant.
//
// Tasks are the client's own. tasks/get and tasks/cancel find only the calling client's
// tasks: another client's task id and an unknown one are both TaskNotFound (-32001), so that
// ids cannot be probed. A task that is over is not cancelable (-32002). message/stream and
// tasks/resubscribe are UnsupportedOperation (-32004), the push-notification methods
// PushNotificationNotSupported (-32003), the authenticated extended card
// AuthenticatedExtendedCardNotConfigured (-32007).
//
// Persistence. Tasks are kept in the store's app state under [StateApp], by client and
// task id, with their state only (record), so that tasks/get answers on any replica and
// after a restart. A running task's record carries its process and a lease the process
// renews every [LeaseRefresh]; a record found not over whose process is this one (which
// knows all its runs) or whose lease ran out ([LeaseTTL]) was interrupted, and is reported
// and written as failed, never working for ever. At most [MaxRunningPerClient] tasks run at
// once per client in one process, and [MaxTasksPerClient] are kept per client: giving one
// more forgets the oldest that is over.
//
// The gate. Every new endpoint passes the evaluation gate before it opens: the gateway runs
// [SelfTest] against the handler in-process when it builds its routes ([Gate]), and mounts
// the handler at [Path] and [CardPath] only when it passes; otherwise both answer 503 "not
// working right now", and the gateway logs why.
package a2a
