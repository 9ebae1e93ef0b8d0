package sqlite

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capgate/capgate/internal/store"
)

// The audit log of a SQLite store is not in the database: it is a folder of its own beside
// the database file (the file's path and auditLogSuffix), an append-only log of segment
// files, and the only copy of the audit chain. AppendAudit writes a batch to it as one frame
// (frame.go) and syncs it, and that is the whole append: no database transaction, no second
// copy. What a read needs to find an entry (where the frames of each segment start, one mark
// every markEvery bytes) is kept in memory, built from the files by the reads that need it.
//
// A segment is named by the seq of its first entry (segmentName) and holds frames followed by
// zeros. It is made whole before it is used: segmentBytes of zeros (more for a frame larger
// than that), written and synced, then renamed into place and the folder synced, so that an
// append overwrites blocks the file has, its sync changes none of the file's metadata (a third
// cheaper than a sync that grows the file), and no append waits for a file to grow. The next
// segment is made ready in the background once the last is half full. A length of zero ends a
// segment's frames. When a frame, and the zero length after it, no longer fit in the last
// segment, the append starts the next one; a segment with another after it is never written
// again, and loses its zeros.
//
// Every process on the database appends under an exclusive lock (flock) of the file beside
// the folder (auditLockSuffix), after reading what the others appended since it last looked:
// the frames after the last one it knows and, when the lock file's counters moved, the folder.
// The lock file holds two counters (uint64, big-endian): segments started, raised before each
// is put in place, and logs rewritten (RewriteAuditUnsafe). So the chain stays one across
// processes, and a look at a log no other process touched costs two small reads. Reads take
// the lock only to look, then read frames that are synced and never change.
//
// After a crash: a frame cut short at the end of the last segment's frames was never
// acknowledged (its sync did not return) and is zeroed at the next lock; a frame that fails
// its checks with another frame after it, anywhere in a segment before the last, or whose seq
// does not follow the one before, is damage, which every append and read of the log then
// reports (ErrAuditDamaged), naming the file and the offset.
//
// A database from before the folder (the journal file beside it and the audit_log table, which
// then held the log) has its log moved into segments at its first open (legacy.go).

const (
	// auditLogSuffix names the folder of segments beside the database file, auditLockSuffix
	// the file every process locks to append.
	auditLogSuffix  = "-auditlog"
	auditLockSuffix = "-auditlog.lock"
	// segmentSuffix ends a segment's name; segmentDigits is how many decimal digits its
	// first seq is written with, so that names sort as seqs do.
	segmentSuffix = ".seg"
	segmentDigits = 20
	// lockPoll bounds the wait between tries of a lock held elsewhere.
	lockPoll = time.Millisecond
	// preparedPrefix begins the name of a segment being made ready, before it has one; the
	// process id that makes it follows.
	preparedPrefix = ".prepared-"
	// zeroChunk is how many zeros a segment is written with at a time.
	zeroChunk = 1 << 20
	// readChunk is how much a read of frames takes from a file at a time.
	readChunk = 256 << 10
	// maxKeptBuffer bounds the frame buffer an append keeps for the next: a larger one, made
	// for a batch of large records, is let go.
	maxKeptBuffer = 1 << 20
)

// Variables so that tests can change them.
var (
	// segmentBytes is the size a segment is made with: its frames fill it, then the next
	// append starts another. 16 MiB, as PostgreSQL's write-ahead log segments.
	segmentBytes int64 = 16 << 20
	// markEvery is the most bytes of frames between two marks of a segment: a read of one
	// entry reads at most about this much before it.
	markEvery int64 = 64 << 10
)

// ErrAuditDamaged is the error of every append and read of a log with a damaged frame before
// its end.
var ErrAuditDamaged = errors.New("the audit log is damaged")

