package token

import (
	"errors"
	"fmt"
)

// Errors callers test with errors.Is. Each is wrapped with the field or rule at fault, never
// the value.
var (
	// ErrMalformed: the wire form is not one strict, canonical token.
	ErrMalformed = errors.New("malformed token")
	// ErrBadSignature: the token's signature is not capgate's over its canonical form.
	ErrBadSignature = errors.New("token signature does not verify")
	// ErrExpired: the time is at or after expires_at.
	ErrExpired = errors.New("token has expired")
	// ErrNotYetValid: the time is before issued_at.
	ErrNotYetValid = errors.New("token is not yet valid")
	// ErrWrongClient: the token is bound to another client.
	ErrWrongClient = errors.New("token is bound to another client")
	// ErrInvalid: the token breaks an issue-time rule (Validate).
	ErrInvalid = errors.New("invalid token")
	// ErrNotNarrower: a derived token would grant something its parent does not.
	ErrNotNarrower = errors.New("derived token is not within its parent")
)

func malformed(rule string) error { return fmt.Errorf("%w: %s", ErrMalformed, rule) }

func invalid(field, rule string) error { return fmt.Errorf("%w: %s: %s", ErrInvalid, field, rule) }

func notNarrower(field, rule string) error {
	return fmt.Errorf("%w: %s: %s", ErrNotNarrower, field, rule)
}
