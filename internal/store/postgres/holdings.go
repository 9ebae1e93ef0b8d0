package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgate/capgate/internal/store"
)

// PutHolding records h, then removes the client's expired holdings and those beyond keep,
// in one transaction.
func (s *Store) PutHolding(ctx context.Context, h store.Holding, keep int) error {
	r, err := store.HoldingRowOf(h)
	if err != nil {
		return errs.Wrap("put holding", err)
	}
	keep = max(keep, 1)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO holdings (`+store.HoldingColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, r.Args(nulls{})...)
		if isUnique(err) {
			return errs.Exists("holding handle")
		}
		if err != nil {
			return err
		}
		if r.Created.Valid {
			if _, err := tx.Exec(ctx, `DELETE FROM holdings WHERE client_id = $1 AND expires_at <= $2`, r.ClientID, r.Created.Int64); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `DELETE FROM holdings WHERE handle IN (
			SELECT handle FROM holdings WHERE client_id = $1 ORDER BY created DESC NULLS LAST, handle DESC OFFSET $2)`, r.ClientID, keep)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrExists) {
		return errs.Wrap("put holding", err)
	}
	return err
}

// GetHolding returns the holding with the handle.
func (s *Store) GetHolding(ctx context.Context, handle string) (store.Holding, error) {
	h, err := store.ScanHolding(s.pool.QueryRow(ctx, `SELECT `+store.HoldingColumns+` FROM holdings WHERE handle = $1`, handle), nulls{})
	return h, errs.Row("get holding", "holding", err)
}

// ListHoldings returns the client's holdings unexpired at now.
func (s *Store) ListHoldings(ctx context.Context, clientID string, now time.Time) ([]store.Holding, error) {
	n, err := store.NowCol(now)
	if err != nil {
		return nil, errs.Wrap("list holdings", err)
	}
	return list(ctx, s, "list holdings", store.ScanHolding,
		`SELECT `+store.HoldingColumns+` FROM holdings WHERE client_id = $1 AND expires_at > $2 ORDER BY created NULLS FIRST, handle`, clientID, n.Int64)
}

// DeleteHolding removes the holding with the handle; a missing one is ErrNotFound.
func (s *Store) DeleteHolding(ctx context.Context, handle string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM holdings WHERE handle = $1`, handle)
	if err != nil {
		return errs.Wrap("delete holding", err)
	}
	return errs.Affected(tag.RowsAffected(), "holding")
}
