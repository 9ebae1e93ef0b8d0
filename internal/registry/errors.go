package registry

import "errors"

// Errors callers test with errors.Is. A manifest that breaks the format's rules is refused
// with manifest.Problems instead (test with errors.As).
var (
	// ErrNotFound is an app the registry does not know.
	ErrNotFound = errors.New("registry: no such app")
	// ErrAliasTaken is an alias that another app already has.
	ErrAliasTaken = errors.New("registry: alias taken by another app")
	// ErrInvalidAlias is an alias that breaks the grammar ^[a-z][a-z0-9_-]{0,31}$.
	ErrInvalidAlias = errors.New("registry: invalid alias")
	// ErrStoredAppMismatch is a stored record whose manifest names another app_id than the
	// record's key: a corrupt or tampered store, never indexed.
	ErrStoredAppMismatch = errors.New("registry: stored manifest names another app_id")
)