// auditLog is a store's audit log (above).
type auditLog struct {
	s        *Store
	dir      string // the folder of segments
	lockPath string

	mu     sync.Mutex // this process's appenders, and readers while they look; the file lock holds off others
	closed bool
	lockf  *os.File  // the lock file, open while the store is
	seen   [2]uint64 // its counters when the folder was last read
	known  bool      // segs was read from the folder
	segs   []*segment
	// The last segment, which appends go to: open read-write, the end of its frames and its
	// size (frames, then zeros). f is nil when the log has no segment.
	f       *os.File
	size    int64
	alloc   int64
	last    store.AuditEntry // the log's head; Seq 0: empty
	damaged error
	buf     []byte // the frame being written, kept for the next append
	// The next segment, made ready in the background: a file of segmentBytes zeros, synced,
	// under a name of its own until a segment is started with it.
	prepared     *os.File
	preparedPath string
	preparing    bool
	// ring syncs the appends (uring_linux.go); nil with noRing set where there is none, and
	// then fdatasync does.
	ring   *uring
	noRing bool
}

// useURing says whether the audit log syncs through io_uring where the kernel offers it: a
// variable so that tests run both ways.
var useURing = true

// loneBatch is the most entries an append may hold and still be synced by fdatasync itself
// even where there is a ring: one call's records, with nothing else gathered, is what a gateway
// at rest appends, and there a thread blocked in the sync holds back no other work, while the
// ring's completion costs a wake-up in the poller more (capgate bench gateway's one client:
// about 40 µs a call).
const loneBatch = 2

// datasync makes the last segment's frames durable, as fdatasync does, for an append of n
// entries. l.mu is held.
func (l *auditLog) datasync(n int) error {
	if n <= loneBatch {
		return unix.Fdatasync(int(l.f.Fd()))
	}
	if l.ring == nil && !l.noRing {
		if !useURing {
			l.noRing = true
		} else if l.ring, _ = newURing(); l.ring == nil {
			l.noRing = true
		}
	}
	if l.ring != nil {
		err := l.ring.datasync(l.f)
		if !errors.Is(err, errRing) {
			return err
		}
		// The ring failed, not the sync: it is not used again, and fdatasync syncs.
		l.ring.close()
		l.ring, l.noRing = nil, true
	}
	return unix.Fdatasync(int(l.f.Fd()))
}

// segment is one file of the log, and what reads have learned of it.
type segment struct {
	first int64 // the seq of its first entry: its name
	path  string

	rmu     sync.Mutex // its readers
	rf      *os.File   // opened for reads at the first
	marks   []mark     // from offset 0, the next frame at least markEvery bytes after each
	scanned int64      // the marks take in every frame before this offset
	next    int64      // the seq of the frame at scanned (0: not yet known)
	ended   bool       // scanned is the end of its frames (only once another segment follows)
}

// mark is where a frame starts, and the seq of its first entry.
type mark struct{ seq, off int64 }

func segmentName(first int64) string {
	s := strconv.FormatInt(first, 10)
	return strings.Repeat("0", max(0, segmentDigits-len(s))) + s + segmentSuffix
}

// parseSegmentName is the first seq a segment's name gives; false for any other name.
func parseSegmentName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(digits) != segmentDigits {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n > 0
}

// openAuditLog opens the audit log of s, moving a log from before the folder into it.
func (s *Store) openAuditLog(ctx context.Context) error {
	l := &auditLog{s: s, dir: s.path + auditLogSuffix, lockPath: s.path + auditLockSuffix}
	f, err := os.OpenFile(l.lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	l.lockf = f
	if err := l.moveLegacy(ctx); err != nil {
		f.Close()
		return err
	}
	// A look now: a damaged last segment (what a crash cannot leave) is said at open.
	l.mu.Lock()
	unlock, err := l.lock(ctx)
	if err == nil {
		unlock()
	}
	l.mu.Unlock()
	if err != nil {
		l.close()
		return err
	}
	s.alog = l
	return nil
}

// close closes the log's files; every use afterwards is an error.
func (l *auditLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	errs := l.closeFiles()
	if l.ring != nil {
		l.ring.close()
		l.ring = nil
	}
	errs = append(errs, l.lockf.Close())
	return errors.Join(errs...)
}

// counters reads the lock file's counters: segments started, logs rewritten. The file lock
// is held.
func (l *auditLog) counters() ([2]uint64, error) {
	var b [16]byte
	n, err := l.lockf.ReadAt(b[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return [2]uint64{}, fmt.Errorf("audit log: read %s: %w", filepath.Base(l.lockPath), err)
	}
	if n < len(b) {
		clear(b[n:]) // a new lock file: nothing counted yet
	}
	return [2]uint64{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}, nil
}

// count adds one to the lock file's counter i (0: segments started, 1: logs rewritten) and
// returns the counters. The file lock is held.
func (l *auditLog) count(i int) ([2]uint64, error) {
	c, err := l.counters()
	if err != nil {
		return c, err
	}
	c[i]++
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], c[0])
	binary.BigEndian.PutUint64(b[8:], c[1])
	if _, err := l.lockf.WriteAt(b[:], 0); err != nil {
		return c, fmt.Errorf("audit log: write %s: %w", filepath.Base(l.lockPath), err)
	}
	return c, nil
}

