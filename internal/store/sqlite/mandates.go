package sqlite

import (
	"context"
	"database/sql"

	"github.com/capgate/capgate/internal/store"
)

// PutMandate inserts or replaces the mandate for m.Permission.
func (s *Store) PutMandate(ctx context.Context, m store.Mandate) error {
	r, err := store.MandateRowOf(m)
	if err != nil {
		return errs.Wrap("put mandate", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO mandates (`+store.MandateColumns+`) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (permission) DO UPDATE SET autonomy = excluded.autonomy,
				agreed_id = excluded.agreed_id, wording = excluded.wording,
				agreed_at = excluded.agreed_at, updated = excluded.updated`,
			r.Args(nulls{})...)
		return errs.Wrap("put mandate", err)
	})
}

// GetMandate returns the mandate for the permission.
func (s *Store) GetMandate(ctx context.Context, permission string) (store.Mandate, error) {
	m, err := store.ScanMandate(s.db.QueryRowContext(ctx,
		`SELECT `+store.MandateColumns+` FROM mandates WHERE permission = ?`, permission), nulls{})
	return m, errs.Row("get mandate", "mandate", err)
}

// ListMandates returns every mandate ordered by Permission.
func (s *Store) ListMandates(ctx context.Context) ([]store.Mandate, error) {
	return list(ctx, s, nil, "list mandates", store.ScanMandate,
		`SELECT `+store.MandateColumns+` FROM mandates ORDER BY permission`)
}

// DeleteMandate deletes the mandate for the permission; a missing one is ErrNotFound.
func (s *Store) DeleteMandate(ctx context.Context, permission string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM mandates WHERE permission = ?`, permission)
		if err != nil {
			return errs.Wrap("delete mandate", err)
		}
		return checkAffected(res, "mandate")
	})
}
