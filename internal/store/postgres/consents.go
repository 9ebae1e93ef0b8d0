package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/capgate/capgate/internal/store"
)

const consentColumns = `id, client_id, kind, payload, state, created, expires, answered, answered_by, wording`

// PutConsent records a consent request; a taken ID is ErrExists.
func (s *Store) PutConsent(ctx context.Context, c store.Consent) error {
	if !validConsentState(c.State) {
		return errors.New("postgres: consent.State is not a consent state")
	}
	var ts times
	created := ts.arg("consent.Created", c.Created)
	expires := ts.arg("consent.Expires", c.Expires)
	answered := ts.arg("consent.Answered", c.Answered)
	if ts.err != nil {
		return ts.err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO consents (`+consentColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.ID, c.ClientID, c.Kind, blobArg(c.Payload), c.State, created, expires, answered,
		c.AnsweredBy, c.Wording)
	if isUnique(err) {
		return exists("consent id")
	}
	if err != nil {
		return fmt.Errorf("postgres: put consent: %w", err)
	}
	return nil
}

// GetConsent returns the consent request with the id.
func (s *Store) GetConsent(ctx context.Context, id string) (store.Consent, error) {
	c, err := scanConsent(s.pool.QueryRow(ctx, `SELECT `+consentColumns+` FROM consents WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Consent{}, notFound("consent")
	}
	if err != nil {
		return store.Consent{}, fmt.Errorf("postgres: get consent: %w", err)
	}
	return c, nil
}

// AnswerConsent moves a pending request to state with one compare-and-set statement. A
// request no longer pending, or pending but past its expiry at at (it is expired, only not yet
// swept by ExpireConsents), is ErrConflict and is left unchanged. Of several answers at once,
// one wins: the others wait for its row lock, then find the row no longer pending.
func (s *Store) AnswerConsent(ctx context.Context, id, state, by, wording string, at time.Time) error {
	if state == store.ConsentPending || !validConsentState(state) {
		return errors.New("postgres: answer consent: state is not an answer")
	}
	atArg, err := timeArg("at", at)
	if err != nil {
		return err
	}
	// The second part reads the row as it was when the statement began, only to tell a
	// missing request from a conflict and say which conflict.
	var answered bool
	var cur pgtype.Text
	var expires pgtype.Int8
	err = s.pool.QueryRow(ctx, `WITH answer AS (
			UPDATE consents SET state = $2, answered = $3::bigint, answered_by = $4, wording = $5
			WHERE id = $1 AND state = 'pending'
				AND (expires IS NULL OR $3::bigint IS NULL OR $3::bigint < expires)
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM answer), c.state, c.expires
		FROM (SELECT 1) one LEFT JOIN consents c ON c.id = $1`,
		id, state, atArg, by, wording).Scan(&answered, &cur, &expires)
	switch {
	case err != nil:
		return fmt.Errorf("postgres: answer consent: %w", err)
	case answered:
		return nil
	case !cur.Valid:
		return notFound("consent")
	case cur.String == store.ConsentPending && expires.Valid && atArg.Valid && atArg.Int64 >= expires.Int64:
		return fmt.Errorf("postgres: answer consent: expired: %w", store.ErrConflict)
	default:
		return fmt.Errorf("postgres: answer consent: no longer pending: %w", store.ErrConflict)
	}
}

// ExpireConsents marks every pending request with Expires at or before now as expired and
// returns their ids, ordered by Created, in one statement. A request without Expires never
// expires.
func (s *Store) ExpireConsents(ctx context.Context, now time.Time) ([]string, error) {
	nowArg, err := timeArg("now", now)
	if err != nil {
		return nil, err
	}
	if !nowArg.Valid {
		return nil, errors.New("postgres: expire consents: now is the zero time")
	}
	return list(ctx, s, "expire consents", func(r scanner) (string, error) {
		var id string
		err := r.Scan(&id)
		return id, err
	}, `WITH expired AS (
			UPDATE consents SET state = 'expired'
			WHERE state = 'pending' AND expires IS NOT NULL AND expires <= $1
			RETURNING id, created
		)
		SELECT id FROM expired ORDER BY created NULLS FIRST, id`, nowArg)
}

// ListConsents lists the requests in state ("" for all), ordered by Created (then ID).
func (s *Store) ListConsents(ctx context.Context, state string) ([]store.Consent, error) {
	return list(ctx, s, "list consents", scanConsent, `SELECT `+consentColumns+` FROM consents
		WHERE $1 = '' OR state = $1 ORDER BY created NULLS FIRST, id`, state)
}

func validConsentState(s string) bool {
	switch s {
	case store.ConsentPending, store.ConsentApproved, store.ConsentDenied, store.ConsentExpired,
		store.ConsentCancelled:
		return true
	}
	return false
}

func scanConsent(r scanner) (store.Consent, error) {
	var c store.Consent
	var created, expires, answered pgtype.Int8
	if err := r.Scan(&c.ID, &c.ClientID, &c.Kind, &c.Payload, &c.State, &created, &expires, &answered,
		&c.AnsweredBy, &c.Wording); err != nil {
		return store.Consent{}, err
	}
	c.Created = timeCol(created)
	c.Expires = timeCol(expires)
	c.Answered = timeCol(answered)
	return c, nil
}
