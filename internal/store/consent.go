package store

import (
	"errors"
	"fmt"
	"time"
)

// ConsentColumns are a consent request's columns in both schemas, in the order ScanConsent
// reads them.
const ConsentColumns = `id, client_id, kind, payload, state, created, expires, answered, answered_by, wording`

// ConsentRow is a Consent as its columns hold it: times as TimeCol has them, Payload never
// nil.
type ConsentRow struct {
	ID, ClientID, Kind         string
	Payload                    []byte
	State                      string
	Created, Expires, Answered NullInt
	AnsweredBy, Wording        string
}

// Args is r's columns in ConsentColumns order, as the arguments of a statement of n's driver.
func (r ConsentRow) Args(n NullTypes) []any {
	return []any{r.ID, r.ClientID, r.Kind, r.Payload, r.State, n.IntArg(r.Created), n.IntArg(r.Expires),
		n.IntArg(r.Answered), r.AnsweredBy, r.Wording}
}

// ConsentRowOf checks c as PutConsent takes it and returns its columns: State one of the
// Consent* states, every time one TimeCol holds.
func ConsentRowOf(c Consent) (ConsentRow, error) {
	if !consentState(c.State) {
		return ConsentRow{}, errors.New("consent.State: not a consent state")
	}
	var ts times
	r := ConsentRow{
		ID: c.ID, ClientID: c.ClientID, Kind: c.Kind, Payload: Blob(c.Payload), State: c.State,
		Created:    ts.col("consent.Created", c.Created),
		Expires:    ts.col("consent.Expires", c.Expires),
		Answered:   ts.col("consent.Answered", c.Answered),
		AnsweredBy: c.AnsweredBy, Wording: c.Wording,
	}
	if ts.err != nil {
		return ConsentRow{}, ts.err
	}
	return r, nil
}

// ScanConsent reads a row of ConsentColumns.
func ScanConsent(sc Scanner, n NullTypes) (Consent, error) {
	var r ConsentRow
	if err := sc.Scan(&r.ID, &r.ClientID, &r.Kind, &r.Payload, &r.State, n.Int(&r.Created), n.Int(&r.Expires),
		n.Int(&r.Answered), &r.AnsweredBy, &r.Wording); err != nil {
		return Consent{}, err
	}
	return Consent{
		ID: r.ID, ClientID: r.ClientID, Kind: r.Kind, Payload: r.Payload, State: r.State,
		Created: r.Created.Time(), Expires: r.Expires.Time(), Answered: r.Answered.Time(),
		AnsweredBy: r.AnsweredBy, Wording: r.Wording,
	}, nil
}

// AnswerCol checks AnswerConsent's arguments and returns at as a column: state must be an
// answer (a Consent* state other than pending), at a time TimeCol holds.
func AnswerCol(state string, at time.Time) (NullInt, error) {
	if state == ConsentPending || !consentState(state) {
		return NullInt{}, errors.New("state: not an answer")
	}
	return TimeCol("at", at)
}

// Answerable is AnswerConsent's rule for a request found in state, expiring at expires
// (NULL: never), answered at at: only a pending request that has not expired at at (at its
// Expires or after, it is expired though ExpireConsents has not marked it yet) may be
// answered; any other is AnswerConflict's error.
func Answerable(state string, expires NullInt, at time.Time) error {
	if state == ConsentPending && !Expired(expires, at) {
		return nil
	}
	return AnswerConflict(state, expires, at)
}

// AnswerConflict is the ErrConflict of an answer that did not take, for a request last seen
// in state, saying why: expired, when it was pending but expired at at; else no longer
// pending (answered, cancelled or expired elsewhere, perhaps since it was seen).
func AnswerConflict(state string, expires NullInt, at time.Time) error {
	if state == ConsentPending && Expired(expires, at) {
		return fmt.Errorf("expired: %w", ErrConflict)
	}
	return fmt.Errorf("no longer pending: %w", ErrConflict)
}

func consentState(s string) bool {
	switch s {
	case ConsentPending, ConsentApproved, ConsentDenied, ConsentExpired, ConsentCancelled:
		return true
	}
	return false
}
