package postgres

import (
	"context"

	"github.com/capgate/capgate/internal/store"
)

// PutApp inserts or replaces an app by AppID, in one statement. An alias taken by another app
// is ErrExists.
//
// INSERT ... ON CONFLICT settles a race on the app id alone: when another process inserts the
// same new app at the same moment, the alias index reports the other's row, the same app, as a
// taken alias. Once that insert commits, the statement run again finds the app and replaces
// it, so a unique violation is tried again, up to putAppAttempts times, before it is taken to
// mean another app's alias. Two such inserts can also each wait on the other's speculative
// row in the two unique indexes, and PostgreSQL then ends one of them as a deadlock: that
// statement, which changed nothing, is tried again too.
func (s *Store) PutApp(ctx context.Context, a store.App) error {
	r, err := store.AppRowOf(a)
	if err != nil {
		return errs.Wrap("put app", err)
	}
	for attempt := 1; ; attempt++ {
		_, err = s.pool.Exec(ctx, `INSERT INTO apps (`+store.AppColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (app_id) DO UPDATE SET alias = excluded.alias, tier = excluded.tier,
				reason = excluded.reason, manifest = excluded.manifest,
				enabled = excluded.enabled, updated = excluded.updated`,
			r.Args(nulls{})...)
		if (!isUnique(err) && !isDeadlock(err)) || attempt == putAppAttempts {
			break
		}
	}
	if isUnique(err) {
		return errs.Exists("app alias")
	}
	return errs.Wrap("put app", err)
}

// GetApp returns the app with the id.
func (s *Store) GetApp(ctx context.Context, appID string) (store.App, error) {
	return s.oneApp(ctx, `WHERE app_id = $1`, appID)
}

// AppByAlias returns the app with the alias; the empty alias is nobody's.
func (s *Store) AppByAlias(ctx context.Context, alias string) (store.App, error) {
	if alias == "" {
		return store.App{}, errs.NotFound("app")
	}
	return s.oneApp(ctx, `WHERE alias = $1`, alias)
}

func (s *Store) oneApp(ctx context.Context, where string, arg any) (store.App, error) {
	a, err := store.ScanApp(s.pool.QueryRow(ctx, `SELECT `+store.AppColumns+` FROM apps `+where, arg), nulls{})
	return a, errs.Row("get app", "app", err)
}

// ListApps returns every app ordered by AppID.
func (s *Store) ListApps(ctx context.Context) ([]store.App, error) {
	return list(ctx, s, "list apps", store.ScanApp, `SELECT `+store.AppColumns+` FROM apps ORDER BY app_id`)
}

// SetAppEnabled enables or disables an app; a missing app is ErrNotFound.
func (s *Store) SetAppEnabled(ctx context.Context, appID string, enabled bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE apps SET enabled = $1 WHERE app_id = $2`, enabled, appID)
	if err != nil {
		return errs.Wrap("set app enabled", err)
	}
	return errs.Affected(tag.RowsAffected(), "app")
}

// DeleteApp deletes an app; a missing app is ErrNotFound. The app's state is kept.
func (s *Store) DeleteApp(ctx context.Context, appID string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM apps WHERE app_id = $1`, appID)
	if err != nil {
		return errs.Wrap("delete app", err)
	}
	return errs.Affected(tag.RowsAffected(), "app")
}
