package postgres

import (
	"context"

	"github.com/capgate/capgate/internal/store"
)

// GetState returns the value of the app's key; a missing key is ErrNotFound.
func (s *Store) GetState(ctx context.Context, appID, key string) ([]byte, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM app_state WHERE app_id = $1 AND key = $2`,
		appID, key).Scan(&v)
	if err != nil {
		return nil, errs.Row("get state", "state key", err)
	}
	return store.StateValue(v), nil
}

// PutState sets the app's key to value; a nil value deletes the key (deleting a missing key
// is not an error). An empty, non-nil value is a value.
func (s *Store) PutState(ctx context.Context, appID, key string, value []byte) error {
	var err error
	if value == nil {
		_, err = s.pool.Exec(ctx, `DELETE FROM app_state WHERE app_id = $1 AND key = $2`, appID, key)
	} else {
		_, err = s.pool.Exec(ctx, `INSERT INTO app_state (app_id, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (app_id, key) DO UPDATE SET value = excluded.value`, appID, key, value)
	}
	return errs.Wrap("put state", err)
}

// CreateState sets the app's key to value when it has none; ErrExists when it has.
func (s *Store) CreateState(ctx context.Context, appID, key string, value []byte) error {
	if err := store.CheckCreate(value); err != nil {
		return errs.Wrap("create state", err)
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO app_state (app_id, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (app_id, key) DO NOTHING`, appID, key, value)
	if err != nil {
		return errs.Wrap("create state", err)
	}
	if tag.RowsAffected() == 0 {
		return errs.Exists("state key")
	}
	return nil
}

// ListState returns the app's keys that start with prefix, and their values. The prefix is
// matched byte for byte: no character in it is a wildcard.
func (s *Store) ListState(ctx context.Context, appID, prefix string) (map[string][]byte, error) {
	// starts_with rather than LIKE, which would treat % and _ as wildcards; key >= prefix
	// lets the primary key's index find the first one whatever the planner makes of
	// starts_with.
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM app_state
		WHERE app_id = $1 AND key >= $2 AND starts_with(key, $2)`, appID, prefix)
	if err != nil {
		return nil, errs.Wrap("list state", err)
	}
	defer rows.Close()
	out, err := store.CollectState(rows, prefix)
	return out, errs.Wrap("list state", err)
}
