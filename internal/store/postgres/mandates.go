package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/capgate/capgate/internal/store"
)

const mandateColumns = `permission, autonomy, agreed_id, wording, agreed_at, updated`

// PutMandate inserts or replaces the mandate for m.Permission.
func (s *Store) PutMandate(ctx context.Context, m store.Mandate) error {
	var ts times
	agreed := ts.arg("mandate.AgreedAt", m.AgreedAt)
	updated := ts.arg("mandate.Updated", m.Updated)
	if ts.err != nil {
		return ts.err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO mandates (`+mandateColumns+`) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (permission) DO UPDATE SET autonomy = excluded.autonomy,
			agreed_id = excluded.agreed_id, wording = excluded.wording,
			agreed_at = excluded.agreed_at, updated = excluded.updated`,
		m.Permission, m.Autonomy, m.AgreedID, m.Wording, agreed, updated)
	if err != nil {
		return fmt.Errorf("postgres: put mandate: %w", err)
	}
	return nil
}

// GetMandate returns the mandate for the permission.
func (s *Store) GetMandate(ctx context.Context, permission string) (store.Mandate, error) {
	m, err := scanMandate(s.pool.QueryRow(ctx,
		`SELECT `+mandateColumns+` FROM mandates WHERE permission = $1`, permission))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Mandate{}, notFound("mandate")
	}
	if err != nil {
		return store.Mandate{}, fmt.Errorf("postgres: get mandate: %w", err)
	}
	return m, nil
}

// ListMandates returns every mandate ordered by Permission.
func (s *Store) ListMandates(ctx context.Context) ([]store.Mandate, error) {
	return list(ctx, s, "list mandates", scanMandate,
		`SELECT `+mandateColumns+` FROM mandates ORDER BY permission`)
}

// DeleteMandate deletes the mandate for the permission; a missing one is ErrNotFound.
func (s *Store) DeleteMandate(ctx context.Context, permission string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM mandates WHERE permission = $1`, permission)
	if err != nil {
		return fmt.Errorf("postgres: delete mandate: %w", err)
	}
	return checkAffected(tag, "mandate")
}

func scanMandate(r scanner) (store.Mandate, error) {
	var m store.Mandate
	var agreed, updated pgtype.Int8
	if err := r.Scan(&m.Permission, &m.Autonomy, &m.AgreedID, &m.Wording, &agreed, &updated); err != nil {
		return store.Mandate{}, err
	}
	m.AgreedAt = timeCol(agreed)
	m.Updated = timeCol(updated)
	return m, nil
}
