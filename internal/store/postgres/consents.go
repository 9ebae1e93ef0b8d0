package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/capgate/capgate/internal/store"
)

// PutConsent records a consent request; a taken ID is ErrExists.
func (s *Store) PutConsent(ctx context.Context, c store.Consent) error {
	r, err := store.ConsentRowOf(c)
	if err != nil {
		return errs.Wrap("put consent", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO consents (`+store.ConsentColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		r.Args(nulls{})...)
	if isUnique(err) {
		return errs.Exists("consent id")
	}
	return errs.Wrap("put consent", err)
}

// GetConsent returns the consent request with the id.
func (s *Store) GetConsent(ctx context.Context, id string) (store.Consent, error) {
	c, err := store.ScanConsent(s.pool.QueryRow(ctx, `SELECT `+store.ConsentColumns+` FROM consents WHERE id = $1`, id), nulls{})
	return c, errs.Row("get consent", "consent", err)
}

// AnswerConsent moves a pending request to state with one compare-and-set statement. A
// request no longer pending, or pending but past its expiry at at (it is expired, only not yet
// swept by ExpireConsents), is ErrConflict and is left unchanged. Of several answers at once,
// one wins: the others wait for its row lock, then find the row no longer pending.
func (s *Store) AnswerConsent(ctx context.Context, id, state, by, wording string, at time.Time) error {
	atCol, err := store.AnswerCol(state, at)
	if err != nil {
		return errs.Wrap("answer consent", err)
	}
	// The second part reads the row as it was when the statement began, only to tell a
	// missing request from a conflict and say which conflict.
	var answered bool
	var cur pgtype.Text
	var expires store.NullInt
	err = s.pool.QueryRow(ctx, `WITH answer AS (
			UPDATE consents SET state = $2, answered = $3::bigint, answered_by = $4, wording = $5
			WHERE id = $1 AND state = 'pending'
				AND (expires IS NULL OR $3::bigint IS NULL OR $3::bigint < expires)
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM answer), c.state, c.expires
		FROM (SELECT 1) one LEFT JOIN consents c ON c.id = $1`,
		id, state, pgtype.Int8(atCol), by, wording).Scan(&answered, &cur, (*pgtype.Int8)(&expires))
	switch {
	case err != nil:
		return errs.Wrap("answer consent", err)
	case answered:
		return nil
	case !cur.Valid:
		return errs.NotFound("consent")
	}
	// Not answered: the row as the statement began says why, or, pending and unexpired then,
	// an answer that committed meanwhile took it.
	return errs.Wrap("answer consent", store.AnswerConflict(cur.String, expires, at))
}

// ExpireConsents marks every pending request with Expires at or before now as expired and
// returns their ids, ordered by Created, in one statement. A request without Expires never
// expires.
func (s *Store) ExpireConsents(ctx context.Context, now time.Time) ([]string, error) {
	nowCol, err := store.NowCol(now)
	if err != nil {
		return nil, errs.Wrap("expire consents", err)
	}
	return list(ctx, s, "expire consents", store.ScanString, `WITH expired AS (
			UPDATE consents SET state = 'expired'
			WHERE state = 'pending' AND expires IS NOT NULL AND expires <= $1
			RETURNING id, created
		)
		SELECT id FROM expired ORDER BY created NULLS FIRST, id`, pgtype.Int8(nowCol))
}

// ListConsents lists the requests in state ("" for all), ordered by Created (then ID).
func (s *Store) ListConsents(ctx context.Context, state string) ([]store.Consent, error) {
	return list(ctx, s, "list consents", store.ScanConsent, `SELECT `+store.ConsentColumns+` FROM consents
		WHERE $1 = '' OR state = $1 ORDER BY created NULLS FIRST, id`, state)
}
