// Package consent is capgate's side of the conversation with the person: the questions it
// asks before a risky call or a token is allowed, the person's answers, and the
// delayed-commit window of an irreversible call.
//
// A question is a [Request] (who asks, what for, with which params, at which risk, and
// whether it can be undone), kept in the store as a store.Consent in state pending until
// the person approves, denies or cancels it on the approval surface (the CLI
// `capgate approvals`, later the web page) or it expires. An unanswered request expires
// after [Options].TTL and counts as denied. Without an approval surface every request is
// denied at once: capgate fails closed rather than act without asking.
//
// Answers are compare-and-set in the store, so of two answers given at once, by goroutines
// or by processes sharing the database, exactly one wins and the others get
// [ErrNotPending]. [Service.Wait] wakes at once for answers given through the same Service
// and within [Options].Poll for answers given elsewhere.
//
// What the person reads is [Describe]'s [Details]: the Request and what it means in words,
// the same on the approval page and in `capgate approvals --json`. A token request says
// the token's uses, lifetime and expiry, its constraints, and that it can be revoked; a call
// says whether it can be undone and for how long, a read that it has nothing to undo; and
// every text an agent, an app or a tool server supplied is run through [Lookalikes], the one
// look-alike check, with what it finds named by field. Durations are said by
// [ShowDuration] ("23 h 59 min", "29 days 4 h"), times by [ShowDate] and [ShowWhen].
//
// Approving with remember records the person's agreement for later: a store.Mandate with
// autonomy act_if_agreed that names the request, the wording agreed to and when. It is
// written only for a request that carries a Wording, and only after the approval won.
//
// [Service.Commit] is the delayed-commit window: it records a "commit" request the person
// can cancel, waits out the window and then marks it approved by
// "capgate: window elapsed".
//
// Decisions are values: [Service.Wait] returns the answered request and its state, and an
// error only when something broke. Payloads never hold secrets: the broker passes params
// already redacted, and a Request has no place for a client key or a token.
package consent
