package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// PutToken records a newly issued token. A taken ID is ErrExists; a ParentID that does not
// exist is ErrNotFound. A token derived from a revoked token is recorded as revoked, at the
// parent's revocation time, as Revoke would have marked it.
func (s *Store) PutToken(ctx context.Context, t store.Token) error {
	r, err := store.TokenRowOf(t)
	if err != nil {
		return errs.Wrap("put token", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if r.ParentID.Valid {
			var pRevoked bool
			var pRevokedAt sql.NullInt64
			err := s.txRow(ctx, tx, `SELECT revoked, revoked_at FROM tokens WHERE id = ?`,
				r.ParentID.String).Scan(&pRevoked, &pRevokedAt)
			if err != nil {
				return errs.Row("put token", "token parent", err)
			}
			if pRevoked && !r.Revoked {
				r.Revoked, r.RevokedAt = true, store.NullInt(pRevokedAt)
			}
		}
		_, err := s.txExec(ctx, tx, `INSERT INTO tokens (`+store.TokenColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.ClientID, sql.NullString(r.ParentID), r.Hash, sql.NullInt64(r.IssuedAt), sql.NullInt64(r.ExpiresAt),
			r.MaxUses, r.Uses, r.Revoked, sql.NullInt64(r.RevokedAt), r.AuditTag, r.Body)
		if isUnique(err) {
			return errs.Exists("token id")
		}
		return errs.Wrap("put token", err)
	})
}

// GetToken returns the token with the id.
func (s *Store) GetToken(ctx context.Context, id string) (store.Token, error) {
	t, err := store.ScanToken(s.queryRow(ctx, `SELECT `+store.TokenColumns+` FROM tokens WHERE id = ?`, id), nulls{})
	return t, errs.Row("get token", "token", err)
}

// CheckToken reads the token's revocation and expiry, and whether its client is disabled,
// in one query.
func (s *Store) CheckToken(ctx context.Context, id string, now time.Time) error {
	var use store.Use
	var expires store.NullInt
	err := s.queryRow(ctx, `SELECT t.revoked, t.expires_at, coalesce(c.disabled, 0)
		FROM tokens t LEFT JOIN clients c ON c.id = t.client_id WHERE t.id = ?`, id).
		Scan(&use.Revoked, (*sql.NullInt64)(&expires), &use.ClientDisabled)
	if err != nil {
		return errs.Row("check token", "token", err)
	}
	use.Expired = store.Expired(expires, now)
	return use.Err()
}

// TakeUse takes one use of the token and of each of its ancestors, in one immediate
// transaction, after checking all of them for revocation, expiry and remaining uses, and
// the token's client for being disabled.
func (s *Store) TakeUse(ctx context.Context, id string, now time.Time) (int64, error) {
	if _, err := store.NowCol(now); err != nil {
		return 0, errs.Wrap("take use", err)
	}
	var uses int64
	// A use taken changes no cached decision: a token with a use limit is checked by TakeUse
	// itself at every use.
	err := s.writeQuiet(ctx, func(tx *sql.Tx) error {
		// The chain: the token, then each ancestor, as far as the root.
		type link struct {
			id            string
			parentID      sql.NullString
			expires       store.NullInt
			maxUses, uses int64
			revoked       bool
		}
		var chain []link
		var use store.Use
		for cur := id; ; {
			if len(chain) == store.MaxTokenDepth {
				return errs.Wrap("take use", store.ChainTooDeep())
			}
			l := link{id: cur}
			err := s.txRow(ctx, tx, `SELECT parent_id, expires_at, max_uses, uses, revoked
				FROM tokens WHERE id = ?`, cur).Scan(&l.parentID, (*sql.NullInt64)(&l.expires), &l.maxUses, &l.uses, &l.revoked)
			if errors.Is(err, sql.ErrNoRows) {
				if len(chain) == 0 {
					return errs.NotFound("token")
				}
				return errs.NotFound("token ancestor")
			}
			if err != nil {
				return errs.Wrap("take use", err)
			}
			use.Revoked = use.Revoked || l.revoked
			use.Expired = use.Expired || store.Expired(l.expires, now)
			use.Exhausted = use.Exhausted || store.Exhausted(l.maxUses, l.uses)
			chain = append(chain, l)
			if !l.parentID.Valid {
				break
			}
			cur = l.parentID.String
		}
		if !use.Revoked { // a revoked token is refused whatever its client
			err := s.txRow(ctx, tx, `SELECT coalesce(c.disabled, 0) FROM tokens t LEFT JOIN clients c ON c.id = t.client_id
				WHERE t.id = ?`, id).Scan(&use.ClientDisabled)
			if err != nil {
				return errs.Wrap("take use", err)
			}
		}
		if err := use.Err(); err != nil {
			return errs.Wrap("take use", err)
		}
		for _, l := range chain {
			if _, err := s.txExec(ctx, tx, `UPDATE tokens SET uses = uses + 1 WHERE id = ?`, l.id); err != nil {
				return errs.Wrap("take use", err)
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
	atCol, err := store.TimeCol("at", at)
	if err != nil {
		return errs.Wrap("revoke", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var one int
		err := s.txRow(ctx, tx, `SELECT 1 FROM tokens WHERE id = ?`, id).Scan(&one)
		if err != nil {
			return errs.Row("revoke", "token", err)
		}
		_, err = s.txExec(ctx, tx, `
			WITH RECURSIVE subtree(id) AS (
				SELECT ?
				UNION
				SELECT t.id FROM tokens t JOIN subtree ON t.parent_id = subtree.id
			)
			UPDATE tokens SET revoked = 1, revoked_at = ?
			WHERE revoked = 0 AND id IN (SELECT id FROM subtree)`, id, sql.NullInt64(atCol))
		return errs.Wrap("revoke", err)
	})
}

// ListTokens lists tokens ordered by IssuedAt (then ID). With live set, only those TakeUse
// would accept at now: neither the token nor any ancestor revoked, expired or exhausted.
func (s *Store) ListTokens(ctx context.Context, live bool, now time.Time) ([]store.Token, error) {
	if !live {
		return list(ctx, s, nil, "list tokens", store.ScanToken,
			`SELECT `+store.TokenColumns+` FROM tokens ORDER BY issued_at, id`)
	}
	nowCol, err := store.NowCol(now)
	if err != nil {
		return nil, errs.Wrap("list tokens", err)
	}
	return list(ctx, s, nil, "list tokens", store.ScanToken, `WITH RECURSIVE lineage(id, anc) AS (
			SELECT id, id FROM tokens
			UNION ALL
			SELECT lineage.id, t.parent_id FROM lineage JOIN tokens t ON t.id = lineage.anc
			WHERE t.parent_id IS NOT NULL
		)
		SELECT `+store.TokenColumns+` FROM tokens
		WHERE NOT EXISTS (
			SELECT 1 FROM lineage JOIN tokens a ON a.id = lineage.anc
			WHERE lineage.id = tokens.id AND (a.revoked <> 0
				OR (a.expires_at IS NOT NULL AND a.expires_at <= ?)
				OR (a.max_uses > 0 AND a.uses >= a.max_uses)))
		ORDER BY issued_at, id`, sql.NullInt64(nowCol))
}
