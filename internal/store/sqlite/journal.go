package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capgate/capgate/internal/store"
)

// The audit journal is the audit chain's durable copy: AppendAudit writes each batch to it as
// one frame and syncs it, and that is the append; the audit_log table is an index filled from
// the journal off the call path (many batches a transaction, without a sync of its own,
// indexDelay after an append or once indexBatch entries wait) and before any read of entries
// it lacks, by whichever process reads (a read of entries the index holds needs no run). So
// an append costs one write and one sync, not a SQLite transaction's work beside its sync.
//
// The journal is the file beside the database named by its path and journalSuffix (mode
// 0600). Every process on the database appends to it under an exclusive lock of the file
// (flock), taking the log's head from the journal (and, when it is empty, from the index),
// so the chain stays single across processes; a frame is a whole batch, so a batch is in
// the log whole or not at all. Once the index holds every frame (what still waits is indexed
// under the lock) and has been synced, the journal is replaced by an empty one (when it
// grows past journalRotateBytes, and at Close), under the lock of the file it replaces: a
// process that then takes that lock sees that the path names another file and opens it.
//
// The frames are followed by zeros: the journal grows a megabyte at a time (journalGrow),
// zeros written and synced ahead, so that an append overwrites blocks the file has and its
// sync changes none of the file's metadata. A length of zero ends the frames.
//
// After a crash: a frame cut short at the end of the frames was never acknowledged (its sync
// did not return) and is zeroed at the next lock; a frame that fails its checks with another
// frame after it is damage, which every append and read of the log then reports
// (ErrJournalDamaged), naming the file and offset; frames the index lacks are indexed at the
// next open or read.
//
// A frame: its payload's length (uint32, big-endian), the payload's CRC-32C, and the
// payload: the entry count (uint32), then each entry's seq (int64), time (a byte, 1 when
// set, and int64 Unix nanoseconds), previous hash, hash and body (each a uint32 length and
// the bytes).

// journalSuffix names the journal beside the database file.
const journalSuffix = "-audit"

const (
	// maxJournalFrame bounds a frame: a batch of the audit writer's largest records.
	maxJournalFrame = 64 << 20
	// journalLockPoll bounds the wait between tries of a journal lock held elsewhere.
	journalLockPoll = time.Millisecond
	// journalGrow is how much the journal grows at a time, in zeros written and synced ahead
	// of the frames: a frame then overwrites blocks the file already has, and its sync
	// changes none of the file's metadata, which costs a third less than a sync that grows
	// the file.
	journalGrow = 1 << 20
)

// Variables so that tests can change them.
var (
	// journalRotateBytes is the size of frames past which the journal, once indexed, is
	// replaced by an empty one.
	journalRotateBytes int64 = 8 << 20
	// indexDelay is how long the indexer lets appends gather after the first before it
	// indexes them, so that an index transaction holds many batches; it indexes sooner once
	// indexBatch entries wait. An index transaction costs about as much CPU as the appends
	// of a few calls (250 µs here), so that a short delay under a light load (one call at a
	// time, every 2 ms) made indexing cost more than the appends themselves.
	indexDelay = 100 * time.Millisecond
	// indexBatch is how many waiting entries start an index run before indexDelay is up.
	indexBatch = 512
	// maxPending bounds the entries kept in memory for the index; past it (an index that
	// cannot be written for long), the rest are read from the journal again once it can.
	maxPending = 1 << 16
)

// ErrJournalDamaged is the error of every append and read of a log whose journal holds a
// damaged frame before its end.
var ErrJournalDamaged = errors.New("the audit journal is damaged")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type journal struct {
	s    *Store
	path string

	mu    sync.Mutex // this process's appenders, indexers and readers; the flock holds off others
	f     *os.File
	ino   uint64
	size  int64 // the end of the last valid frame seen
	alloc int64 // the file's size: frames, then zeros
	// last is the log's head: the journal's last entry, or the index's head when the journal
	// holds none (Seq 0: an empty log).
	last store.AuditEntry
	// pending are the journal's entries with seq above indexed, in order; with overflow set,
	// only the first of them (maxPending), the rest in the journal alone.
	pending  []store.AuditEntry
	overflow bool
	indexed  int64 // the highest seq this process knows the index holds
	damaged  error

	indexMu  sync.Mutex // one index run at a time in this process
	closed   bool       // under mu: every use after close is an error
	once     sync.Once
	closeErr error
	kick     chan struct{}
	full     chan struct{} // indexBatch entries wait
	stop     chan struct{}
	done     chan struct{}
}

