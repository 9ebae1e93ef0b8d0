package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/capgate/capgate/internal/store"
)

// PutToken records a newly issued token, in one statement. A taken ID is ErrExists; a
// ParentID that does not exist is ErrNotFound. A token derived from a revoked token is
// recorded as revoked, at the parent's revocation time, as Revoke would have marked it: the
// statement reads the parent FOR SHARE, so it waits for a revocation in progress and sees it.
func (s *Store) PutToken(ctx context.Context, t store.Token) error {
	r, err := store.TokenRowOf(t)
	if err != nil {
		return errs.Wrap("put token", err)
	}
	args := []any{r.ID, r.ClientID, r.Hash, pgtype.Int8(r.IssuedAt), pgtype.Int8(r.ExpiresAt), r.MaxUses, r.Uses,
		r.Revoked, pgtype.Int8(r.RevokedAt), r.AuditTag, r.Body}
	var q string
	if !r.ParentID.Valid {
		q = `INSERT INTO tokens (` + store.TokenColumns + `)
			VALUES ($1, $2, NULL, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	} else {
		q = `WITH parent AS (SELECT revoked, revoked_at FROM tokens WHERE id = $12 FOR SHARE)
			INSERT INTO tokens (` + store.TokenColumns + `)
			SELECT $1, $2, $12, $3, $4, $5, $6, $7, $8 OR parent.revoked,
				CASE WHEN NOT $8 AND parent.revoked THEN parent.revoked_at ELSE $9 END, $10, $11
			FROM parent`
		args = append(args, r.ParentID.String)
	}
	tag, err := s.pool.Exec(ctx, q, args...)
	if isUnique(err) {
		return errs.Exists("token id")
	}
	if err != nil {
		return errs.Wrap("put token", err)
	}
	if tag.RowsAffected() == 0 {
		return errs.NotFound("token parent")
	}
	return nil
}

// GetToken returns the token with the id.
func (s *Store) GetToken(ctx context.Context, id string) (store.Token, error) {
	t, err := store.ScanToken(s.pool.QueryRow(ctx, `SELECT `+store.TokenColumns+` FROM tokens WHERE id = $1`, id), nulls{})
	return t, errs.Row("get token", "token", err)
}

// CheckToken reads the token's revocation and expiry, and whether its client is disabled,
// in one round trip.
func (s *Store) CheckToken(ctx context.Context, id string, now time.Time) error {
	var use store.Use
	var expires store.NullInt
	err := s.pool.QueryRow(ctx, `SELECT t.revoked, t.expires_at, coalesce(c.disabled, false)
		FROM tokens t LEFT JOIN clients c ON c.id = t.client_id WHERE t.id = $1`, id).
		Scan(&use.Revoked, (*pgtype.Int8)(&expires), &use.ClientDisabled)
	if err != nil {
		return errs.Row("check token", "token", err)
	}
	use.Expired = store.Expired(expires, now)
	return use.Err()
}

// TakeUse takes one use of the token and of each of its ancestors, in one call of the
// schema's capgate_take_use function: it locks the chain root first, checks every link for
// revocation, expiry and remaining uses and the token's client for being disabled, and
// counts the use against each link, all in the one statement's transaction, in store.Use's
// order.
func (s *Store) TakeUse(ctx context.Context, id string, now time.Time) (int64, error) {
	nowCol, err := store.NowCol(now)
	if err != nil {
		return 0, errs.Wrap("take use", err)
	}
	var outcome string
	var taken pgtype.Int8
	if err := s.pool.QueryRow(ctx, `SELECT outcome, taken FROM capgate_take_use($1, $2, $3)`,
		id, pgtype.Int8(nowCol), store.MaxTokenDepth).Scan(&outcome, &taken); err != nil {
		return 0, errs.Wrap("take use", err)
	}
	switch outcome {
	case "ok":
		return taken.Int64, nil
	case "not_found":
		return 0, errs.NotFound("token")
	case "revoked":
		return 0, errs.Wrap("take use", store.ErrRevoked)
	case "client_disabled":
		return 0, errs.Wrap("take use", store.ErrClientDisabled)
	case "expired":
		return 0, errs.Wrap("take use", store.ErrExpired)
	case "exhausted":
		return 0, errs.Wrap("take use", store.ErrExhausted)
	case "too_deep":
		return 0, errs.Wrap("take use", store.ChainTooDeep())
	}
	return 0, errs.Wrap("take use", fmt.Errorf("unknown outcome %q", outcome))
}

// Revoke revokes the token and every token derived from it, transitively, in one call of the
// schema's capgate_revoke function. Tokens already revoked keep their first revocation time.
func (s *Store) Revoke(ctx context.Context, id string, at time.Time) error {
	atCol, err := store.TimeCol("at", at)
	if err != nil {
		return errs.Wrap("revoke", err)
	}
	var found bool
	if err := s.pool.QueryRow(ctx, `SELECT capgate_revoke($1, $2, $3)`, id, pgtype.Int8(atCol), store.MaxTokenDepth).
		Scan(&found); err != nil {
		return errs.Wrap("revoke", err)
	}
	if !found {
		return errs.NotFound("token")
	}
	return nil
}

// ListTokens lists tokens ordered by IssuedAt (then ID). With live set, only those TakeUse
// would accept at now: neither the token nor any ancestor revoked, expired or exhausted.
func (s *Store) ListTokens(ctx context.Context, live bool, now time.Time) ([]store.Token, error) {
	if !live {
		return list(ctx, s, "list tokens", store.ScanToken,
			`SELECT `+store.TokenColumns+` FROM tokens ORDER BY issued_at NULLS FIRST, id`)
	}
	nowCol, err := store.NowCol(now)
	if err != nil {
		return nil, errs.Wrap("list tokens", err)
	}
	// dead: the tokens TakeUse would refuse by themselves, then everything derived from them.
	return list(ctx, s, "list tokens", store.ScanToken, `WITH RECURSIVE dead (id) AS (
			SELECT id FROM tokens
			WHERE revoked OR expires_at <= $1 OR (max_uses > 0 AND uses >= max_uses)
			UNION
			SELECT t.id FROM tokens t JOIN dead ON t.parent_id = dead.id
		)
		SELECT `+store.TokenColumns+` FROM tokens
		WHERE NOT EXISTS (SELECT 1 FROM dead WHERE dead.id = tokens.id)
		ORDER BY issued_at NULLS FIRST, id`, pgtype.Int8(nowCol))
}
