package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/capgate/capgate/internal/store"
)

const tokenColumns = `id, client_id, parent_id, hash, issued_at, expires_at, max_uses, uses,
	revoked, revoked_at, audit_tag, body`

// PutToken records a newly issued token. A taken ID is ErrExists; a ParentID that does not
// exist is ErrNotFound. A token derived from a revoked token is recorded as revoked, at the
// parent's revocation time, as Revoke would have marked it.
func (s *Store) PutToken(ctx context.Context, t store.Token) error {
	var ts times
	issued := ts.arg("token.IssuedAt", t.IssuedAt)
	expires := ts.arg("token.ExpiresAt", t.ExpiresAt)
	revokedAt := ts.arg("token.RevokedAt", t.RevokedAt)
	if ts.err != nil {
		return ts.err
	}
	if t.MaxUses < 0 || t.Uses < 0 {
		return errors.New("sqlite: token.MaxUses and token.Uses must not be negative")
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		parent := sql.NullString{String: t.ParentID, Valid: t.ParentID != ""}
		if parent.Valid {
			var pRevoked int
			var pRevokedAt sql.NullInt64
			err := s.txRow(ctx, tx, `SELECT revoked, revoked_at FROM tokens WHERE id = ?`,
				t.ParentID).Scan(&pRevoked, &pRevokedAt)
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("token parent")
			}
			if err != nil {
				return fmt.Errorf("sqlite: put token: %w", err)
			}
			if pRevoked != 0 && !t.Revoked {
				t.Revoked = true
				revokedAt = pRevokedAt
			}
		}
		_, err := s.txExec(ctx, tx, `INSERT INTO tokens (`+tokenColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.ClientID, parent, t.Hash, issued, expires, t.MaxUses, t.Uses,
			b2i(t.Revoked), revokedAt, t.AuditTag, blobArg(t.Body))
		if isUnique(err) {
			return exists("token id")
		}
		if err != nil {
			return fmt.Errorf("sqlite: put token: %w", err)
		}
		return nil
	})
}

// GetToken returns the token with the id.
func (s *Store) GetToken(ctx context.Context, id string) (store.Token, error) {
	t, err := scanToken(s.queryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Token{}, notFound("token")
	}
	if err != nil {
		return store.Token{}, fmt.Errorf("sqlite: get token: %w", err)
	}
	return t, nil
}

// CheckToken reads the token's revocation and expiry, and whether its client is disabled,
// in one query.
func (s *Store) CheckToken(ctx context.Context, id string, now time.Time) error {
	var revoked, clientDisabled int
	var expires sql.NullInt64
	err := s.queryRow(ctx, `SELECT t.revoked, t.expires_at, coalesce(c.disabled, 0)
		FROM tokens t LEFT JOIN clients c ON c.id = t.client_id WHERE t.id = ?`, id).Scan(&revoked, &expires, &clientDisabled)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return notFound("token")
	case err != nil:
		return fmt.Errorf("sqlite: check token: %w", err)
	case revoked != 0:
		return store.ErrRevoked
	case clientDisabled != 0:
		return store.ErrClientDisabled
	case expires.Valid && !now.Before(timeCol(expires)):
		return store.ErrExpired
	}
	return nil
}