// openJournal opens the journal of s, indexes what the index lacks (after a crash) and starts
// the indexer.
func (s *Store) openJournal(ctx context.Context) error {
	j := &journal{s: s, path: s.path + journalSuffix, kick: make(chan struct{}, 1), full: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.journal = j
	if err := j.index(ctx); err != nil {
		return err
	}
	go j.run()
	return nil
}

// run is the indexer: after an append, it waits indexDelay for more, or until indexBatch
// entries wait, then indexes them.
func (j *journal) run() {
	defer close(j.done)
	wait := time.NewTimer(indexDelay)
	wait.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-j.kick:
		}
		wait.Reset(indexDelay)
		select {
		case <-j.stop:
			wait.Stop()
			return
		case <-wait.C:
		case <-j.full:
			wait.Stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), BusyTimeout)
		_ = j.index(ctx) // a failure is the next read's to report; the journal keeps the entries
		_ = j.growAhead(ctx)
		cancel()
	}
}

// close stops the indexer, indexes what is left and, when the index holds it all, empties the
// journal.
func (j *journal) close() error {
	j.once.Do(func() {
		close(j.stop)
		<-j.done
		ctx, cancel := context.WithTimeout(context.Background(), BusyTimeout)
		defer cancel()
		err := j.index(ctx)
		if err == nil {
			err = j.rotate(ctx, true)
		}
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.f != nil {
			j.f.Close()
			j.f = nil
		}
		j.closed, j.closeErr = true, err
	})
	return j.closeErr
}

// lock takes the journal's file lock, opening the file when needed, and brings the journal's
// state up to date with the file: what other processes appended, or another file put in its
// place. j.mu is held. unlock releases the file lock.
func (j *journal) lock(ctx context.Context) (unlock func(), err error) {
	for attempt := 0; ; attempt++ {
		if j.closed {
			return nil, errors.New("the store is closed")
		}
		if j.f == nil {
			f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				return nil, fmt.Errorf("audit journal: %w", err)
			}
			j.f, j.size, j.ino, j.damaged = f, 0, 0, nil
		}
		if err := flock(ctx, j.f); err != nil {
			return nil, err
		}
		unlock = func() { _ = unix.Flock(int(j.f.Fd()), unix.LOCK_UN) }
		var st, onPath unix.Stat_t
		if err := unix.Fstat(int(j.f.Fd()), &st); err != nil {
			unlock()
			return nil, fmt.Errorf("audit journal: %w", err)
		}
		err := unix.Stat(j.path, &onPath)
		if err == nil && onPath.Ino == st.Ino && onPath.Dev == st.Dev {
			fresh := j.ino != st.Ino
			var idxHead store.AuditEntry
			if fresh {
				// A file not seen before (first open, or one put in place of the last):
				// read it from its start, the head from the index when it is empty.
				j.ino, j.size, j.damaged = st.Ino, 0, nil
				if idxHead, err = j.headFromIndex(ctx); err != nil {
					unlock()
					return nil, err
				}
			}
			j.alloc = st.Size
			if err := j.read(); err != nil {
				unlock()
				return nil, err
			}
			if fresh && idxHead.Seq > j.last.Seq {
				// The index is ahead of the journal (entries a capgate without the journal
				// wrote): the head is the index's.
				j.last = idxHead
			}
			if j.damaged != nil {
				unlock()
				return nil, j.damaged
			}
			return unlock, nil
		}
		// Replaced (or removed) since it was opened: open what the path names now.
		unlock()
		j.f.Close()
		j.f = nil
		if attempt > 100 {
			return nil, errors.New("audit journal: replaced over and over while opening it")
		}
	}
}