// lock takes the log's file lock and brings what l knows up to date with the files. l.mu is
// held. unlock releases the file lock.
func (l *auditLog) lock(ctx context.Context) (unlock func(), err error) {
	if l.closed {
		return nil, errors.New("the store is closed")
	}
	if err := flock(ctx, l.lockf); err != nil {
		return nil, err
	}
	unlock = func() { _ = unix.Flock(int(l.lockf.Fd()), unix.LOCK_UN) }
	if err := l.look(); err != nil {
		unlock()
		return nil, err
	}
	if l.damaged != nil {
		unlock()
		return nil, l.damaged
	}
	return unlock, nil
}

// flock takes f's exclusive lock, waiting for another process that holds it until ctx ends.
func flock(ctx context.Context, f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("audit log: lock: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("audit log: waiting for its lock: %w", ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// look reads what other processes appended since l last looked: the frames after the last it
// knows, and the folder anew when a segment was started or the log rewritten. l.mu and the
// file lock are held.
func (l *auditLog) look() error {
	c, err := l.counters()
	if err != nil {
		return err
	}
	if c[1] != l.seen[1] {
		l.forget() // rewritten: nothing read of the old log holds
	}
	if !l.known || c != l.seen {
		if err := l.readFolder(); err != nil {
			return err
		}
		l.seen = c
		return nil
	}
	if l.f != nil {
		return l.readLast()
	}
	return nil
}

// closeFiles closes the segments l has open and removes the one it made ready, which was made
// in the folder l knows (a rewrite may have put another in its place). l.mu is held.
func (l *auditLog) closeFiles() []error {
	var errs []error
	if l.f != nil {
		errs = append(errs, l.f.Close())
		l.f = nil
	}
	for _, sg := range l.segs {
		sg.rmu.Lock()
		if sg.rf != nil {
			errs = append(errs, sg.rf.Close())
			sg.rf = nil
		}
		sg.rmu.Unlock()
	}
	if l.prepared != nil {
		l.prepared.Close()
		os.Remove(l.preparedPath)
		l.prepared = nil
	}
	return errs
}

// forget drops what l knows of the folder.
func (l *auditLog) forget() {
	l.closeFiles()
	l.segs, l.known, l.size, l.alloc, l.last, l.damaged = nil, false, 0, 0, store.AuditEntry{}, nil
}

// readFolder lists the segments and reads the last one; when it holds no frame, the log's
// head is the last entry of the one before. What reads learned of segments known before is
// kept. Segments being made ready by processes that are gone are removed.
func (l *auditLog) readFolder() error {
	des, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	known := make(map[int64]*segment, len(l.segs))
	for _, sg := range l.segs {
		known[sg.first] = sg
	}
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	l.segs, l.size, l.alloc, l.last, l.damaged = l.segs[:0], 0, 0, store.AuditEntry{}, nil
	for _, de := range des {
		name := de.Name()
		if first, ok := parseSegmentName(name); ok && de.Type().IsRegular() {
			sg := known[first]
			if sg == nil {
				sg = &segment{first: first, path: filepath.Join(l.dir, name)}
			}
			l.segs = append(l.segs, sg)
		} else if strings.HasPrefix(name, preparedPrefix) {
			removeAbandoned(filepath.Join(l.dir, name))
		}
	}
	sort.Slice(l.segs, func(i, j int) bool { return l.segs[i].first < l.segs[j].first })
	l.known = true
	if len(l.segs) == 0 {
		return nil
	}
	lastSeg := l.segs[len(l.segs)-1]
	f, err := os.OpenFile(lastSeg.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	l.segs = l.segs[:len(l.segs)-1]
	if err := l.useLast(f, lastSeg); err != nil {
		return err
	}
	if err := l.readLast(); err != nil || l.damaged != nil || l.size > 0 || len(l.segs) == 1 {
		return err
	}
	prev := l.segs[len(l.segs)-2]
	e, err := prev.lastEntry()
	if err != nil {
		l.damaged = err
		return nil
	}
	if e.Seq+1 != lastSeg.first {
		l.damaged = fmt.Errorf("%w: %s begins at seq %d, not after the last entry before it (%d)", ErrAuditDamaged, lastSeg.path, lastSeg.first, e.Seq)
		return nil
	}
	l.last = e
	return nil
}

// removeAbandoned removes a segment being made ready whose process is gone.
func removeAbandoned(path string) {
	rest := strings.TrimPrefix(filepath.Base(path), preparedPrefix)
	pid, err := strconv.Atoi(rest[:max(0, strings.IndexByte(rest, '-'))])
	if err != nil || pid == os.Getpid() {
		return
	}
	if unix.Kill(pid, 0) == unix.ESRCH {
		os.Remove(path)
	}
}

// useLast makes f, the file of sg, the last segment, with nothing of it read yet.
func (l *auditLog) useLast(f *os.File, sg *segment) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	l.f, l.size, l.alloc = f, 0, st.Size
	l.segs = append(l.segs, sg)
	return nil
}

// seal closes the last segment for appends, another having been started after it: its reads
// may now run to the end of its frames, and its zeros go (a crash that keeps them harms
// nothing: a length of zero ends the frames either way).
func (l *auditLog) seal() error {
	if l.f == nil {
		return nil
	}
	_ = l.f.Truncate(l.size)
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
}

// readLast reads the frames of the last segment after l.size: what other processes appended
// since l last looked. A frame cut short by a crash before its sync returned (never
// acknowledged, so not in the log) is zeroed: the lock is held, so no one is writing it. A
// frame that fails its checks with another frame after it, or whose seq does not follow, sets
// l.damaged.
func (l *auditLog) readLast() error {
	sg := l.segs[len(l.segs)-1]
	if l.size+4 <= l.alloc {
		// Most looks find nothing appended: one small read says so.
		var n [4]byte
		if _, err := l.f.ReadAt(n[:], l.size); err != nil {
			l.damaged = fmt.Errorf("%w: %s is shorter than what was read of it (%d bytes): %v", ErrAuditDamaged, sg.path, l.size, err)
			return nil
		}
		if binary.BigEndian.Uint32(n[:]) == 0 {
			return nil
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(l.f.Fd()), &st); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	l.alloc = st.Size
	if l.alloc < l.size {
		l.damaged = fmt.Errorf("%w: %s is shorter (%d bytes) than what was read of it (%d)", ErrAuditDamaged, sg.path, l.alloc, l.size)
		return nil
	}
	expect := l.last.Seq + 1
	if l.size == 0 {
		expect = sg.first
	}
	r := frameReader{f: l.f, off: l.size, end: l.alloc}
	lastOff, lastLen := int64(-1), 0
	for {
		b, off, status, err := r.next()
		if err != nil {
			return err
		}
		if status == frameEnd {
			break
		}
		if status == frameBad {
			if err := l.badFrame(sg, off); err != nil || l.damaged != nil {
				return err
			}
			break
		}
		_, count, first, _ := frameSpan(b)
		if first != expect {
			l.damaged = fmt.Errorf("%w: %s: the frame at byte %d begins at seq %d, not %d", ErrAuditDamaged, sg.path, off, first, expect)
			return nil
		}
		expect = first + int64(count)
		lastOff, lastLen = off, len(b)
		l.size = off + int64(len(b))
	}
	if lastOff < 0 {
		return nil
	}
	frame := make([]byte, lastLen)
	if _, err := l.f.ReadAt(frame, lastOff); err != nil {
		return fmt.Errorf("audit log: read: %w", err)
	}
	entries, _, ok := decodeFrame(frame)
	if !ok {
		l.damaged = fmt.Errorf("%w: %s: the frame at byte %d fails its checks", ErrAuditDamaged, sg.path, lastOff)
		return nil
	}
	l.last = entries[len(entries)-1]
	return nil
}

// badFrame handles a frame at off, at the end of what was read of the last segment, that
// fails its checks: torn when nothing follows the space it claims (zeroed, and the log ends
// before it), damage when another frame does.
func (l *auditLog) badFrame(sg *segment, off int64) error {
	var head [frameHeader]byte
	if _, err := l.f.ReadAt(head[:4], off); err != nil {
		return fmt.Errorf("audit log: read: %w", err)
	}
	n := int64(binary.BigEndian.Uint32(head[:]))
	next := off + frameHeader + n
	if n > maxFrame || next > l.alloc {
		return l.cut(off, l.alloc) // claims more than the file holds: cut short
	}
	if next+4 <= l.alloc {
		if _, err := l.f.ReadAt(head[:4], next); err != nil {
			return fmt.Errorf("audit log: read: %w", err)
		}
		if binary.BigEndian.Uint32(head[:]) != 0 {
			l.damaged = fmt.Errorf("%w: %s: the frame at byte %d fails its checks", ErrAuditDamaged, sg.path, off)
			return nil
		}
	}
	return l.cut(off, next)
}

// cut zeroes [from, to) of the last segment, a frame cut short, and syncs it.
func (l *auditLog) cut(from, to int64) error {
	if err := zeroFile(l.f, from, to); err != nil {
		return fmt.Errorf("audit log: zero a torn frame: %w", err)
	}
	if err := unix.Fdatasync(int(l.f.Fd())); err != nil {
		return fmt.Errorf("audit log: zero a torn frame: %w", err)
	}
	return nil
}

// zeros is what zeroFile writes, read only.
var zeros [zeroChunk]byte

// zeroFile writes zeros over [from, to) of f.
func zeroFile(f *os.File, from, to int64) error {
	for off := from; off < to; {
		n := min(int64(len(zeros)), to-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// startSegment starts the segment whose first entry is first, with room for at least need
// bytes, and makes it the last: the one before it is sealed. The lock file's count of
// segments started moves first, so that every other process reads the folder again at its
// next look. l.mu and the file lock are held.
func (l *auditLog) startSegment(first, need int64) error {
	c, err := l.count(0)
	if err != nil {
		return err
	}
	path := filepath.Join(l.dir, segmentName(first))
	f, from := l.prepared, l.preparedPath
	l.prepared = nil
	if f != nil {
		if st, err := f.Stat(); err != nil || st.Size() < need {
			f.Close()
			os.Remove(from)
			f = nil
		}
	}
	if f != nil && os.Rename(from, path) != nil {
		f.Close()
		os.Remove(from)
		f = nil
	}
	if f == nil {
		// Nothing ready (a burst, a large frame, or the first append): made here, whole.
		from = path + ".new"
		if f, err = makeSegment(from, max(segmentBytes, need)); err != nil {
			return err
		}
		if err := os.Rename(from, path); err != nil {
			f.Close()
			os.Remove(from)
			return fmt.Errorf("audit log: new segment: %w", err)
		}
	}
	if err := syncDir(l.dir); err != nil {
		f.Close()
		return err
	}
	if err := l.seal(); err != nil {
		f.Close()
		return err
	}
	l.seen = c
	return l.useLast(f, &segment{first: first, path: path})
}

// makeSegment creates the file at path with size zeros, synced.
func makeSegment(path string, size int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: new segment: %w", err)
	}
	if err := zeroFile(f, 0, size); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("audit log: new segment: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("audit log: new segment: %w", err)
	}
	return f, nil
}

// prepareNext makes the next segment ready in the background, when the last is half full and
// none is ready or being made. l.mu is held.
func (l *auditLog) prepareNext() {
	if l.prepared != nil || l.preparing || l.size < l.alloc/2 {
		return
	}
	l.preparing = true
	path := filepath.Join(l.dir, preparedPrefix+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(l.last.Seq, 10))
	size := segmentBytes
	go func() {
		f, err := makeSegment(path, size)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.preparing = false
		if err != nil {
			return // the next segment is made when it is started
		}
		if l.closed || l.prepared != nil {
			f.Close()
			os.Remove(path)
			return
		}
		l.prepared, l.preparedPath = f, path
	}()
}

func syncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit log: sync %s: %w", filepath.Base(path), err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("audit log: sync %s: %w", filepath.Base(path), err)
	}
	return nil
}

// append appends entries, which CheckAudit accepted, as one frame after the log's head, and
// syncs it; ErrConflict when they do not follow the head.
func (l *auditLog) append(ctx context.Context, entries []store.AuditEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	unlock, err := l.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := store.CheckHead(l.last, entries[0]); err != nil {
		return err
	}
	frame, err := appendFrame(l.buf[:0], entries)
	if err != nil {
		return err
	}
	if cap(frame) <= maxKeptBuffer {
		l.buf = frame
	} else {
		l.buf = nil
	}
	// Room for the frame and the zero length after it, else the next segment.
	if need := int64(len(frame)) + frameHeader; l.f == nil || l.size+need > l.alloc {
		if err := l.startSegment(entries[0].Seq, need); err != nil {
			return err
		}
	}
	if _, err := l.f.WriteAt(frame, l.size); err != nil {
		l.undo(int64(len(frame)))
		return fmt.Errorf("audit log: write: %w", err)
	}
	if err := l.datasync(len(entries)); err != nil {
		l.undo(int64(len(frame)))
		return fmt.Errorf("audit log: sync: %w", err)
	}
	l.size += int64(len(frame))
	e := entries[len(entries)-1]
	e.At = atCol(e.At).Time() // as a reading of the log gives it back
	l.last = e
	l.prepareNext()
	return nil
}

// undo zeroes a frame of n bytes whose write or sync failed; when even that fails, the folder
// is read anew at the next lock.
func (l *auditLog) undo(n int64) {
	if zeroFile(l.f, l.size, l.size+n) != nil || unix.Fdatasync(int(l.f.Fd())) != nil {
		l.forget()
	}
}

func atCol(t time.Time) store.NullInt {
	n, _ := store.TimeCol("", t) // CheckAudit accepted it
	return n
}

// head returns the log's last entry, or ErrNotFound for an empty log.
func (l *auditLog) head(ctx context.Context) (store.AuditEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	unlock, err := l.lock(ctx)
	if err != nil {
		return store.AuditEntry{}, err
	}
	unlock()
	if l.last.Seq == 0 {
		return store.AuditEntry{}, store.ErrNotFound
	}
	e := l.last
	e.Body = slices.Clone(e.Body)
	return e, nil
}

// read returns the entries with from <= Seq <= to (to 0: to the end), ordered by Seq, at most
// limit of them (0: no limit).
func (l *auditLog) read(ctx context.Context, from, to int64, limit int) ([]store.AuditEntry, error) {
	// A look under the lock, then reads of frames that are synced and never change: an
	// append goes on meanwhile.
	l.mu.Lock()
	unlock, err := l.lock(ctx)
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	unlock()
	segs := slices.Clone(l.segs)
	end, head := l.size, l.last.Seq
	l.mu.Unlock()
	return readSegments(ctx, segs, end, head, from, to, limit)
}

// readSegments is read of segs, the log's segments, whose last holds frames up to end and
// whose last entry is head.
func readSegments(ctx context.Context, segs []*segment, end, head, from, to int64, limit int) ([]store.AuditEntry, error) {
	from = max(from, 1)
	if to <= 0 || to > head {
		to = head
	}
	if limit > 0 && from-1+int64(limit) < to {
		to = from - 1 + int64(limit)
	}
	if from > to || len(segs) == 0 {
		return nil, nil
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].first > from }) - 1
	if i < 0 {
		return nil, fmt.Errorf("%w: no segment holds seq %d (the first begins at %d)", ErrAuditDamaged, from, segs[0].first)
	}
	out := make([]store.AuditEntry, 0, min(to-from+1, 4096))
	for ; i < len(segs); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		segEnd := int64(-1) // to the end of its frames
		if i == len(segs)-1 {
			segEnd = end
		}
		var err error
		if out, err = segs[i].read(out, from, to, segEnd); err != nil {
			return nil, err
		}
		if len(out) > 0 && out[len(out)-1].Seq >= to {
			break
		}
	}
	if int64(len(out)) != to-from+1 {
		return nil, fmt.Errorf("%w: seqs %d to %d are not all in it (%d found)", ErrAuditDamaged, from, to, len(out))
	}
	return out, nil
}

