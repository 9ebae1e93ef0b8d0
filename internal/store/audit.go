package store

import (
	"errors"
	"fmt"
)

// AuditColumns are an audit entry's columns in both schemas, in the order ScanAudit reads
// them.
const AuditColumns = `seq, prev_hash, hash, at, body`

// CheckpointColumns are a checkpoint's columns in both schemas, in the order ScanCheckpoint
// reads them.
const CheckpointColumns = `seq, head, at, body`

// CheckAudit checks a batch for AppendAudit: every entry's At a time TimeCol holds, and each
// entry after the first following the one before (Seq one more, PrevHash its Hash), else
// ErrConflict naming the two, since a writer that built the batch badly must not append it.
// each, unless nil, is called with each entry's index and At column, so that a backend
// builds its arguments in the same pass.
func CheckAudit(entries []AuditEntry, each func(i int, at NullInt)) error {
	for i, e := range entries {
		at, ok := timeCol(e.At)
		if !ok {
			return outsideTimes(fmt.Sprintf("entries[%d].At", i))
		}
		if i > 0 && (e.Seq != entries[i-1].Seq+1 || e.PrevHash != entries[i-1].Hash) {
			return fmt.Errorf("entries[%d] does not follow entries[%d]: %w", i, i-1, ErrConflict)
		}
		if each != nil {
			each(i, at)
		}
	}
	return nil
}

// CheckHead is AppendAudit's rule for the first entry of a batch and the log's head (the zero
// AuditEntry for an empty log): it must follow it, else ErrConflict, as another writer
// appended first.
func CheckHead(head, first AuditEntry) error {
	if first.Seq != head.Seq+1 || first.PrevHash != head.Hash {
		return NotAtHead()
	}
	return nil
}

// NotAtHead is CheckHead's ErrConflict, for a backend that checks the head in its SQL.
func NotAtHead() error {
	return fmt.Errorf("entries[0] does not follow the head: %w", ErrConflict)
}

// CheckLimit checks AuditRange's limit: 0 is no limit, below 0 an error.
func CheckLimit(limit int) error {
	if limit < 0 {
		return errors.New("limit: must not be negative")
	}
	return nil
}

// ScanAudit reads a row of AuditColumns.
func ScanAudit(sc Scanner, n NullTypes) (AuditEntry, error) {
	var e AuditEntry
	var at NullInt
	if err := sc.Scan(&e.Seq, &e.PrevHash, &e.Hash, n.Int(&at), &e.Body); err != nil {
		return AuditEntry{}, err
	}
	e.At = at.Time()
	return e, nil
}

// CheckpointRow is a Checkpoint as its columns hold it: At as TimeCol has it, Body never nil.
type CheckpointRow struct {
	Seq  int64
	Head string
	At   NullInt
	Body []byte
}

// Args is r's columns in CheckpointColumns order, as the arguments of a statement of n's
// driver.
func (r CheckpointRow) Args(n NullTypes) []any {
	return []any{r.Seq, r.Head, n.IntArg(r.At), r.Body}
}

// CheckpointRowOf checks c as PutCheckpoint takes it and returns its columns: At a time
// TimeCol holds.
func CheckpointRowOf(c Checkpoint) (CheckpointRow, error) {
	at, err := TimeCol("checkpoint.At", c.At)
	if err != nil {
		return CheckpointRow{}, err
	}
	return CheckpointRow{Seq: c.Seq, Head: c.Head, At: at, Body: Blob(c.Body)}, nil
}

// ScanCheckpoint reads a row of CheckpointColumns.
func ScanCheckpoint(sc Scanner, n NullTypes) (Checkpoint, error) {
	var c Checkpoint
	var at NullInt
	if err := sc.Scan(&c.Seq, &c.Head, n.Int(&at), &c.Body); err != nil {
		return Checkpoint{}, err
	}
	c.At = at.Time()
	return c, nil
}
