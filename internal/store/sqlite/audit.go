package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/capgate/capgate/internal/store"
)

// AppendAudit appends entries, all or none, in one immediate transaction: the first must
// follow the head (Seq head+1, PrevHash the head's Hash; Seq 1 and "" on an empty log) and
// each next one the one before, else ErrConflict and nothing is written.
func (s *Store) AppendAudit(ctx context.Context, entries []store.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	ats := make([]sql.NullInt64, len(entries))
	for i, e := range entries {
		at, err := timeArg(fmt.Sprintf("entries[%d].At", i), e.At)
		if err != nil {
			return err
		}
		ats[i] = at
		if i > 0 && (e.Seq != entries[i-1].Seq+1 || e.PrevHash != entries[i-1].Hash) {
			return fmt.Errorf("sqlite: append audit: entries[%d] does not follow entries[%d]: %w",
				i, i-1, store.ErrConflict)
		}
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var headSeq int64
		var headHash string
		err := s.txRow(ctx, tx, `SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1`).
			Scan(&headSeq, &headHash)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: append audit: %w", err)
		}
		if entries[0].Seq != headSeq+1 || entries[0].PrevHash != headHash {
			return fmt.Errorf("sqlite: append audit: entries[0] does not follow the head: %w", store.ErrConflict)
		}
		for i, e := range entries {
			// The store's prepared statement, so that a commit does not parse the INSERT again.
			if _, err := s.txExec(ctx, tx, insertAudit, e.Seq, e.PrevHash, e.Hash, ats[i], blobArg(e.Body)); err != nil {
				return fmt.Errorf("sqlite: append audit: entries[%d]: %w", i, err)
			}
		}
		return nil
	})
}

const insertAudit = `INSERT INTO audit_log (seq, prev_hash, hash, at, body) VALUES (?, ?, ?, ?, ?)`

// AuditHead returns the last entry, or ErrNotFound for an empty log.
func (s *Store) AuditHead(ctx context.Context) (store.AuditEntry, error) {
	e, err := scanAudit(s.db.QueryRowContext(ctx,
		`SELECT seq, prev_hash, hash, at, body FROM audit_log ORDER BY seq DESC LIMIT 1`))
	if errors.Is(err, sql.ErrNoRows) {
		return store.AuditEntry{}, notFound("audit head")
	}
	if err != nil {
		return store.AuditEntry{}, fmt.Errorf("sqlite: audit head: %w", err)
	}
	return e, nil
}

// AuditRange returns the entries with from <= Seq <= to (to 0: to the end), ordered by Seq,
// at most limit of them (0: no limit). A negative limit is an error.
func (s *Store) AuditRange(ctx context.Context, from, to int64, limit int) ([]store.AuditEntry, error) {
	if limit < 0 {
		return nil, errors.New("sqlite: audit range: negative limit")
	}
	lim := int64(limit)
	if limit == 0 {
		lim = -1 // SQLite: no limit
	}
	rows, err := s.query(ctx, `SELECT seq, prev_hash, hash, at, body FROM audit_log
		WHERE seq >= ? AND (? = 0 OR seq <= ?) ORDER BY seq LIMIT ?`, from, to, to, lim)
	if err != nil {
		return nil, fmt.Errorf("sqlite: audit range: %w", err)
	}
	defer rows.Close()
	var out []store.AuditEntry
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: audit range: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: audit range: %w", err)
	}
	return out, nil
}

// PutCheckpoint records a checkpoint; a Seq already checkpointed is ErrExists.
func (s *Store) PutCheckpoint(ctx context.Context, c store.Checkpoint) error {
	at, err := timeArg("checkpoint.At", c.At)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO audit_checkpoints (seq, head, at, body) VALUES (?, ?, ?, ?)`,
			c.Seq, c.Head, at, blobArg(c.Body))
		if isUnique(err) {
			return exists("checkpoint seq")
		}
		if err != nil {
			return fmt.Errorf("sqlite: put checkpoint: %w", err)
		}
		return nil
	})
}

// Checkpoints returns every checkpoint ordered by Seq.
func (s *Store) Checkpoints(ctx context.Context) ([]store.Checkpoint, error) {
	rows, err := s.query(ctx, `SELECT seq, head, at, body FROM audit_checkpoints ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: checkpoints: %w", err)
	}
	defer rows.Close()
	var out []store.Checkpoint
	for rows.Next() {
		var c store.Checkpoint
		var at sql.NullInt64
		if err := rows.Scan(&c.Seq, &c.Head, &at, &c.Body); err != nil {
			return nil, fmt.Errorf("sqlite: checkpoints: %w", err)
		}
		c.At = timeCol(at)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: checkpoints: %w", err)
	}
	return out, nil
}

func scanAudit(r scanner) (store.AuditEntry, error) {
	var e store.AuditEntry
	var at sql.NullInt64
	if err := r.Scan(&e.Seq, &e.PrevHash, &e.Hash, &at, &e.Body); err != nil {
		return store.AuditEntry{}, err
	}
	e.At = timeCol(at)
	return e, nil
}
