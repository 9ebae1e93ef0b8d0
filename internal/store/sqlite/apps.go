package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/capgate/capgate/internal/store"
)

const appColumns = `app_id, alias, tier, reason, manifest, enabled, updated`

// PutApp inserts or replaces an app by AppID. An alias taken by another app is ErrExists.
func (s *Store) PutApp(ctx context.Context, a store.App) error {
	updated, err := timeArg("app.Updated", a.Updated)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO apps (`+appColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (app_id) DO UPDATE SET alias = excluded.alias, tier = excluded.tier,
				reason = excluded.reason, manifest = excluded.manifest,
				enabled = excluded.enabled, updated = excluded.updated`,
			a.AppID, a.Alias, a.Tier, a.Reason, blobArg(a.Manifest), b2i(a.Enabled), updated)
		if isUnique(err) {
			return exists("app alias")
		}
		if err != nil {
			return fmt.Errorf("sqlite: put app: %w", err)
		}
		return nil
	})
}

// GetApp returns the app with the id.
func (s *Store) GetApp(ctx context.Context, appID string) (store.App, error) {
	return s.oneApp(ctx, `WHERE app_id = ?`, appID)
}

// AppByAlias returns the app with the alias; the empty alias is nobody's.
func (s *Store) AppByAlias(ctx context.Context, alias string) (store.App, error) {
	if alias == "" {
		return store.App{}, notFound("app")
	}
	return s.oneApp(ctx, `WHERE alias = ?`, alias)
}

func (s *Store) oneApp(ctx context.Context, where string, arg any) (store.App, error) {
	a, err := scanApp(s.queryRow(ctx, `SELECT `+appColumns+` FROM apps `+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return store.App{}, notFound("app")
	}
	if err != nil {
		return store.App{}, fmt.Errorf("sqlite: get app: %w", err)
	}
	return a, nil
}

// ListApps returns every app ordered by AppID.
func (s *Store) ListApps(ctx context.Context) ([]store.App, error) {
	rows, err := s.query(ctx, `SELECT `+appColumns+` FROM apps ORDER BY app_id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list apps: %w", err)
	}
	defer rows.Close()
	var out []store.App
	for rows.Next() {
		a, err := scanApp(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list apps: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list apps: %w", err)
	}
	return out, nil
}

// SetAppEnabled enables or disables an app; a missing app is ErrNotFound.
func (s *Store) SetAppEnabled(ctx context.Context, appID string, enabled bool) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE apps SET enabled = ? WHERE app_id = ?`, b2i(enabled), appID)
		if err != nil {
			return fmt.Errorf("sqlite: set app enabled: %w", err)
		}
		return checkAffected(res, "app")
	})
}

// DeleteApp deletes an app; a missing app is ErrNotFound. The app's state is kept.
func (s *Store) DeleteApp(ctx context.Context, appID string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM apps WHERE app_id = ?`, appID)
		if err != nil {
			return fmt.Errorf("sqlite: delete app: %w", err)
		}
		return checkAffected(res, "app")
	})
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

func scanApp(r scanner) (store.App, error) {
	var a store.App
	var enabled int
	var updated sql.NullInt64
	if err := r.Scan(&a.AppID, &a.Alias, &a.Tier, &a.Reason, &a.Manifest, &enabled, &updated); err != nil {
		return store.App{}, err
	}
	a.Enabled = enabled != 0
	a.Updated = timeCol(updated)
	return a, nil
}
