package store

import "fmt"

// Errors makes a backend's errors: each starts with the backend's name ("sqlite: token: not
// found"), so that whoever reads one knows which store said it, then names the operation or
// the record, never a key's value (an id may be all a thief needs), and wraps the cause, so
// that the sentinels above stay testable with errors.Is.
type Errors string

// NotFound is ErrNotFound for what (a record: "token", "client").
func (e Errors) NotFound(what string) error {
	return fmt.Errorf("%s: %s: %w", string(e), what, ErrNotFound)
}

// Exists is ErrExists for what (the field that is taken: "token id").
func (e Errors) Exists(what string) error {
	return fmt.Errorf("%s: %s: %w", string(e), what, ErrExists)
}

// Wrap is err as op (what was being done: "put token") failed with it; nil stays nil, so
// that a method may end with return e.Wrap(op, err).
func (e Errors) Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", string(e), op, err)
}

// Affected is the outcome of an UPDATE or DELETE of what that touched n rows: none is
// ErrNotFound.
func (e Errors) Affected(n int64, what string) error {
	if n == 0 {
		return e.NotFound(what)
	}
	return nil
}
