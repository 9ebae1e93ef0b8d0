package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO mandates (`+mandateColumns+`) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (permission) DO UPDATE SET autonomy = excluded.autonomy,
				agreed_id = excluded.agreed_id, wording = excluded.wording,
				agreed_at = excluded.agreed_at, updated = excluded.updated`,
			m.Permission, m.Autonomy, m.AgreedID, m.Wording, agreed, updated)
		if err != nil {
			return fmt.Errorf("sqlite: put mandate: %w", err)
		}
		return nil
	})
}

// GetMandate returns the mandate for the permission.
func (s *Store) GetMandate(ctx context.Context, permission string) (store.Mandate, error) {
	m, err := scanMandate(s.db.QueryRowContext(ctx,
		`SELECT `+mandateColumns+` FROM mandates WHERE permission = ?`, permission))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Mandate{}, notFound("mandate")
	}
	if err != nil {
		return store.Mandate{}, fmt.Errorf("sqlite: get mandate: %w", err)
	}
	return m, nil
}

// ListMandates returns every mandate ordered by Permission.
func (s *Store) ListMandates(ctx context.Context) ([]store.Mandate, error) {
	rows, err := s.query(ctx, `SELECT `+mandateColumns+` FROM mandates ORDER BY permission`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list mandates: %w", err)
	}
	defer rows.Close()
	var out []store.Mandate
	for rows.Next() {
		m, err := scanMandate(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list mandates: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list mandates: %w", err)
	}
	return out, nil
}

// DeleteMandate deletes the mandate for the permission; a missing one is ErrNotFound.
func (s *Store) DeleteMandate(ctx context.Context, permission string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM mandates WHERE permission = ?`, permission)
		if err != nil {
			return fmt.Errorf("sqlite: delete mandate: %w", err)
		}
		return checkAffected(res, "mandate")
	})
}

func scanMandate(r scanner) (store.Mandate, error) {
	var m store.Mandate
	var agreed, updated sql.NullInt64
	if err := r.Scan(&m.Permission, &m.Autonomy, &m.AgreedID, &m.Wording, &agreed, &updated); err != nil {
		return store.Mandate{}, err
	}
	m.AgreedAt = timeCol(agreed)
	m.Updated = timeCol(updated)
	return m, nil
}
