package postgres

import (
	"context"

	"github.com/capgate/capgate/internal/store"
)

// PutMandate inserts or replaces the mandate for m.Permission.
func (s *Store) PutMandate(ctx context.Context, m store.Mandate) error {
	r, err := store.MandateRowOf(m)
	if err != nil {
		return errs.Wrap("put mandate", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO mandates (`+store.MandateColumns+`) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (permission) DO UPDATE SET autonomy = excluded.autonomy,
			agreed_id = excluded.agreed_id, wording = excluded.wording,
			agreed_at = excluded.agreed_at, updated = excluded.updated`,
		r.Args(nulls{})...)
	return errs.Wrap("put mandate", err)
}

// GetMandate returns the mandate for the permission.
func (s *Store) GetMandate(ctx context.Context, permission string) (store.Mandate, error) {
	m, err := store.ScanMandate(s.pool.QueryRow(ctx,
		`SELECT `+store.MandateColumns+` FROM mandates WHERE permission = $1`, permission), nulls{})
	return m, errs.Row("get mandate", "mandate", err)
}

// ListMandates returns every mandate ordered by Permission.
func (s *Store) ListMandates(ctx context.Context) ([]store.Mandate, error) {
	return list(ctx, s, "list mandates", store.ScanMandate,
		`SELECT `+store.MandateColumns+` FROM mandates ORDER BY permission`)
}

// DeleteMandate deletes the mandate for the permission; a missing one is ErrNotFound.
func (s *Store) DeleteMandate(ctx context.Context, permission string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM mandates WHERE permission = $1`, permission)
	if err != nil {
		return errs.Wrap("delete mandate", err)
	}
	return errs.Affected(tag.RowsAffected(), "mandate")
}
