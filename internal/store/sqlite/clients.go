package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/capgate/capgate/internal/store"
)

const clientColumns = `id, name, key_hash, trust, never_ask, unix_uid, created, disabled, require_token`

// PutClient inserts a client; a taken ID, Name, KeyHash or UnixUID is ErrExists.
func (s *Store) PutClient(ctx context.Context, c store.Client) error {
	created, err := timeArg("client.Created", c.Created)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO clients (`+clientColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Name, c.KeyHash, c.Trust, b2i(c.NeverAsk), uidArg(c.UnixUID), created, b2i(c.Disabled), b2i(c.RequireToken))
		if isUnique(err) {
			return exists("client id, name, key hash or uid")
		}
		if err != nil {
			return fmt.Errorf("sqlite: put client: %w", err)
		}
		return nil
	})
}

// UpdateClient replaces every field of the client with c.ID; a missing client is
// ErrNotFound, and a Name, KeyHash or UnixUID taken by another client is ErrExists.
func (s *Store) UpdateClient(ctx context.Context, c store.Client) error {
	created, err := timeArg("client.Created", c.Created)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE clients SET name = ?, key_hash = ?, trust = ?,
				never_ask = ?, unix_uid = ?, created = ?, disabled = ?, require_token = ? WHERE id = ?`,
			c.Name, c.KeyHash, c.Trust, b2i(c.NeverAsk), uidArg(c.UnixUID), created, b2i(c.Disabled), b2i(c.RequireToken), c.ID)
		if isUnique(err) {
			return exists("client name, key hash or uid")
		}
		if err != nil {
			return fmt.Errorf("sqlite: update client: %w", err)
		}
		return checkAffected(res, "client")
	})
}

// SetClientDisabled disables or enables the client with the id.
func (s *Store) SetClientDisabled(ctx context.Context, id string, disabled bool) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE clients SET disabled = ? WHERE id = ?`, b2i(disabled), id)
		if err != nil {
			return fmt.Errorf("sqlite: set client disabled: %w", err)
		}
		return checkAffected(res, "client")
	})
}

// DeleteClient removes the client and revokes its tokens and every token derived from them,
// in one immediate transaction. Tokens already revoked keep their first revocation time.
func (s *Store) DeleteClient(ctx context.Context, id string, at time.Time) error {
	atArg, err := timeArg("at", at)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM clients WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete client: %w", err)
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
			WHERE revoked = 0 AND id IN (SELECT id FROM subtree)`, id, atArg)
		if err != nil {
			return fmt.Errorf("sqlite: delete client: revoke its tokens: %w", err)
		}
		return nil
	})
}

// GetClient returns the client with the id.
func (s *Store) GetClient(ctx context.Context, id string) (store.Client, error) {
	return s.oneClient(ctx, `WHERE id = ?`, id)
}

// ClientByKeyHash returns the client whose key has the hash; the empty hash is nobody's.
func (s *Store) ClientByKeyHash(ctx context.Context, keyHash string) (store.Client, error) {
	if keyHash == "" {
		return store.Client{}, notFound("client")
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
	c, err := scanClient(s.queryRow(ctx, `SELECT `+clientColumns+` FROM clients `+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Client{}, notFound("client")
	}
	if err != nil {
		return store.Client{}, fmt.Errorf("sqlite: get client: %w", err)
	}
	return c, nil
}

// ListClients returns every client ordered by Name.
func (s *Store) ListClients(ctx context.Context) ([]store.Client, error) {
	rows, err := s.query(ctx, `SELECT `+clientColumns+` FROM clients ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list clients: %w", err)
	}
	defer rows.Close()
	var out []store.Client
	for rows.Next() {
		c, err := scanClient(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list clients: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list clients: %w", err)
	}
	return out, nil
}

func uidArg(uid *int) sql.NullInt64 {
	if uid == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*uid), Valid: true}
}

func scanClient(r scanner) (store.Client, error) {
	var c store.Client
	var neverAsk, disabled, requireToken int
	var uid, created sql.NullInt64
	if err := r.Scan(&c.ID, &c.Name, &c.KeyHash, &c.Trust, &neverAsk, &uid, &created, &disabled, &requireToken); err != nil {
		return store.Client{}, err
	}
	c.NeverAsk = neverAsk != 0
	c.Disabled = disabled != 0
	c.RequireToken = requireToken != 0
	if uid.Valid {
		u := int(uid.Int64)
		c.UnixUID = &u
	}
	c.Created = timeCol(created)
	return c, nil
}