// read appends to out the entries of sg with from <= Seq <= to, reading its frames up to end
// (-1: the end of its frames).
func (sg *segment) read(out []store.AuditEntry, from, to, end int64) ([]store.AuditEntry, error) {
	sg.rmu.Lock()
	defer sg.rmu.Unlock()
	if err := sg.open(); err != nil {
		return out, err
	}
	if err := sg.scan(from, end); err != nil {
		return out, err
	}
	off := int64(0)
	if i := sort.Search(len(sg.marks), func(i int) bool { return sg.marks[i].seq > from }) - 1; i >= 0 {
		off = sg.marks[i].off
	}
	r := frameReader{f: sg.rf, off: off, end: end}
	var entries []store.AuditEntry
	for {
		b, at, status, err := r.next()
		if err != nil {
			return out, err
		}
		if status == frameEnd {
			return out, nil
		}
		_, count, first, ok := frameSpan(b)
		if status == frameBad || !ok {
			return out, fmt.Errorf("%w: %s: the frame at byte %d fails its checks", ErrAuditDamaged, sg.path, at)
		}
		if first+int64(count) <= from {
			continue
		}
		if first > to {
			return out, nil
		}
		entries, _, ok = decodeFrameInto(entries[:0], b)
		if !ok {
			return out, fmt.Errorf("%w: %s: the frame at byte %d fails its checks", ErrAuditDamaged, sg.path, at)
		}
		for _, e := range entries {
			if e.Seq >= from && e.Seq <= to {
				out = append(out, e)
			}
		}
		if first+int64(count)-1 >= to {
			return out, nil
		}
	}
}

