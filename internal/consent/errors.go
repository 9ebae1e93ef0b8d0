package consent

import "errors"

// Errors callers test with errors.Is.
var (
	// ErrNotPending is an answer to a request that is no longer pending: answered,
	// cancelled or expired, here or in another process, or past its expiry though not yet
	// swept. Of concurrent answers, every one but the winner gets it.
	ErrNotPending = errors.New("consent: request is no longer pending")

	// ErrCancelled is a delayed commit that the person cancelled within its window.
	ErrCancelled = errors.New("consent: cancelled")

	// ErrDenied is a delayed commit that was denied: by the person, or at once because
	// there is no approval surface.
	ErrDenied = errors.New("consent: denied")

	// ErrExpired is a delayed commit whose request expired before capgate could mark it
	// committed; the call does not run.
	ErrExpired = errors.New("consent: expired")

	// ErrInvalidID is a request id that is not "req_" followed by 24 lowercase hex digits.
	// It is refused before the store is asked.
	ErrInvalidID = errors.New("consent: invalid request id")

	// ErrInvalidRequest is a Request, an answerer or an option that breaks a rule; the
	// wrapping error names the field and the rule, never the value.
	ErrInvalidRequest = errors.New("consent: invalid request")

	// ErrCannotRemember is an Approve with remember of a request that carries no Wording or
	// no Permission: there is no agreement to record. Nothing is answered; approve it
	// without remember instead.
	ErrCannotRemember = errors.New("consent: request has no wording or permission to remember")
)
