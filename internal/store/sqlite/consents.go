package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// PutConsent records a consent request; a taken ID is ErrExists.
func (s *Store) PutConsent(ctx context.Context, c store.Consent) error {
	r, err := store.ConsentRowOf(c)
	if err != nil {
		return errs.Wrap("put consent", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO consents (`+store.ConsentColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Args(nulls{})...)
		if isUnique(err) {
			return errs.Exists("consent id")
		}
		return errs.Wrap("put consent", err)
	})
}

// GetConsent returns the consent request with the id.
func (s *Store) GetConsent(ctx context.Context, id string) (store.Consent, error) {
	c, err := store.ScanConsent(s.queryRow(ctx, `SELECT `+store.ConsentColumns+` FROM consents WHERE id = ?`, id), nulls{})
	return c, errs.Row("get consent", "consent", err)
}

// AnswerConsent moves a pending request to state in one immediate transaction. A request no
// longer pending, or pending but past its expiry at at (it is expired, only not yet swept by
// ExpireConsents), is ErrConflict and is left unchanged.
func (s *Store) AnswerConsent(ctx context.Context, id, state, by, wording string, at time.Time) error {
	atCol, err := store.AnswerCol(state, at)
	if err != nil {
		return errs.Wrap("answer consent", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var cur string
		var expires store.NullInt
		err := s.txRow(ctx, tx, `SELECT state, expires FROM consents WHERE id = ?`, id).
			Scan(&cur, (*sql.NullInt64)(&expires))
		if err != nil {
			return errs.Row("answer consent", "consent", err)
		}
		if err := store.Answerable(cur, expires, at); err != nil {
			return errs.Wrap("answer consent", err)
		}
		_, err = s.txExec(ctx, tx, `UPDATE consents SET state = ?, answered = ?, answered_by = ?,
			wording = ? WHERE id = ?`, state, sql.NullInt64(atCol), by, wording, id)
		return errs.Wrap("answer consent", err)
	})
}

// ExpireConsents marks every pending request with Expires at or before now as expired and
// returns their ids, ordered by Created. A request without Expires never expires.
func (s *Store) ExpireConsents(ctx context.Context, now time.Time) ([]string, error) {
	nowCol, err := store.NowCol(now)
	if err != nil {
		return nil, errs.Wrap("expire consents", err)
	}
	var ids []string
	err = s.write(ctx, func(tx *sql.Tx) error {
		found, err := list(ctx, s, tx, "expire consents", store.ScanString, `SELECT id FROM consents
			WHERE state = 'pending' AND expires IS NOT NULL AND expires <= ?
			ORDER BY created, id`, sql.NullInt64(nowCol))
		if err != nil {
			return err
		}
		ids = found
		_, err = s.txExec(ctx, tx, `UPDATE consents SET state = 'expired'
			WHERE state = 'pending' AND expires IS NOT NULL AND expires <= ?`, sql.NullInt64(nowCol))
		return errs.Wrap("expire consents", err)
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// ListConsents lists the requests in state ("" for all), ordered by Created (then ID).
func (s *Store) ListConsents(ctx context.Context, state string) ([]store.Consent, error) {
	return list(ctx, s, nil, "list consents", store.ScanConsent, `SELECT `+store.ConsentColumns+` FROM consents
		WHERE ? = '' OR state = ? ORDER BY created, id`, state, state)
}
