package policy

import (
	"time"

	"github.com/capgate/capgate/manifest"
)

// Outcome is what happens to a call.
//
// The zero Outcome, and any value other than Allow, Ask and Handoff, means deny: code that
// acts on a Decision tests for the outcome it is about to carry out (see Decision.Allowed),
// never for Deny.
type Outcome string

// The outcomes of a decision.
const (
	// Deny: the call does not run, and the caller gets Decision.Code.
	Deny Outcome = "deny"
	// Allow: the call runs (after Decision.DelayedCommit, when set).
	Allow Outcome = "allow"
	// Ask: the call does not run yet; the broker creates a consent request of
	// Decision.ConsentKind and answers CONSENT_REQUIRED.
	Ask Outcome = "ask"
	// Handoff: nothing runs; the broker returns what was prepared and answers HANDOFF.
	Handoff Outcome = "handoff"
)

// The error codes a decision carries: the token document's, and those capgate adds where none
// fits. An allowed call carries none.
const (
	CodeAppNotFound      = "APP_NOT_FOUND"
	CodeMethodNotFound   = "METHOD_NOT_FOUND"
	CodeInvalidToken     = "INVALID_TOKEN"
	CodeTokenExpired     = "TOKEN_EXPIRED"
	CodeTokenExhausted   = "TOKEN_EXHAUSTED"
	CodeInvalidRequest   = "INVALID_REQUEST"
	CodePermissionDenied = "PERMISSION_DENIED"
	CodeCapabilityDenied = "CAPABILITY_DENIED"
	CodeConsentRequired  = "CONSENT_REQUIRED"
	CodeConsentDenied    = "CONSENT_DENIED"
	CodeHandoff          = "HANDOFF"
)

// ConsentCall is the kind of consent request that asks the person about one call, with its
// params, rather than about issuing a token.
const ConsentCall = "call"

// Decision is the answer to one call. The zero Decision is a deny with no code; Decide always
// fills in Outcome, Code, Explanation, Step and Trace.
type Decision struct {
	// Outcome is what happens to the call.
	Outcome Outcome
	// Code is the error code of a call that does not run (one of the Code constants), ""
	// when it is allowed.
	Code string
	// Explanation says why, in plain words, for the person and the agent. It never holds a
	// token, a key, a param value or other free text of the input.
	Explanation string
	// Step is the step of DESIGN.md's "Deciding a call" that decided: 1 to 5 for a refusal
	// there, 7 for an outcome of the autonomy a call ends with (step 6 only narrows), 8 for an
	// allowed call given a delayed-commit window.
	Step int
	// Trace is each step's finding, in order, for `capgate explain`. Like Explanation it
	// holds no secrets and no param values.
	Trace []string

	// UseToken: the call is allowed under a token, and the broker must take one of its uses
	// (atomically, in the store) before the call runs; when none is left the call is refused
	// with TOKEN_EXHAUSTED after all.
	UseToken bool
	// ConsentKind is the kind of consent request to create when Outcome is Ask (ConsentCall),
	// "" otherwise.
	ConsentKind string
	// DelayedCommit is how long an allowed irreversible call waits, cancellable by the
	// person, before it runs; 0 means it runs at once.
	DelayedCommit time.Duration
	// Autonomy is the autonomy the call ended with after step 6, "" when a step before it
	// refused.
	Autonomy manifest.Autonomy
}

// Allowed reports whether the call may run. It is false for the zero Decision.
func (d Decision) Allowed() bool { return d.Outcome == Allow }
