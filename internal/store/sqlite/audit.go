package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

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
	if err := store.CheckAudit(entries, func(i int, at store.NullInt) { ats[i] = sql.NullInt64(at) }); err != nil {
		return errs.Wrap("append audit", err)
	}
	if len(entries) <= maxOneStatement {
		return s.appendOne(ctx, entries, ats)
	}
	return s.writeQuiet(ctx, func(tx *sql.Tx) error {
		var seq int64
		var hash string
		err := s.txRow(ctx, tx, `SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1`).Scan(&seq, &hash)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return errs.Wrap("append audit", err)
		}
		if err := store.CheckHead(store.AuditEntry{Seq: seq, Hash: hash}, entries[0]); err != nil {
			return errs.Wrap("append audit", err)
		}
		for i, e := range entries {
			// The store's prepared statement, so that a commit does not parse the INSERT again.
			if _, err := s.txExec(ctx, tx, insertAudit, e.Seq, e.PrevHash, e.Hash, ats[i], store.Blob(e.Body)); err != nil {
				return errs.Wrap("append audit", err)
			}
		}
		return nil
	})
}

const insertAudit = `INSERT INTO audit_log (` + store.AuditColumns + `) VALUES (?, ?, ?, ?, ?)`

// maxOneStatement is the largest batch appendOne writes; a larger one takes a transaction of
// one INSERT an entry.
const maxOneStatement = 16

// appendStatements are appendOne's statements, by batch size.
var appendStatements = func() []string {
	qs := make([]string, maxOneStatement+1)
	for n := 1; n <= maxOneStatement; n++ {
		var b strings.Builder
		b.WriteString(`INSERT INTO audit_log (` + store.AuditColumns + `) SELECT * FROM (VALUES `)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`(?, ?, ?, ?, ?)`)
		}
		// The head check in the statement itself: the log's last entry is the one entries[0]
		// follows (none, for the first), or nothing is inserted.
		b.WriteString(`) WHERE (SELECT seq FROM audit_log ORDER BY seq DESC LIMIT 1) IS ?
			AND (SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1) IS ?`)
		qs[n] = b.String()
	}
	return qs
}()

// appendOne appends a small batch in one statement, its own transaction, with the head
// checked in it: one statement to run rather than a transaction's five or more, which is most
// of what SQLite itself costs a call beside the commit's fsync.
func (s *Store) appendOne(ctx context.Context, entries []store.AuditEntry, ats []sql.NullInt64) error {
	args := make([]any, 0, 5*len(entries)+2)
	for i, e := range entries {
		args = append(args, e.Seq, e.PrevHash, e.Hash, ats[i], store.Blob(e.Body))
	}
	switch first := entries[0]; {
	case first.Seq == 1 && first.PrevHash != "":
		return errs.Wrap("append audit", store.NotAtHead()) // the empty log's head has no hash
	case first.Seq == 1:
		args = append(args, nil, nil) // an empty log
	default:
		args = append(args, first.Seq-1, first.PrevHash)
	}
	n, err := s.execQuiet(ctx, appendStatements[len(entries)], args...)
	switch {
	case isUnique(err):
		return errs.Wrap("append audit", store.NotAtHead())
	case err != nil:
		return errs.Wrap("append audit", err)
	case n != int64(len(entries)):
		return errs.Wrap("append audit", store.NotAtHead())
	}
	return nil
}

// AuditHead returns the last entry, or ErrNotFound for an empty log.
func (s *Store) AuditHead(ctx context.Context) (store.AuditEntry, error) {
	e, err := store.ScanAudit(s.db.QueryRowContext(ctx,
		`SELECT `+store.AuditColumns+` FROM audit_log ORDER BY seq DESC LIMIT 1`), nulls{})
	return e, errs.Row("audit head", "audit head", err)
}

// AuditRange returns the entries with from <= Seq <= to (to 0: to the end), ordered by Seq,
// at most limit of them (0: no limit). A negative limit is an error.
func (s *Store) AuditRange(ctx context.Context, from, to int64, limit int) ([]store.AuditEntry, error) {
	if err := store.CheckLimit(limit); err != nil {
		return nil, errs.Wrap("audit range", err)
	}
	lim := int64(limit)
	if limit == 0 {
		lim = -1 // SQLite: no limit
	}
	return list(ctx, s, nil, "audit range", store.ScanAudit, `SELECT `+store.AuditColumns+` FROM audit_log
		WHERE seq >= ? AND (? = 0 OR seq <= ?) ORDER BY seq LIMIT ?`, from, to, to, lim)
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
