package sqlite

import (
	"context"
	"database/sql"

	"github.com/capgate/capgate/internal/store"
)

// AppendAudit appends entries, all or none, as one frame of the audit log, synced: the first
// must follow the head (Seq head+1, PrevHash the head's Hash; Seq 1 and "" on an empty log)
// and each next one the one before, else ErrConflict and nothing is written.
func (s *Store) AppendAudit(ctx context.Context, entries []store.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := store.CheckAudit(entries, nil); err != nil {
		return errs.Wrap("append audit", err)
	}
	if err := s.alog.append(ctx, entries); err != nil {
		return errs.Wrap("append audit", err)
	}
	return nil
}

// AuditHead returns the last entry, or ErrNotFound for an empty log.
func (s *Store) AuditHead(ctx context.Context) (store.AuditEntry, error) {
	e, err := s.alog.head(ctx)
	if err == store.ErrNotFound {
		return e, errs.NotFound("audit head")
	}
	return e, errs.Wrap("audit head", err)
}

// AuditRange returns the entries with from <= Seq <= to (to 0: to the end), ordered by Seq,
// at most limit of them (0: no limit). A negative limit is an error.
func (s *Store) AuditRange(ctx context.Context, from, to int64, limit int) ([]store.AuditEntry, error) {
	if err := store.CheckLimit(limit); err != nil {
		return nil, errs.Wrap("audit range", err)
	}
	es, err := s.alog.read(ctx, from, to, limit)
	return es, errs.Wrap("audit range", err)
}

// PutCheckpoint records a checkpoint; a Seq already checkpointed is ErrExists.
func (s *Store) PutCheckpoint(ctx context.Context, c store.Checkpoint) error {
	r, err := store.CheckpointRowOf(c)
	if err != nil {
		return errs.Wrap("put checkpoint", err)
	}
	return s.writeQuiet(ctx, func(tx *sql.Tx) error {
		_, err := s.txExec(ctx, tx, `INSERT INTO audit_checkpoints (`+store.CheckpointColumns+`) VALUES (?, ?, ?, ?)`,
			r.Args(nulls{})...)
		if isUnique(err) {
			return errs.Exists("checkpoint seq")
		}
		return errs.Wrap("put checkpoint", err)
	})
}

// Checkpoints returns every checkpoint ordered by Seq.
func (s *Store) Checkpoints(ctx context.Context) ([]store.Checkpoint, error) {
	return list(ctx, s, nil, "checkpoints", store.ScanCheckpoint,
		`SELECT `+store.CheckpointColumns+` FROM audit_checkpoints ORDER BY seq`)
}