// open opens sg for reads. sg.rmu is held.
func (sg *segment) open() error {
	if sg.rf != nil {
		return nil
	}
	f, err := os.Open(sg.path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	sg.rf = f
	if sg.next == 0 {
		sg.next = sg.first
	}
	return nil
}

// scan extends the marks past the frame that holds seq, or to end (-1: the end of the
// frames), checking each frame on the way: its checksum, and that its seq follows the one
// before. sg.rmu is held.
func (sg *segment) scan(seq, end int64) error {
	if sg.ended || sg.next > seq || (end >= 0 && sg.scanned >= end) {
		return nil
	}
	r := frameReader{f: sg.rf, off: sg.scanned, end: end}
	for sg.next <= seq {
		b, at, status, err := r.next()
		if err != nil {
			return err
		}
		if status == frameEnd {
			sg.ended = end < 0
			return nil
		}
		_, count, first, ok := frameSpan(b)
		if status == frameBad || !ok {
			return fmt.Errorf("%w: %s: the frame at byte %d fails its checks", ErrAuditDamaged, sg.path, at)
		}
		if first != sg.next {
			return fmt.Errorf("%w: %s: the frame at byte %d begins at seq %d, not %d", ErrAuditDamaged, sg.path, at, first, sg.next)
		}
		if n := len(sg.marks); n == 0 || at-sg.marks[n-1].off >= markEvery {
			sg.marks = append(sg.marks, mark{seq: first, off: at})
		}
		sg.scanned, sg.next = at+int64(len(b)), first+int64(count)
	}
	return nil
}

// lastEntry is the last entry of sg's frames, which it reads to their end.
func (sg *segment) lastEntry() (store.AuditEntry, error) {
	sg.rmu.Lock()
	defer sg.rmu.Unlock()
	if err := sg.open(); err != nil {
		return store.AuditEntry{}, err
	}
	if err := sg.scan(1<<62, -1); err != nil {
		return store.AuditEntry{}, err
	}
	if sg.next == sg.first {
		return store.AuditEntry{}, fmt.Errorf("%w: %s holds no entry, and is not the last segment", ErrAuditDamaged, sg.path)
	}
	off := int64(0)
	if n := len(sg.marks); n > 0 {
		off = sg.marks[n-1].off
	}
	r := frameReader{f: sg.rf, off: off, end: sg.scanned}
	var last []store.AuditEntry
	for {
		b, at, status, err := r.next()
		if err != nil {
			return store.AuditEntry{}, err
		}
		if status == frameEnd {
			break
		}
		var ok bool
		if last, _, ok = decodeFrameInto(last[:0], b); status == frameBad || !ok {
			return store.AuditEntry{}, fmt.Errorf("%w: %s: the frame at byte %d fails its checks", ErrAuditDamaged, sg.path, at)
		}
	}
	if len(last) == 0 {
		return store.AuditEntry{}, fmt.Errorf("%w: %s: its last frame could not be read", ErrAuditDamaged, sg.path)
	}
	return last[len(last)-1], nil
}

// frameStatus is what frameReader.next found.
type frameStatus int

const (
	frameOK  frameStatus = iota // a whole frame whose checksum is right
	frameEnd                    // a length of zero, or the end: the frames end here
	frameBad                    // a frame cut short, or failing its checks
)

// frameReader reads frames from a file in chunks, from off up to end (-1: the file's end).
type frameReader struct {
	f   *os.File
	off int64  // the file offset of buf[0]
	end int64  // -1: the file's end
	buf []byte // read from off
	pos int    // the next frame's place in buf
	eof bool   // nothing more to read after buf
}

// next returns the frame at the reader's place (its bytes, valid until the next call) and the
// offset it starts at.
func (r *frameReader) next() ([]byte, int64, frameStatus, error) {
	at := r.off + int64(r.pos)
	if err := r.fill(frameHeader); err != nil {
		return nil, at, frameEnd, err
	}
	if len(r.buf)-r.pos < 4 {
		return nil, at, frameEnd, nil
	}
	n := binary.BigEndian.Uint32(r.buf[r.pos:])
	if n == 0 {
		return nil, at, frameEnd, nil
	}
	if n > maxFrame {
		return nil, at, frameBad, nil
	}
	total := frameHeader + int(n)
	if err := r.fill(total); err != nil {
		return nil, at, frameEnd, err
	}
	if len(r.buf)-r.pos < total {
		return nil, at, frameBad, nil
	}
	b := r.buf[r.pos : r.pos+total]
	if _, _, _, ok := frameSpan(b); !ok {
		return b, at, frameBad, nil
	}
	r.pos += total
	return b, at, frameOK, nil
}

// fill reads until buf holds need bytes after pos, or nothing more is to be read.
func (r *frameReader) fill(need int) error {
	for len(r.buf)-r.pos < need && !r.eof {
		rest := len(r.buf) - r.pos
		r.off += int64(r.pos)
		want := max(need, readChunk)
		if r.end >= 0 {
			want = int(min(int64(want), max(r.end-r.off, int64(rest))))
		}
		if want <= rest {
			r.eof = true
			break
		}
		buf := r.buf
		if cap(buf) < want {
			buf = make([]byte, want)
		}
		buf = buf[:want]
		copy(buf, r.buf[r.pos:])
		n, err := r.f.ReadAt(buf[rest:], r.off+int64(rest))
		r.buf, r.pos = buf[:rest+n], 0
		if errors.Is(err, io.EOF) {
			r.eof = true
		} else if err != nil {
			return fmt.Errorf("audit log: read: %w", err)
		}
	}
	return nil
}
