package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// PutClient inserts a client; a taken ID, Name, KeyHash or UnixUID is ErrExists.
func (s *Store) PutClient(ctx context.Context, c store.Client) error {
	r, err := store.ClientRowOf(c)
	if err != nil {
		return errs.Wrap("put client", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO clients (`+store.ClientColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Args(nulls{})...)
		if isUnique(err) {
			return errs.Exists("client id, name, key hash or uid")
		}
		return errs.Wrap("put client", err)
	})
}

// UpdateClient replaces every field of the client with c.ID; a missing client is
// ErrNotFound, and a Name, KeyHash or UnixUID taken by another client is ErrExists.
func (s *Store) UpdateClient(ctx context.Context, c store.Client) error {
	r, err := store.ClientRowOf(c)
	if err != nil {
		return errs.Wrap("update client", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE clients SET name = ?, key_hash = ?, trust = ?,
				never_ask = ?, unix_uid = ?, created = ?, disabled = ?, require_token = ?, assistant = ? WHERE id = ?`,
			r.UpdateArgs(nulls{})...)
		if isUnique(err) {
			return errs.Exists("client name, key hash or uid")
		}
		if err != nil {
			return errs.Wrap("update client", err)
		}
		return checkAffected(res, "client")
	})
}

// SetClientDisabled disables or enables the client with the id.
func (s *Store) SetClientDisabled(ctx context.Context, id string, disabled bool) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE clients SET disabled = ? WHERE id = ?`, disabled, id)
		if err != nil {
			return errs.Wrap("set client disabled", err)
		}
		return checkAffected(res, "client")
	})
}

// DeleteClient removes the client and revokes its tokens and every token derived from them,
// in one immediate transaction. Tokens already revoked keep their first revocation time.
func (s *Store) DeleteClient(ctx context.Context, id string, at time.Time) error {
	atCol, err := store.TimeCol("at", at)
	if err != nil {
		return errs.Wrap("delete client", err)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM clients WHERE id = ?`, id)
		if err != nil {
			return errs.Wrap("delete client", err)
		}
		if err := checkAffected(res, "client"); err != nil {
			return err
		}
		_, err = s.txExec(ctx, tx, `
			WITH RECURSIVE subtree(id) AS (
				SELECT id FROM tokens WHERE client_id = ?
				UNION
				SELECT t.id FROM tokens t JOIN subtree ON t.parent_id = subtree.id
			)
			UPDATE tokens SET revoked = 1, revoked_at = ?
			WHERE revoked = 0 AND id IN (SELECT id FROM subtree)`, id, sql.NullInt64(atCol))
		return errs.Wrap("delete client: revoke its tokens", err)
	})
}

// GetClient returns the client with the id.
func (s *Store) GetClient(ctx context.Context, id string) (store.Client, error) {
	return s.oneClient(ctx, `WHERE id = ?`, id)
}

// ClientByKeyHash returns the client whose key has the hash; the empty hash is nobody's.
func (s *Store) ClientByKeyHash(ctx context.Context, keyHash string) (store.Client, error) {
	if keyHash == "" {
		return store.Client{}, errs.NotFound("client")
	}
	return s.oneClient(ctx, `WHERE key_hash = ?`, keyHash)
}

// ClientByName returns the client with the name.
func (s *Store) ClientByName(ctx context.Context, name string) (store.Client, error) {
	return s.oneClient(ctx, `WHERE name = ?`, name)
}

// ClientByUID returns the client bound to the unix uid.
func (s *Store) ClientByUID(ctx context.Context, uid int) (store.Client, error) {
	return s.oneClient(ctx, `WHERE unix_uid = ?`, uid)
}

func (s *Store) oneClient(ctx context.Context, where string, arg any) (store.Client, error) {
	c, err := store.ScanClient(s.queryRow(ctx, `SELECT `+store.ClientColumns+` FROM clients `+where, arg), nulls{})
	return c, errs.Row("get client", "client", err)
}

// ListClients returns every client ordered by Name.
func (s *Store) ListClients(ctx context.Context) ([]store.Client, error) {
	return list(ctx, s, nil, "list clients", store.ScanClient, `SELECT `+store.ClientColumns+` FROM clients ORDER BY name`)
}