// flock takes f's exclusive lock, waiting for another process that holds it until ctx ends.
func flock(ctx context.Context, f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("audit journal: lock: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("audit journal: waiting for its lock: %w", ctx.Err())
		case <-time.After(journalLockPoll):
		}
	}
}

// headFromIndex sets the head and what the index holds from the index itself, and returns
// the index's head.
func (j *journal) headFromIndex(ctx context.Context) (store.AuditEntry, error) {
	e, err := store.ScanAudit(j.s.db.QueryRowContext(ctx,
		`SELECT `+store.AuditColumns+` FROM audit_log ORDER BY seq DESC LIMIT 1`), nulls{})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		e = store.AuditEntry{}
	case err != nil:
		return store.AuditEntry{}, errs.Wrap("audit journal: the index's head", err)
	}
	j.last, j.indexed = e, e.Seq
	j.pending, j.overflow = j.pending[:0], false
	return e, nil
}

// read reads the frames after j.size, up to the zeros that follow the last (or the file's
// end): what other processes appended since. A frame cut short (by a crash before its sync
// returned: never acknowledged, so not in the log) is zeroed; the lock is held, so no one is
// writing it. A frame that fails its checks with another frame after it sets j.damaged.
func (j *journal) read() error {
	if j.alloc < j.size {
		// Shorter than what was read: only a tool outside capgate does that.
		j.damaged = fmt.Errorf("%w: %s is shorter (%d bytes) than what was read of it (%d)", ErrJournalDamaged, j.path, j.alloc, j.size)
		return nil
	}
	var head [8]byte
	for j.size+8 <= j.alloc {
		if _, err := j.f.ReadAt(head[:], j.size); err != nil {
			return fmt.Errorf("audit journal: read: %w", err)
		}
		n := int64(binary.BigEndian.Uint32(head[:]))
		if n == 0 {
			return nil // the zeros after the last frame
		}
		if n > maxJournalFrame || j.size+8+n > j.alloc {
			return j.cut(j.alloc)
		}
		frame := make([]byte, 8+n)
		if _, err := j.f.ReadAt(frame, j.size); err != nil {
			return fmt.Errorf("audit journal: read: %w", err)
		}
		entries, _, ok := decodeFrame(frame)
		if !ok {
			// Torn if nothing follows it; damage if another frame does.
			next := j.size + 8 + n
			if next+8 <= j.alloc {
				if _, err := j.f.ReadAt(head[:], next); err != nil {
					return fmt.Errorf("audit journal: read: %w", err)
				}
				if binary.BigEndian.Uint32(head[:]) != 0 {
					j.damaged = fmt.Errorf("%w: %s: the frame at byte %d fails its checks", ErrJournalDamaged, j.path, j.size)
					return nil
				}
			}
			return j.cut(next)
		}
		for _, e := range entries {
			if e.Seq > j.indexed {
				j.keep(e)
			}
		}
		j.last = entries[len(entries)-1]
		j.size += 8 + n
	}
	return nil
}

// cut zeroes the journal from j.size to end, a frame cut short, and syncs it.
func (j *journal) cut(end int64) error {
	if err := j.zero(j.size, end); err != nil {
		return fmt.Errorf("audit journal: zero a torn frame: %w", err)
	}
	if err := unix.Fdatasync(int(j.f.Fd())); err != nil {
		return fmt.Errorf("audit journal: zero a torn frame: %w", err)
	}
	return nil
}

