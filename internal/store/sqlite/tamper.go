package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capgate/capgate/internal/store"
)

// RewriteAuditUnsafe replaces the audit log of the database at path with what edit returns
// for its entries (the tail cut, a body changed, the frames and their checksums made anew):
// what someone holding the data folder can do, for tests of what `capgate audit verify` and
// the approval page then find. The entries edit returns must run from seq 1 without a gap.
// It takes the log's lock, as an append does, and puts a new folder in place of the old: a
// store that has the database open reads the new log at its next look. It holds the whole log
// in memory.
func RewriteAuditUnsafe(path string, edit func([]store.AuditEntry) []store.AuditEntry) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	l := &auditLog{dir: abs + auditLogSuffix, lockPath: abs + auditLockSuffix}
	if l.lockf, err = os.OpenFile(l.lockPath, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return err
	}
	defer l.close()
	ctx := context.Background()
	l.mu.Lock()
	defer l.mu.Unlock()
	unlock, err := l.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	// The log as it is under the lock, so that no append of another process is lost.
	entries, err := readSegments(ctx, l.segs, l.size, l.last.Seq, 1, 0, 0)
	if err != nil {
		return err
	}
	entries = edit(entries)
	tmp := l.dir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	w, err := newSegmentWriter(tmp)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := w.add(e); err != nil {
			w.abandon()
			return fmt.Errorf("rewrite the audit log: %w", err)
		}
	}
	if err := w.close(); err != nil {
		w.abandon()
		return err
	}
	l.forget()
	old := l.dir + ".old"
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	if err := os.Rename(l.dir, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, l.dir); err != nil {
		return err
	}
	// Every store on the database reads the new folder at its next look.
	if _, err := l.count(1); err != nil {
		return err
	}
	return os.RemoveAll(old)
}