// TakeUse takes one use of the token and of each of its ancestors, in one immediate
// transaction, after checking all of them for revocation, expiry and remaining uses, and
// the token's client for being disabled.
func (s *Store) TakeUse(ctx context.Context, id string, now time.Time) (int64, error) {
	nowArg, err := timeArg("now", now)
	if err != nil {
		return 0, err
	}
	if !nowArg.Valid {
		return 0, errors.New("sqlite: take use: now is the zero time")
	}
	var uses int64
	err = s.write(ctx, func(tx *sql.Tx) error {
		type link struct {
			id       string
			expires  sql.NullInt64
			maxUses  int64
			uses     int64
			revoked  bool
			parentID sql.NullString
		}
		var chain []link
		for cur := id; ; {
			if len(chain) == maxTokenDepth {
				return fmt.Errorf("sqlite: take use: token chain deeper than %d", maxTokenDepth)
			}
			l := link{id: cur}
			var revoked int
			err := s.txRow(ctx, tx, `SELECT parent_id, expires_at, max_uses, uses, revoked
				FROM tokens WHERE id = ?`, cur).Scan(&l.parentID, &l.expires, &l.maxUses, &l.uses, &revoked)
			if errors.Is(err, sql.ErrNoRows) {
				if len(chain) == 0 {
					return notFound("token")
				}
				return notFound("token ancestor")
			}
			if err != nil {
				return fmt.Errorf("sqlite: take use: %w", err)
			}
			l.revoked = revoked != 0
			chain = append(chain, l)
			if !l.parentID.Valid {
				break
			}
			cur = l.parentID.String
		}
		for _, l := range chain {
			if l.revoked {
				return fmt.Errorf("sqlite: take use: %w", store.ErrRevoked)
			}
		}
		var clientDisabled int
		err := s.txRow(ctx, tx, `SELECT coalesce(c.disabled, 0) FROM tokens t LEFT JOIN clients c ON c.id = t.client_id
			WHERE t.id = ?`, id).Scan(&clientDisabled)
		if err != nil {
			return fmt.Errorf("sqlite: take use: %w", err)
		}
		if clientDisabled != 0 {
			return fmt.Errorf("sqlite: take use: %w", store.ErrClientDisabled)
		}
		for _, l := range chain {
			if l.expires.Valid && nowArg.Int64 >= l.expires.Int64 {
				return fmt.Errorf("sqlite: take use: %w", store.ErrExpired)
			}
		}
		for _, l := range chain {
			if l.maxUses > 0 && l.uses >= l.maxUses {
				return fmt.Errorf("sqlite: take use: %w", store.ErrExhausted)
			}
		}
		for _, l := range chain {
			if _, err := s.txExec(ctx, tx, `UPDATE tokens SET uses = uses + 1 WHERE id = ?`, l.id); err != nil {
				return fmt.Errorf("sqlite: take use: %w", err)
			}
		}
		uses = chain[0].uses + 1
		return nil
	})
	if err != nil {
		return 0, err
	}
	return uses, nil
}

// Revoke revokes the token and every token derived from it, transitively. Tokens already
// revoked keep their first revocation time.
func (s *Store) Revoke(ctx context.Context, id string, at time.Time) error {
	atArg, err := timeArg("at", at)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var one int
		err := s.txRow(ctx, tx, `SELECT 1 FROM tokens WHERE id = ?`, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("token")
		}
		if err != nil {
			return fmt.Errorf("sqlite: revoke: %w", err)
		}
		_, err = s.txExec(ctx, tx, `
			WITH RECURSIVE subtree(id) AS (
				SELECT ?
				UNION
				SELECT t.id FROM tokens t JOIN subtree ON t.parent_id = subtree.id
			)
			UPDATE tokens SET revoked = 1, revoked_at = ?
			WHERE revoked = 0 AND id IN (SELECT id FROM subtree)`, id, atArg)
		if err != nil {
			return fmt.Errorf("sqlite: revoke: %w", err)
		}
		return nil
	})
}

// ListTokens lists tokens ordered by IssuedAt (then ID). With live set, only those TakeUse
// would accept at now: neither the token nor any ancestor revoked, expired or exhausted.
func (s *Store) ListTokens(ctx context.Context, live bool, now time.Time) ([]store.Token, error) {
	q := `SELECT ` + tokenColumns + ` FROM tokens ORDER BY issued_at, id`
	var args []any
	if live {
		nowArg, err := timeArg("now", now)
		if err != nil {
			return nil, err
		}
		if !nowArg.Valid {
			return nil, errors.New("sqlite: list tokens: now is the zero time")
		}
		q = `WITH RECURSIVE lineage(id, anc) AS (
				SELECT id, id FROM tokens
				UNION ALL
				SELECT lineage.id, t.parent_id FROM lineage JOIN tokens t ON t.id = lineage.anc
				WHERE t.parent_id IS NOT NULL
			)
			SELECT ` + tokenColumns + ` FROM tokens
			WHERE NOT EXISTS (
				SELECT 1 FROM lineage JOIN tokens a ON a.id = lineage.anc
				WHERE lineage.id = tokens.id AND (a.revoked <> 0
					OR (a.expires_at IS NOT NULL AND a.expires_at <= ?)
					OR (a.max_uses > 0 AND a.uses >= a.max_uses)))
			ORDER BY issued_at, id`
		args = append(args, nowArg)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tokens: %w", err)
	}
	defer rows.Close()
	var out []store.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list tokens: %w", err)
	}
	return out, nil
}

func scanToken(r scanner) (store.Token, error) {
	var t store.Token
	var parent sql.NullString
	var issued, expires, revokedAt sql.NullInt64
	var revoked int
	if err := r.Scan(&t.ID, &t.ClientID, &parent, &t.Hash, &issued, &expires, &t.MaxUses, &t.Uses,
		&revoked, &revokedAt, &t.AuditTag, &t.Body); err != nil {
		return store.Token{}, err
	}
	t.ParentID = parent.String
	t.IssuedAt = timeCol(issued)
	t.ExpiresAt = timeCol(expires)
	t.Revoked = revoked != 0
	t.RevokedAt = timeCol(revokedAt)
	return t, nil
}