// zero writes zeros over [from, to) of the journal.
func (j *journal) zero(from, to int64) error {
	zeros := make([]byte, min(to-from, 64<<10))
	for off := from; off < to; {
		n := min(int64(len(zeros)), to-off)
		if _, err := j.f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// growAhead grows the journal before an append must, when less than half of journalGrow is
// left after its last frame: off the call path.
func (j *journal) growAhead(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil || j.alloc-j.size >= journalGrow/2 {
		return nil
	}
	unlock, err := j.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return j.ensureSpace(journalGrow)
}

// ensureSpace grows the journal with zeros, synced, until at least free bytes follow its last
// frame. j.mu and the file lock are held.
func (j *journal) ensureSpace(free int64) error {
	if j.alloc-j.size >= free {
		return nil
	}
	grow := max(journalGrow, free-(j.alloc-j.size))
	if err := j.zero(j.alloc, j.alloc+grow); err != nil {
		return fmt.Errorf("audit journal: grow: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("audit journal: grow: %w", err)
	}
	j.alloc += grow
	return nil
}

// appendBatch appends entries, which CheckAudit accepted, as one frame after the log's head,
// and syncs it; ErrConflict when they do not follow the head.
func (j *journal) appendBatch(ctx context.Context, entries []store.AuditEntry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock, err := j.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := store.CheckHead(j.last, entries[0]); err != nil {
		return err
	}
	frame, err := encodeFrame(entries)
	if err != nil {
		return err
	}
	if err := j.ensureSpace(int64(len(frame)) + 8); err != nil {
		return err
	}
	if _, err := j.f.WriteAt(frame, j.size); err != nil {
		j.undo(int64(len(frame)))
		return fmt.Errorf("audit journal: write: %w", err)
	}
	if err := unix.Fdatasync(int(j.f.Fd())); err != nil {
		j.undo(int64(len(frame)))
		return fmt.Errorf("audit journal: sync: %w", err)
	}
	j.size += int64(len(frame))
	for _, e := range entries {
		e.At = atCol(e.At).Time() // as the index and a reading of the journal give it back
		j.keep(e)
		j.last = e
	}
	select {
	case j.kick <- struct{}{}:
	default:
	}
	if len(j.pending) >= indexBatch {
		select {
		case j.full <- struct{}{}:
		default:
		}
	}
	return nil
}

// undo zeroes a frame of n bytes whose write or sync failed; the next lock reads the file
// again if even that fails.
func (j *journal) undo(n int64) {
	if j.zero(j.size, j.size+n) != nil || unix.Fdatasync(int(j.f.Fd())) != nil {
		j.ino = 0
	}
}

func atCol(t time.Time) store.NullInt {
	n, _ := store.TimeCol("", t) // CheckAudit accepted it
	return n
}

// index puts every journal entry the index lacks into it, in one transaction without a sync
// of its own (the journal is the durable copy; rotate syncs the index before the journal
// goes), entries already there left as they are.
func (j *journal) index(ctx context.Context) error {
	j.indexMu.Lock()
	defer j.indexMu.Unlock()
	j.mu.Lock()
	unlock, err := j.lock(ctx)
	if err != nil {
		j.mu.Unlock()
		return err
	}
	unlock()
	todo := append([]store.AuditEntry(nil), j.pending...)
	j.mu.Unlock()
	for len(todo) > 0 {
		if err := j.s.indexAudit(ctx, todo); err != nil {
			return err
		}
		j.mu.Lock()
		done := todo[len(todo)-1].Seq
		j.indexed = max(j.indexed, done)
		k := 0
		for k < len(j.pending) && j.pending[k].Seq <= done {
			k++
		}
		j.pending = append(j.pending[:0], j.pending[k:]...)
		todo = nil
		if j.overflow && len(j.pending) == 0 {
			// What did not fit in memory is in the journal: read it again, the next part.
			if err := j.reread(ctx); err != nil {
				j.mu.Unlock()
				return err
			}
			todo = append(todo, j.pending...)
		}
		j.mu.Unlock()
	}
	return j.rotate(ctx, false)
}

// keep adds e, which follows the pending entries, to them, unless they are full: then it is
// read from the journal again once they are indexed.
func (j *journal) keep(e store.AuditEntry) {
	if j.overflow || len(j.pending) >= maxPending {
		j.overflow = true
		return
	}
	j.pending = append(j.pending, e)
}

// reread fills the pending entries (empty, after an overflow) from the journal's frames with
// seqs above what the index holds, up to maxPending. j.mu is held.
func (j *journal) reread(ctx context.Context) error {
	unlock, err := j.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if !j.overflow {
		return nil // a file read anew by lock
	}
	data := make([]byte, j.size)
	if _, err := j.f.ReadAt(data, 0); err != nil {
		return fmt.Errorf("audit journal: read: %w", err)
	}
	j.overflow = false
	for off := 0; off < len(data); {
		entries, n, ok := decodeFrame(data[off:])
		if !ok {
			return fmt.Errorf("%w: %s: the frame at byte %d fails its checks", ErrJournalDamaged, j.path, off)
		}
		for _, e := range entries {
			if e.Seq > j.indexed {
				j.keep(e)
			}
		}
		off += n
	}
	return nil
}

// rotate replaces the journal by an empty one when it is past journalRotateBytes (or, with
// always, holds anything) and the index holds all of it, after syncing the index.
func (j *journal) rotate(ctx context.Context, always bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil || (!always && j.size < journalRotateBytes) {
		return nil
	}
	unlock, err := j.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if j.size == 0 || j.overflow {
		return nil // empty already, or more waits for the index than memory holds
	}
	if len(j.pending) > 0 {
		// Appended since the last index run, by this process or another: indexed here, with
		// every appender held off by the lock, so that a journal under a steady load, which
		// always has a few entries waiting, is still replaced.
		if err := j.s.indexAudit(ctx, j.pending); err != nil {
			return err
		}
		j.indexed = max(j.indexed, j.pending[len(j.pending)-1].Seq)
		j.pending = j.pending[:0]
	}
	// The index's transactions were not synced: sync its write-ahead log, which holds them,
	// before the journal that also does goes.
	if err := syncFile(j.s.path + "-wal"); err != nil {
		return err
	}
	tmp := j.path + ".new"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("audit journal: rotate: %w", err)
	}
	if _, err := f.WriteAt(make([]byte, journalGrow), 0); err != nil {
		f.Close()
		return fmt.Errorf("audit journal: rotate: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("audit journal: rotate: %w", err)
	}
	f.Close()
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("audit journal: rotate: %w", err)
	}
	if err := syncFile(filepath.Dir(j.path)); err != nil {
		return err
	}
	// This process's next lock opens the new file (the old one's inode no longer matches).
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit journal: sync %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("audit journal: sync %s: %w", filepath.Base(path), err)
	}
	return nil
}

// indexAudit inserts entries into the index in one transaction, without the sync of a
// commit, keeping rows already there.
func (s *Store) indexAudit(ctx context.Context, entries []store.AuditEntry) error {
	select {
	case s.writeSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writeSem }()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return errs.Wrap("index audit", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		return errs.Wrap("index audit", err)
	}
	// The connection goes back to the pool as every connection starts, or not at all: one
	// left at NORMAL would commit other writes without their sync.
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = FULL`); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return errs.Wrap("index audit", err)
	}
	// Rows go in indexRowsPerInsert at a time, one statement each: the statement's cost is
	// paid once for them all instead of once a row (docs/performance.md).
	var (
		full *sql.Stmt
		args = make([]any, 0, 5*indexRowsPerInsert)
	)
	for rest := entries; len(rest) > 0; {
		n := min(len(rest), indexRowsPerInsert)
		args = args[:0]
		for _, e := range rest[:n] {
			args = append(args, e.Seq, e.PrevHash, e.Hash, sql.NullInt64(atCol(e.At)), store.Blob(e.Body))
		}
		var err error
		if n == indexRowsPerInsert {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, indexInsert(n)); err != nil {
					tx.Rollback()
					return errs.Wrap("index audit", err)
				}
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, indexInsert(n), args...)
		}
		if err != nil {
			tx.Rollback()
			return errs.Wrap("index audit", err)
		}
		rest = rest[n:]
	}
	if err := tx.Commit(); err != nil {
		return errs.Wrap("index audit", err)
	}
	return nil
}

// indexRowsPerInsert is how many audit rows one INSERT of the indexer carries: 5 columns
// each, well under SQLite's limit of 32,766 bound parameters.
const indexRowsPerInsert = 64

// indexInsert is the INSERT of n audit rows.
func indexInsert(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT OR IGNORE INTO audit_log (` + store.AuditColumns + `) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?)")
	}
	return b.String()
}

// encodeFrame is entries as one frame.
func encodeFrame(entries []store.AuditEntry) ([]byte, error) {
	n := 8 + 4
	for _, e := range entries {
		n += 8 + 1 + 8 + 12 + len(e.PrevHash) + len(e.Hash) + len(e.Body)
	}
	if n-8 > maxJournalFrame {
		return nil, fmt.Errorf("audit journal: a batch of %d bytes, more than a frame holds (%d)", n-8, maxJournalFrame)
	}
	b := make([]byte, 8, n)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.Seq))
		at := atCol(e.At)
		if at.Valid {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.BigEndian.AppendUint64(b, uint64(at.Int64))
		for _, s := range [][]byte{[]byte(e.PrevHash), []byte(e.Hash), e.Body} {
			b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
	}
	binary.BigEndian.PutUint32(b[0:], uint32(len(b)-8))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	return b, nil
}

// decodeFrame reads the frame at the start of b: its entries and its length; false when b
// does not start with a whole frame whose checksum and fields are right.
func decodeFrame(b []byte) ([]store.AuditEntry, int, bool) {
	if len(b) < 8 {
		return nil, 0, false
	}
	n := binary.BigEndian.Uint32(b)
	if n > maxJournalFrame || int64(n)+8 > int64(len(b)) {
		return nil, 0, false
	}
	p := b[8 : 8+n]
	if crc32.Checksum(p, castagnoli) != binary.BigEndian.Uint32(b[4:]) || len(p) < 4 {
		return nil, 0, false
	}
	count := binary.BigEndian.Uint32(p)
	p = p[4:]
	if count == 0 || uint64(count) > uint64(len(p))/29 {
		return nil, 0, false
	}
	entries := make([]store.AuditEntry, 0, count)
	field := func() ([]byte, bool) {
		if len(p) < 4 {
			return nil, false
		}
		l := binary.BigEndian.Uint32(p)
		if uint64(l) > uint64(len(p)-4) {
			return nil, false
		}
		v := p[4 : 4+l]
		p = p[4+l:]
		return v, true
	}
	for range count {
		if len(p) < 17 {
			return nil, 0, false
		}
		e := store.AuditEntry{Seq: int64(binary.BigEndian.Uint64(p))}
		valid := p[8]
		at := store.NullInt{Int64: int64(binary.BigEndian.Uint64(p[9:])), Valid: valid == 1}
		if valid > 1 || (!at.Valid && at.Int64 != 0) {
			return nil, 0, false
		}
		e.At = at.Time()
		p = p[17:]
		prev, ok1 := field()
		hash, ok2 := field()
		body, ok3 := field()
		if !ok1 || !ok2 || !ok3 {
			return nil, 0, false
		}
		e.PrevHash, e.Hash, e.Body = string(prev), string(hash), append([]byte(nil), body...)
		if len(entries) > 0 && (e.Seq != entries[len(entries)-1].Seq+1 || e.PrevHash != entries[len(entries)-1].Hash) {
			return nil, 0, false
		}
		entries = append(entries, e)
	}
	if len(p) != 0 {
		return nil, 0, false
	}
	return entries, int(n) + 8, true
}

// indexHolds reports whether the index already holds every entry a read of from..to (to 0:
// to the end), at most limit of them, asks for: the last seq it asks for (to, or
// from+limit-1) is at most what this process knows is indexed (seqs have no gaps). Such a
// read needs no index run first (the audit writer's head file checks, every 20 ms, that the
// store still holds the head it wrote last: that read ran the index each time). The journal
// is read anew under its lock first.
func (j *journal) indexHolds(ctx context.Context, from, to int64, limit int) (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock, err := j.lock(ctx)
	if err != nil {
		return false, err
	}
	unlock()
	last := to
	if limit > 0 && (last == 0 || from+int64(limit)-1 < last) {
		last = from + int64(limit) - 1
	}
	return last > 0 && last <= j.indexed, nil
}
