package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/capgate/capgate/internal/store"
)

// AppendAudit appends entries, all or none, in one statement: the first must follow the head
// (Seq head+1, PrevHash the head's Hash; Seq 1 and "" on an empty log) and each next one the
// one before, else ErrConflict and nothing is written.
//
// The statement inserts the batch only if, as of its start, the head is the one entries[0]
// follows. Another writer that appended first shows either as a head that moved (nothing is
// inserted) or, when it committed after the statement began, as a duplicate Seq (the primary
// key refuses it, once that writer commits): both are ErrConflict, and the log stays without
// gaps or forks.
func (s *Store) AppendAudit(ctx context.Context, entries []store.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	args, err := auditArgs(entries)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO audit_log (`+store.AuditColumns+`)
		SELECT e.seq, e.prev_hash, e.hash, e.at, e.body
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bytea[])
			AS e (seq, prev_hash, hash, at, body)
		WHERE $6::bigint = coalesce((SELECT max(seq) FROM audit_log), 0) + 1
			AND $7::text = coalesce((SELECT hash FROM audit_log ORDER BY seq DESC LIMIT 1), '')`,
		append(args, entries[0].Seq, entries[0].PrevHash)...)
	if isUnique(err) {
		return errs.Wrap("append audit", appendedFirst())
	}
	if err != nil {
		return errs.Wrap("append audit", err)
	}
	if tag.RowsAffected() != int64(len(entries)) {
		return errs.Wrap("append audit", store.NotAtHead())
	}
	return nil
}

// appendedFirst is the ErrConflict of a batch the primary key refused: a writer that appended
// first committed while the statement ran.
func appendedFirst() error {
	return fmt.Errorf("another writer appended first: %w", store.ErrConflict)
}

// auditLockKey names the advisory lock sequenced writers of one schema's audit log take
// turns on; the schema's name is hashed into its key.
const auditLockKey = "capgate audit log "

var _ store.AuditSequencer = (*Store)(nil)

// AppendAuditSequenced appends what build makes of the head, with the head locked against
// every other sequenced writer, in two round trips: BEGIN, the transaction-scoped advisory
// lock and the head's read travel in one pipeline, the INSERT and COMMIT in a second. The lock
// is held from the first to the commit, so writers on several replicas take turns instead of
// racing; each turn appends a whole group commit. A writer that appends without the lock
// (AppendAudit) can still come first: the primary key then makes this ErrConflict.
func (s *Store) AppendAuditSequenced(ctx context.Context, build func(head store.AuditEntry) ([]store.AuditEntry, error)) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return errs.Wrap("append audit", err)
	}
	defer conn.Release()
	inTx := false
	defer func() {
		if err != nil && inTx {
			// A failed statement leaves the transaction aborted, and a cancelled context may
			// leave it open: end it, or the connection goes back to the pool holding the lock.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			defer cancel()
			if _, rerr := conn.Exec(rctx, "ROLLBACK"); rerr != nil {
				conn.Conn().Close(rctx) // the pool drops a closed connection
			}
		}
	}()

	var b pgx.Batch
	b.Queue("BEGIN")
	b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1 || current_schema(), 0))`, auditLockKey)
	b.Queue(`SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1`)
	br := conn.SendBatch(ctx, &b)
	inTx = true
	var head store.AuditEntry
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		err = br.QueryRow().Scan(&head.Seq, &head.Hash)
		if errors.Is(err, pgx.ErrNoRows) {
			head, err = store.AuditEntry{}, nil
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errs.Wrap("append audit: lock the head", err)
	}

	entries, err := build(head)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		_, err = conn.Exec(ctx, "COMMIT")
		inTx = err != nil
		return err
	}
	args, err := auditArgs(entries)
	if err != nil {
		return err
	}
	if err := store.CheckHead(head, entries[0]); err != nil {
		return errs.Wrap("append audit", err)
	}
	b = pgx.Batch{}
	b.Queue(`INSERT INTO audit_log (`+store.AuditColumns+`)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bytea[])`, args...)
	b.Queue("COMMIT")
	br = conn.SendBatch(ctx, &b)
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if isUnique(err) {
		return errs.Wrap("append audit", appendedFirst())
	}
	if err != nil {
		return errs.Wrap("append audit", err)
	}
	inTx = false
	return nil
}

// auditArgs checks that entries follow one another (store.CheckAudit) and returns them as
// the five arrays the INSERT ... unnest statements take.
func auditArgs(entries []store.AuditEntry) ([]any, error) {
	seqs := make([]int64, len(entries))
	prevs := make([]string, len(entries))
	hashes := make([]string, len(entries))
	ats := make([]pgtype.Int8, len(entries))
	bodies := make([][]byte, len(entries))
	err := store.CheckAudit(entries, func(i int, at store.NullInt) {
		e := entries[i]
		seqs[i], prevs[i], hashes[i], ats[i], bodies[i] = e.Seq, e.PrevHash, e.Hash, pgtype.Int8(at), store.Blob(e.Body)
	})
	if err != nil {
		return nil, errs.Wrap("append audit", err)
	}
	return []any{seqs, prevs, hashes, ats, bodies}, nil
}

// AuditHead returns the last entry, or ErrNotFound for an empty log.
func (s *Store) AuditHead(ctx context.Context) (store.AuditEntry, error) {
	e, err := store.ScanAudit(s.pool.QueryRow(ctx,
		`SELECT `+store.AuditColumns+` FROM audit_log ORDER BY seq DESC LIMIT 1`), nulls{})
	return e, errs.Row("audit head", "audit head", err)
}

// AuditRange returns the entries with from <= Seq <= to (to 0: to the end), ordered by Seq,
// at most limit of them (0: no limit). A negative limit is an error.
func (s *Store) AuditRange(ctx context.Context, from, to int64, limit int) ([]store.AuditEntry, error) {
	if err := store.CheckLimit(limit); err != nil {
		return nil, errs.Wrap("audit range", err)
	}
	lim := pgtype.Int8{Int64: int64(limit), Valid: limit > 0} // NULL: LIMIT ALL
	return list(ctx, s, "audit range", store.ScanAudit, `SELECT `+store.AuditColumns+` FROM audit_log
		WHERE seq >= $1::bigint AND ($2::bigint = 0 OR seq <= $2::bigint) ORDER BY seq LIMIT $3::bigint`, from, to, lim)
}

// PutCheckpoint records a checkpoint; a Seq already checkpointed is ErrExists.
func (s *Store) PutCheckpoint(ctx context.Context, c store.Checkpoint) error {
	r, err := store.CheckpointRowOf(c)
	if err != nil {
		return errs.Wrap("put checkpoint", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO audit_checkpoints (`+store.CheckpointColumns+`) VALUES ($1, $2, $3, $4)`,
		r.Args(nulls{})...)
	if isUnique(err) {
		return errs.Exists("checkpoint seq")
	}
	return errs.Wrap("put checkpoint", err)
}

// Checkpoints returns every checkpoint ordered by Seq.
func (s *Store) Checkpoints(ctx context.Context) ([]store.Checkpoint, error) {
	return list(ctx, s, "checkpoints", store.ScanCheckpoint,
		`SELECT `+store.CheckpointColumns+` FROM audit_checkpoints ORDER BY seq`)
}
