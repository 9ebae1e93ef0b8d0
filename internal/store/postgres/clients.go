package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/capgate/capgate/internal/store"
)

// PutClient inserts a client; a taken ID, Name, KeyHash or UnixUID is ErrExists.
func (s *Store) PutClient(ctx context.Context, c store.Client) error {
	r, err := store.ClientRowOf(c)
	if err != nil {
		return errs.Wrap("put client", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO clients (`+store.ClientColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		r.Args(nulls{})...)
	if isUnique(err) {
		return errs.Exists("client id, name, key hash or uid")
	}
	return errs.Wrap("put client", err)
}

// UpdateClient replaces every field of the client with c.ID; a missing client is
// ErrNotFound, and a Name, KeyHash or UnixUID taken by another client is ErrExists.
func (s *Store) UpdateClient(ctx context.Context, c store.Client) error {
	r, err := store.ClientRowOf(c)
	if err != nil {
		return errs.Wrap("update client", err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE clients SET name = $1, key_hash = $2, trust = $3,
			never_ask = $4, unix_uid = $5, created = $6, disabled = $7, require_token = $8, assistant = $9 WHERE id = $10`,
		r.UpdateArgs(nulls{})...)
	if isUnique(err) {
		return errs.Exists("client name, key hash or uid")
	}
	if err != nil {
		return errs.Wrap("update client", err)
	}
	return errs.Affected(tag.RowsAffected(), "client")
}

// SetClientDisabled disables or enables the client with the id, in one statement.
func (s *Store) SetClientDisabled(ctx context.Context, id string, disabled bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE clients SET disabled = $1 WHERE id = $2`, disabled, id)
	if err != nil {
		return errs.Wrap("set client disabled", err)
	}
	return errs.Affected(tag.RowsAffected(), "client")
}

// DeleteClient removes the client and revokes its tokens and every token derived from them,
// in one transaction. Each of its live tokens is revoked by capgate_revoke, which locks a
// token and then its descendants in the order capgate_take_use locks a chain, so that a use
// in progress and the removal queue rather than deadlock; tokens are taken oldest first, so
// that a parent comes before the tokens derived from it.
func (s *Store) DeleteClient(ctx context.Context, id string, at time.Time) error {
	atCol, err := store.TimeCol("at", at)
	if err != nil {
		return errs.Wrap("delete client", err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM clients WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if err := errs.Affected(tag.RowsAffected(), "client"); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT capgate_revoke(k.id, $2, $3) FROM (
				SELECT id FROM tokens WHERE client_id = $1 AND NOT revoked ORDER BY issued_at NULLS FIRST, id
			) k`, id, pgtype.Int8(atCol), store.MaxTokenDepth)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return errs.Wrap("delete client", err)
	}
	return err
}

// GetClient returns the client with the id.
func (s *Store) GetClient(ctx context.Context, id string) (store.Client, error) {
	return s.oneClient(ctx, `WHERE id = $1`, id)
}

// ClientByKeyHash returns the client whose key has the hash; the empty hash is nobody's.
func (s *Store) ClientByKeyHash(ctx context.Context, keyHash string) (store.Client, error) {
	if keyHash == "" {
		return store.Client{}, errs.NotFound("client")
	}
	return s.oneClient(ctx, `WHERE key_hash = $1`, keyHash)
}

// ClientByName returns the client with the name.
func (s *Store) ClientByName(ctx context.Context, name string) (store.Client, error) {
	return s.oneClient(ctx, `WHERE name = $1`, name)
}

// ClientByUID returns the client bound to the unix uid.
func (s *Store) ClientByUID(ctx context.Context, uid int) (store.Client, error) {
	return s.oneClient(ctx, `WHERE unix_uid = $1`, int64(uid))
}

func (s *Store) oneClient(ctx context.Context, where string, arg any) (store.Client, error) {
	c, err := store.ScanClient(s.pool.QueryRow(ctx, `SELECT `+store.ClientColumns+` FROM clients `+where, arg), nulls{})
	return c, errs.Row("get client", "client", err)
}

// ListClients returns every client ordered by Name.
func (s *Store) ListClients(ctx context.Context) ([]store.Client, error) {
	return list(ctx, s, "list clients", store.ScanClient, `SELECT `+store.ClientColumns+` FROM clients ORDER BY name`)
}
