// Package trigger is capgate's triggers: "when X happens, do Y", each a record bound to one
// of the person's mandates, with an event source, a CEL condition over the event, one
// action with a target fixed when it is proposed, a budget and a required end date.
//
// An agent proposes a trigger (Engine.Propose); the proposal is a consent request of kind
// trigger that the person answers on the approval page, where it is shown in plain words.
// Once approved, the trigger holds a token capgate issued under the person's approval
// (broker.IssueAgreed): its grant is the action's permission, its uses the count budget and
// its expiry the end date. The token never leaves capgate.
//
// Every firing takes a fresh decision through the broker, as the trigger's client, under
// the mandates and revocations of that moment: only an allow runs, an ask opens a consent
// request and the firing waits for it, a deny is recorded. A firing is a row in the store
// with a unique key (the trigger's id and the scheduled time, or the event's id), created
// before anything is decided (store.State's CreateState): on any number of replicas one
// process takes each firing, and after a crash the row says what was begun, so that a
// firing is neither lost nor repeated. The firing's id is the call's id, the same at every
// attempt, which a capability whose idempotency is keyed takes as its key.
//
// The event sources are a schedule (cron in a time zone, right across daylight-saving
// changes, schedule.go), a webhook signed with a per-trigger secret (hook.go), and an
// app's event declared in its manifest (Engine.Emit). An event's payload is untrusted: it
// reaches the condition and the audit record, never the action's params.
package trigger
