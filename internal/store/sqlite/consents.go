package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/capgate/capgate/internal/store"
)

const consentColumns = `id, client_id, kind, payload, state, created, expires, answered, answered_by, wording`

// PutConsent records a consent request; a taken ID is ErrExists.
func (s *Store) PutConsent(ctx context.Context, c store.Consent) error {
	if !validConsentState(c.State) {
		return errors.New("sqlite: consent.State is not a consent state")
	}
	var ts times
	created := ts.arg("consent.Created", c.Created)
	expires := ts.arg("consent.Expires", c.Expires)
	answered := ts.arg("consent.Answered", c.Answered)
	if ts.err != nil {
		return ts.err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO consents (`+consentColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.ClientID, c.Kind, blobArg(c.Payload), c.State, created, expires, answered,
			c.AnsweredBy, c.Wording)
		if isUnique(err) {
			return exists("consent id")
		}
		if err != nil {
			return fmt.Errorf("sqlite: put consent: %w", err)
		}
		return nil
	})
}

// GetConsent returns the consent request with the id.
func (s *Store) GetConsent(ctx context.Context, id string) (store.Consent, error) {
	c, err := scanConsent(s.queryRow(ctx, `SELECT `+consentColumns+` FROM consents WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Consent{}, notFound("consent")
	}
	if err != nil {
		return store.Consent{}, fmt.Errorf("sqlite: get consent: %w", err)
	}
	return c, nil
}

// AnswerConsent moves a pending request to state in one immediate transaction. A request no
// longer pending, or pending but past its expiry at at (it is expired, only not yet swept by
// ExpireConsents), is ErrConflict and is left unchanged.
func (s *Store) AnswerConsent(ctx context.Context, id, state, by, wording string, at time.Time) error {
	if state == store.ConsentPending || !validConsentState(state) {
		return errors.New("sqlite: answer consent: state is not an answer")
	}
	atArg, err := timeArg("at", at)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var cur string
		var expires sql.NullInt64
		err := s.txRow(ctx, tx, `SELECT state, expires FROM consents WHERE id = ?`, id).Scan(&cur, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("consent")
		}
		if err != nil {
			return fmt.Errorf("sqlite: answer consent: %w", err)
		}
		if cur != store.ConsentPending {
			return fmt.Errorf("sqlite: answer consent: %w", store.ErrConflict)
		}
		if expires.Valid && atArg.Valid && atArg.Int64 >= expires.Int64 {
			return fmt.Errorf("sqlite: answer consent: expired: %w", store.ErrConflict)
		}
		if _, err := s.txExec(ctx, tx, `UPDATE consents SET state = ?, answered = ?, answered_by = ?,
				wording = ? WHERE id = ?`, state, atArg, by, wording, id); err != nil {
			return fmt.Errorf("sqlite: answer consent: %w", err)
		}
		return nil
	})
}

// ExpireConsents marks every pending request with Expires at or before now as expired and
// returns their ids, ordered by Created. A request without Expires never expires.
func (s *Store) ExpireConsents(ctx context.Context, now time.Time) ([]string, error) {
	nowArg, err := timeArg("now", now)
	if err != nil {
		return nil, err
	}
	if !nowArg.Valid {
		return nil, errors.New("sqlite: expire consents: now is the zero time")
	}
	var ids []string
	err = s.write(ctx, func(tx *sql.Tx) error {
		rows, err := s.txQuery(ctx, tx, `SELECT id FROM consents
			WHERE state = 'pending' AND expires IS NOT NULL AND expires <= ?
			ORDER BY created, id`, nowArg)
		if err != nil {
			return fmt.Errorf("sqlite: expire consents: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return fmt.Errorf("sqlite: expire consents: %w", err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: expire consents: %w", err)
		}
		rows.Close()
		if _, err := s.txExec(ctx, tx, `UPDATE consents SET state = 'expired'
			WHERE state = 'pending' AND expires IS NOT NULL AND expires <= ?`, nowArg); err != nil {
			return fmt.Errorf("sqlite: expire consents: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// ListConsents lists the requests in state ("" for all), ordered by Created (then ID).
func (s *Store) ListConsents(ctx context.Context, state string) ([]store.Consent, error) {
	rows, err := s.query(ctx, `SELECT `+consentColumns+` FROM consents
		WHERE ? = '' OR state = ? ORDER BY created, id`, state, state)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list consents: %w", err)
	}
	defer rows.Close()
	var out []store.Consent
	for rows.Next() {
		c, err := scanConsent(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list consents: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list consents: %w", err)
	}
	return out, nil
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
	var created, expires, answered sql.NullInt64
	if err := r.Scan(&c.ID, &c.ClientID, &c.Kind, &c.Payload, &c.State, &created, &expires, &answered,
		&c.AnsweredBy, &c.Wording); err != nil {
		return store.Consent{}, err
	}
	c.Created = timeCol(created)
	c.Expires = timeCol(expires)
	c.Answered = timeCol(answered)
	return c, nil
}
