package store

import (
	"errors"
	"fmt"
)

// Errors makes a backend's errors: each starts with the backend's name ("sqlite: token: not
// found"), so that whoever reads one knows which store said it, then names the operation or
// the record, never a key's value (an id may be all a thief needs), and wraps the cause, so
// that the sentinels above stay testable with errors.Is.
type Errors struct {
	Name   string // the backend's: "sqlite", "postgres"
	NoRows error  // its driver's error for a query that found no row: sql.ErrNoRows, pgx.ErrNoRows
}

// NotFound is ErrNotFound for what (a record: "token", "client").
func (e Errors) NotFound(what string) error {
	return fmt.Errorf("%s: %s: %w", e.Name, what, ErrNotFound)
}

// Exists is ErrExists for what (the field that is taken: "token id").
func (e Errors) Exists(what string) error {
	return fmt.Errorf("%s: %s: %w", e.Name, what, ErrExists)
}

// Wrap is err as op (what was being done: "put token") failed with it; nil stays nil, so
// that a method may end with return e.Wrap(op, err).
func (e Errors) Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", e.Name, op, err)
}

// Row is the outcome of op's query for one row of what: nil for a row, ErrNotFound for none
// (the driver's NoRows), else the failure wrapped as Wrap does.
func (e Errors) Row(op, what string, err error) error {
	if err != nil && errors.Is(err, e.NoRows) {
		return e.NotFound(what)
	}
	return e.Wrap(op, err)
}

// Affected is the outcome of an UPDATE or DELETE of what that touched n rows: none is
// ErrNotFound.
func (e Errors) Affected(n int64, what string) error {
	if n == 0 {
		return e.NotFound(what)
	}
	return nil
}
