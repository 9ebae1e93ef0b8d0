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

const tokenColumns = `id, client_id, parent_id, hash, issued_at, expires_at, max_uses, uses,
	revoked, revoked_at, audit_tag, body`

// PutToken records a newly issued token, in one statement. A taken ID is ErrExists; a
// ParentID that does not exist is ErrNotFound. A token derived from a revoked token is
// recorded as revoked, at the parent's revocation time, as Revoke would have marked it: the
// statement reads the parent FOR SHARE, so it waits for a revocation in progress and sees it.
func (s *Store) PutToken(ctx context.Context, t store.Token) error {
	var ts times
	issued := ts.arg("token.IssuedAt", t.IssuedAt)
	expires := ts.arg("token.ExpiresAt", t.ExpiresAt)
	revokedAt := ts.arg("token.RevokedAt", t.RevokedAt)
	if ts.err != nil {
		return ts.err
	}
	if t.MaxUses < 0 || t.Uses < 0 {
		return errors.New("postgres: token.MaxUses and token.Uses must not be negative")
	}
	args := []any{t.ID, t.ClientID, t.Hash, issued, expires, t.MaxUses, t.Uses,
		t.Revoked, revokedAt, t.AuditTag, blobArg(t.Body)}
	var q string
	if t.ParentID == "" {
		q = `INSERT INTO tokens (` + tokenColumns + `)
			VALUES ($1, $2, NULL, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	} else {
		q = `WITH parent AS (SELECT revoked, revoked_at FROM tokens WHERE id = $12 FOR SHARE)
			INSERT INTO tokens (` + tokenColumns + `)
			SELECT $1, $2, $12, $3, $4, $5, $6, $7, $8 OR parent.revoked,
				CASE WHEN NOT $8 AND parent.revoked THEN parent.revoked_at ELSE $9 END, $10, $11
			FROM parent`
		args = append(args, t.ParentID)
	}
	tag, err := s.pool.Exec(ctx, q, args...)
	if isUnique(err) {
		return exists("token id")
	}
	if err != nil {
		return fmt.Errorf("postgres: put token: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("token parent")
	}
	return nil
}

// GetToken returns the token with the id.
func (s *Store) GetToken(ctx context.Context, id string) (store.Token, error) {
	t, err := scanToken(s.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Token{}, notFound("token")
	}
	if err != nil {
		return store.Token{}, fmt.Errorf("postgres: get token: %w", err)
	}
	return t, nil
}

// CheckToken reads the token's revocation and expiry, and whether its client is disabled,
// in one round trip.
func (s *Store) CheckToken(ctx context.Context, id string, now time.Time) error {
	var revoked, clientDisabled bool
	var expires pgtype.Int8
	err := s.pool.QueryRow(ctx, `SELECT t.revoked, t.expires_at, coalesce(c.disabled, false)
		FROM tokens t LEFT JOIN clients c ON c.id = t.client_id WHERE t.id = $1`, id).Scan(&revoked, &expires, &clientDisabled)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return notFound("token")
	case err != nil:
		return fmt.Errorf("postgres: check token: %w", err)
	case revoked:
		return store.ErrRevoked
	case clientDisabled:
		return store.ErrClientDisabled
	case expires.Valid && !now.Before(timeCol(expires)):
		return store.ErrExpired
	}
	return nil
}

// TakeUse takes one use of the token and of each of its ancestors, in one call of the
// schema's capgate_take_use function: it locks the chain root first, checks every link for
// revocation, expiry and remaining uses and the token's client for being disabled, and
// counts the use against each link, all in the one statement's transaction.
func (s *Store) TakeUse(ctx context.Context, id string, now time.Time) (int64, error) {
	nowArg, err := timeArg("now", now)
	if err != nil {
		return 0, err
	}
	if !nowArg.Valid {
		return 0, errors.New("postgres: take use: now is the zero time")
	}
	var outcome string
	var taken pgtype.Int8
	if err := s.pool.QueryRow(ctx, `SELECT outcome, taken FROM capgate_take_use($1, $2, $3)`,
		id, nowArg, maxTokenDepth).Scan(&outcome, &taken); err != nil {
		return 0, fmt.Errorf("postgres: take use: %w", err)
	}
	switch outcome {
	case "ok":
		return taken.Int64, nil
	case "not_found":
		return 0, notFound("token")
	case "revoked":
		return 0, fmt.Errorf("postgres: take use: %w", store.ErrRevoked)
	case "client_disabled":
		return 0, fmt.Errorf("postgres: take use: %w", store.ErrClientDisabled)
	case "expired":
		return 0, fmt.Errorf("postgres: take use: %w", store.ErrExpired)
	case "exhausted":
		return 0, fmt.Errorf("postgres: take use: %w", store.ErrExhausted)
	case "too_deep":
		return 0, fmt.Errorf("postgres: take use: token chain deeper than %d", maxTokenDepth)
	}
	return 0, fmt.Errorf("postgres: take use: unknown outcome %q", outcome)
}

// Revoke revokes the token and every token derived from it, transitively, in one call of the
// schema's capgate_revoke function. Tokens already revoked keep their first revocation time.
func (s *Store) Revoke(ctx context.Context, id string, at time.Time) error {
	atArg, err := timeArg("at", at)
	if err != nil {
		return err
	}
	var found bool
	if err := s.pool.QueryRow(ctx, `SELECT capgate_revoke($1, $2, $3)`, id, atArg, maxTokenDepth).
		Scan(&found); err != nil {
		return fmt.Errorf("postgres: revoke: %w", err)
	}
	if !found {
		return notFound("token")
	}
	return nil
}

// ListTokens lists tokens ordered by IssuedAt (then ID). With live set, only those TakeUse
// would accept at now: neither the token nor any ancestor revoked, expired or exhausted.
func (s *Store) ListTokens(ctx context.Context, live bool, now time.Time) ([]store.Token, error) {
	if !live {
		return list(ctx, s, "list tokens", scanToken,
			`SELECT `+tokenColumns+` FROM tokens ORDER BY issued_at NULLS FIRST, id`)
	}
	nowArg, err := timeArg("now", now)
	if err != nil {
		return nil, err
	}
	if !nowArg.Valid {
		return nil, errors.New("postgres: list tokens: now is the zero time")
	}
	// dead: the tokens TakeUse would refuse by themselves, then everything derived from them.
	return list(ctx, s, "list tokens", scanToken, `WITH RECURSIVE dead (id) AS (
			SELECT id FROM tokens
			WHERE revoked OR expires_at <= $1 OR (max_uses > 0 AND uses >= max_uses)
			UNION
			SELECT t.id FROM tokens t JOIN dead ON t.parent_id = dead.id
		)
		SELECT `+tokenColumns+` FROM tokens
		WHERE NOT EXISTS (SELECT 1 FROM dead WHERE dead.id = tokens.id)
		ORDER BY issued_at NULLS FIRST, id`, nowArg)
}

func scanToken(r scanner) (store.Token, error) {
	var t store.Token
	var parent pgtype.Text
	var issued, expires, revokedAt pgtype.Int8
	if err := r.Scan(&t.ID, &t.ClientID, &parent, &t.Hash, &issued, &expires, &t.MaxUses, &t.Uses,
		&t.Revoked, &revokedAt, &t.AuditTag, &t.Body); err != nil {
		return store.Token{}, err
	}
	t.ParentID = parent.String
	t.IssuedAt = timeCol(issued)
	t.ExpiresAt = timeCol(expires)
	t.RevokedAt = timeCol(revokedAt)
	return t, nil
}
