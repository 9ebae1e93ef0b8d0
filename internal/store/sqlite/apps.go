package sqlite

import (
	"context"
	"database/sql"

	"github.com/capgate/capgate/internal/store"
)

// PutApp inserts or replaces an app by AppID. An alias taken by another app is ErrExists.
func (s *Store) PutApp(ctx context.Context, a store.App) error {
	r, err := store.AppRowOf(a)
	if err != nil {
		return errs.Wrap("put app", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO apps (`+store.AppColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (app_id) DO UPDATE SET alias = excluded.alias, tier = excluded.tier,
				reason = excluded.reason, manifest = excluded.manifest,
				enabled = excluded.enabled, updated = excluded.updated`,
			r.Args(nulls{})...)
		if isUnique(err) {
			return errs.Exists("app alias")
		}
		return errs.Wrap("put app", err)
	})
}

// GetApp returns the app with the id.
func (s *Store) GetApp(ctx context.Context, appID string) (store.App, error) {
	return s.oneApp(ctx, `WHERE app_id = ?`, appID)
}

// AppByAlias returns the app with the alias; the empty alias is nobody's.
func (s *Store) AppByAlias(ctx context.Context, alias string) (store.App, error) {
	if alias == "" {
		return store.App{}, errs.NotFound("app")
	}
	return s.oneApp(ctx, `WHERE alias = ?`, alias)
}

func (s *Store) oneApp(ctx context.Context, where string, arg any) (store.App, error) {
	a, err := store.ScanApp(s.queryRow(ctx, `SELECT `+store.AppColumns+` FROM apps `+where, arg), nulls{})
	return a, errs.Row("get app", "app", err)
}

// ListApps returns every app ordered by AppID.
func (s *Store) ListApps(ctx context.Context) ([]store.App, error) {
	return list(ctx, s, nil, "list apps", store.ScanApp, `SELECT `+store.AppColumns+` FROM apps ORDER BY app_id`)
}

// SetAppEnabled enables or disables an app; a missing app is ErrNotFound.
func (s *Store) SetAppEnabled(ctx context.Context, appID string, enabled bool) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE apps SET enabled = ? WHERE app_id = ?`, enabled, appID)
		if err != nil {
			return errs.Wrap("set app enabled", err)
		}
		return checkAffected(res, "app")
	})
}

// DeleteApp deletes an app; a missing app is ErrNotFound. The app's state is kept.
func (s *Store) DeleteApp(ctx context.Context, appID string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM apps WHERE app_id = ?`, appID)
		if err != nil {
			return errs.Wrap("delete app", err)
		}
		return checkAffected(res, "app")
	})
}
