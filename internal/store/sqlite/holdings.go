package sqlite

import (
	"context"
	"database/sql"
	"time"

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
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO holdings (`+store.HoldingColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.Args(nulls{})...)
		if isUnique(err) {
			return errs.Exists("holding handle")
		}
		if err != nil {
			return errs.Wrap("put holding", err)
		}
		if r.Created.Valid {
			if _, err := s.txExec(ctx, tx, `DELETE FROM holdings WHERE client_id = ? AND expires_at <= ?`, r.ClientID, r.Created.Int64); err != nil {
				return errs.Wrap("put holding", err)
			}
		}
		_, err = s.txExec(ctx, tx, `DELETE FROM holdings WHERE handle IN (
			SELECT handle FROM holdings WHERE client_id = ? ORDER BY created DESC, handle DESC LIMIT -1 OFFSET ?)`, r.ClientID, keep)
		return errs.Wrap("put holding", err)
	})
}

// GetHolding returns the holding with the handle.
func (s *Store) GetHolding(ctx context.Context, handle string) (store.Holding, error) {
	h, err := store.ScanHolding(s.queryRow(ctx, `SELECT `+store.HoldingColumns+` FROM holdings WHERE handle = ?`, handle), nulls{})
	return h, errs.Row("get holding", "holding", err)
}

// ListHoldings returns the client's holdings unexpired at now.
func (s *Store) ListHoldings(ctx context.Context, clientID string, now time.Time) ([]store.Holding, error) {
	n, err := store.NowCol(now)
	if err != nil {
		return nil, errs.Wrap("list holdings", err)
	}
	return list(ctx, s, nil, "list holdings", store.ScanHolding,
		`SELECT `+store.HoldingColumns+` FROM holdings WHERE client_id = ? AND expires_at > ? ORDER BY created, handle`, clientID, n.Int64)
}

// DeleteHolding removes the holding with the handle; a missing one is ErrNotFound.
func (s *Store) DeleteHolding(ctx context.Context, handle string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM holdings WHERE handle = ?`, handle)
		if err != nil {
			return errs.Wrap("delete holding", err)
		}
		return checkAffected(res, "holding")
	})
}
