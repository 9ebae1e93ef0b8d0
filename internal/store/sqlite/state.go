package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// GetState returns the value of the app's key; a missing key is ErrNotFound. A value read
// before is served from memory while the state counter every process on the file shares has
// not moved (stateCache).
func (s *Store) GetState(ctx context.Context, appID, key string) ([]byte, error) {
	at, counted := s.changes.loadState()
	now := time.Now()
	if counted {
		if v, ok := s.states.get(appID, key, at, now); ok {
			if v == nil {
				return nil, errStateMissing
			}
			return v, nil
		}
	}
	var v []byte
	err := s.queryRow(ctx, `SELECT value FROM app_state WHERE app_id = ? AND key = ?`,
		appID, key).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows) && counted:
		s.states.put(appID, key, nil, at, now)
	case err == nil && counted:
		s.states.put(appID, key, store.StateValue(v), at, now)
	}
	if err != nil {
		return nil, errs.Row("get state", "state key", err)
	}
	return store.StateValue(v), nil
}

// errStateMissing is GetState's error for a key the cache knows is missing: made once, as
// errs.Row makes it for a read that finds no row.
var errStateMissing = errs.NotFound("state key")

// PutState sets the app's key to value; a nil value deletes the key (deleting a missing key
// is not an error). An empty, non-nil value is a value.
func (s *Store) PutState(ctx context.Context, appID, key string, value []byte) error {
	defer s.changes.addState()
	return s.writeQuiet(ctx, func(tx *sql.Tx) error {
		var err error
		if value == nil {
			_, err = s.txExec(ctx, tx, `DELETE FROM app_state WHERE app_id = ? AND key = ?`, appID, key)
		} else {
			_, err = s.txExec(ctx, tx, `INSERT INTO app_state (app_id, key, value) VALUES (?, ?, ?)
				ON CONFLICT (app_id, key) DO UPDATE SET value = excluded.value`, appID, key, value)
		}
		return errs.Wrap("put state", err)
	})
}

// CreateState sets the app's key to value when it has none; ErrExists when it has.
func (s *Store) CreateState(ctx context.Context, appID, key string, value []byte) error {
	if err := store.CheckCreate(value); err != nil {
		return errs.Wrap("create state", err)
	}
	defer s.changes.addState()
	return s.writeQuiet(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `INSERT INTO app_state (app_id, key, value) VALUES (?, ?, ?)
			ON CONFLICT (app_id, key) DO NOTHING`, appID, key, value)
		if err != nil {
			return errs.Wrap("create state", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return errs.Wrap("create state", err)
		}
		if n == 0 {
			return errs.Exists("state key")
		}
		return nil
	})
}

// ListState returns the app's keys that start with prefix, and their values. The prefix is
// matched byte for byte: no character in it is a wildcard.
func (s *Store) ListState(ctx context.Context, appID, prefix string) (map[string][]byte, error) {
	// A range on the primary key rather than LIKE, which would treat % and _ as wildcards
	// and ignore ASCII case.
	q := `SELECT key, value FROM app_state WHERE app_id = ? AND key >= ?`
	args := []any{appID, prefix}
	if hi, ok := prefixEnd(prefix); ok {
		q += ` AND key < ?`
		args = append(args, hi)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, errs.Wrap("list state", err)
	}
	defer rows.Close()
	out, err := store.CollectState(rows, prefix)
	return out, errs.Wrap("list state", err)
}

// prefixEnd is the least string greater than every string starting with prefix, if any:
// the prefix without its trailing 0xff bytes, last byte incremented.
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
