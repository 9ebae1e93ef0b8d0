package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/capgate/capgate/internal/store"
)

// Before the folder of segments, the audit log of a SQLite store was the audit_log table,
// filled from a journal file beside the database (the database's path and
// legacyJournalSuffix) whose frames were the appends, the journal emptied once the table held
// them. The frames are those of the segments. At the first open by this code the log is moved:
// the table's rows, then the journal's frames past them, written into segments in a new
// folder, synced, and the folder renamed into place; only then are the journal removed and
// the table emptied. A crash before the rename leaves the old log as it was (the half-made
// folder is made again); after it, the next open finishes the removal.

// legacyJournalSuffix names the journal of a database from before the folder.
const legacyJournalSuffix = "-audit"

// legacyPage is how many rows of audit_log the move reads at a time.
const legacyPage = 4096

// moveLegacy moves a log from before the folder into one, or makes an empty folder, under the
// log's file lock; a folder already there is the log.
func (l *auditLog) moveLegacy(ctx context.Context) error {
	if err := flock(ctx, l.lockf); err != nil {
		return err
	}
	defer func() { _ = unix.Flock(int(l.lockf.Fd()), unix.LOCK_UN) }()
	journal := l.s.path + legacyJournalSuffix
	_, jerr := os.Stat(journal)
	hasJournal := jerr == nil
	var rows int64
	if err := l.s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM audit_log LIMIT 1)`).Scan(&rows); err != nil {
		return errs.Wrap("audit log: the table of the log before its folder", err)
	}
	if _, err := os.Stat(l.dir); err == nil {
		if hasJournal || rows > 0 {
			// Left by a move that ended after the folder was in place.
			return l.dropLegacy(ctx, journal)
		}
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("audit log: %w", err)
	}
	if !hasJournal && rows == 0 {
		if err := os.Mkdir(l.dir, 0o700); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		return syncDir(filepath.Dir(l.dir))
	}
	tmp := l.dir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	w, err := newSegmentWriter(tmp)
	if err != nil {
		return err
	}
	if err := l.copyLegacy(ctx, w, journal, hasJournal); err != nil {
		w.abandon()
		return err
	}
	if err := w.close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, l.dir); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if err := syncDir(filepath.Dir(l.dir)); err != nil {
		return err
	}
	return l.dropLegacy(ctx, journal)
}

// copyLegacy writes the rows of audit_log, then the journal's entries past them, to w.
func (l *auditLog) copyLegacy(ctx context.Context, w *segmentWriter, journal string, hasJournal bool) error {
	for after := int64(0); ; {
		page, err := list(ctx, l.s, nil, "audit log: the table of the log before its folder", store.ScanAudit,
			`SELECT `+store.AuditColumns+` FROM audit_log WHERE seq > ? ORDER BY seq LIMIT ?`, after, legacyPage)
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := w.add(e); err != nil {
				return err
			}
		}
		if len(page) < legacyPage {
			break
		}
		after = page[len(page)-1].Seq
	}
	if !hasJournal {
		return nil
	}
	f, err := os.Open(journal)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	r := frameReader{f: f, end: -1}
	var entries []store.AuditEntry
	for {
		b, at, status, err := r.next()
		if err != nil {
			return err
		}
		if status == frameEnd {
			return nil
		}
		var ok bool
		if entries, _, ok = decodeFrameInto(entries[:0], b); status == frameBad || !ok {
			// A frame cut short by a crash was never acknowledged; one with frames after
			// it is damage, and the log is left where it is.
			if next, ok := r.followedByFrame(at); ok && !next {
				return nil
			}
			return fmt.Errorf("%w: %s: the frame at byte %d fails its checks; the log was not moved into %s", ErrAuditDamaged, journal, at, l.dir)
		}
		for _, e := range entries {
			if e.Seq <= w.last.Seq {
				continue // in the table already
			}
			if err := w.add(e); err != nil {
				return err
			}
		}
	}
}

// followedByFrame reports whether a frame follows the one at off, whose claimed length is
// read again; false, false when the length cannot be read.
func (r *frameReader) followedByFrame(off int64) (followed, ok bool) {
	var head [4]byte
	if _, err := r.f.ReadAt(head[:], off); err != nil {
		return false, false
	}
	n := int64(binary.BigEndian.Uint32(head[:]))
	if n > maxFrame {
		return false, true
	}
	if _, err := r.f.ReadAt(head[:], off+frameHeader+n); err != nil {
		return false, true // the file ends: nothing follows
	}
	return head != [4]byte{}, true
}

// dropLegacy removes the log from before the folder, which the folder holds.
func (l *auditLog) dropLegacy(ctx context.Context, journal string) error {
	if err := l.s.writeQuiet(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM audit_log`)
		return errs.Wrap("audit log: empty the table of the log before its folder", err)
	}); err != nil {
		return err
	}
	if err := os.Remove(journal); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("audit log: %w", err)
	}
	return syncDir(filepath.Dir(journal))
}

// segmentWriter writes a whole log into segments of a new folder: the entries in seq order,
// each run of the chain framed, a new segment past segmentBytes, every file and the folder
// synced at close.
type segmentWriter struct {
	dir   string
	f     *os.File
	size  int64
	batch []store.AuditEntry
	bytes int
	last  store.AuditEntry
}

// segmentWriterBatch is how many bytes of entries a frame of a segmentWriter holds at most.
const segmentWriterBatch = 256 << 10

func newSegmentWriter(dir string) (*segmentWriter, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return &segmentWriter{dir: dir}, nil
}

// add writes e after the entries before it: its seq must be one more (the log has no gap).
// An entry whose previous hash is not the hash before it starts a frame of its own, so that a
// log as it was, edits and all, is kept for verify to judge.
func (w *segmentWriter) add(e store.AuditEntry) error {
	if e.Seq != w.last.Seq+1 {
		return fmt.Errorf("%w: the log lacks seq %d (seq %d follows %d)", ErrAuditDamaged, w.last.Seq+1, e.Seq, w.last.Seq)
	}
	if len(w.batch) > 0 && (e.PrevHash != w.last.Hash || w.bytes >= segmentWriterBatch) {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if _, err := store.TimeCol("", e.At); err != nil {
		return fmt.Errorf("audit log: entry %d: its time is outside what the log holds", e.Seq)
	}
	w.batch = append(w.batch, e)
	w.bytes += len(e.Body) + len(e.Hash) + len(e.PrevHash)
	w.last = e
	return nil
}

// flush writes the entries waiting as one frame.
func (w *segmentWriter) flush() error {
	if len(w.batch) == 0 {
		return nil
	}
	if w.f == nil || w.size >= segmentBytes {
		if err := w.closeFile(); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(w.dir, segmentName(w.batch[0].Seq)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		w.f, w.size = f, 0
	}
	frame, err := encodeFrame(w.batch)
	if err != nil {
		return err
	}
	if _, err := w.f.WriteAt(frame, w.size); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	w.size += int64(len(frame))
	w.batch, w.bytes = w.batch[:0], 0
	return nil
}

// closeFile syncs and closes the segment being written.
func (w *segmentWriter) closeFile() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
}

// close writes what waits, syncs every file and the folder.
func (w *segmentWriter) close() error {
	if err := w.flush(); err != nil {
		return err
	}
	if err := w.closeFile(); err != nil {
		return err
	}
	return syncDir(w.dir)
}

// abandon removes what w wrote.
func (w *segmentWriter) abandon() {
	if w.f != nil {
		w.f.Close()
	}
	os.RemoveAll(w.dir)
}
