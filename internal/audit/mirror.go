package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// mirrorFile keeps the mirror file (Options.MirrorPath) a whole copy of the log: every entry
// once, in seq order, each line as Export writes it. It runs on its own goroutine, after the
// store, so a slow disk never holds a call; every process that writes the log into the same
// file (replicas sharing a folder, the command line beside a gateway) appends under an
// exclusive lock on it, after the line the file ends with, what the store holds beyond it.
//
// What a crash may leave, and how it is mended:
//   - the mirror ends before the store (the process died between the store's commit and the
//     mirror's write, or a write failed): the next write, or the next writer's start, appends
//     the missing entries from the store;
//   - the last line is cut short (the process died inside a write): it is removed, said in
//     the log, and written again from the store.
//
// Anything else (a last line that does not parse or is not the store's entry, a store whose
// next entry does not follow the mirror's last line, a mirror past the store's head) is
// evidence that one of them was altered: nothing is appended, and the error is logged once and
// counted, for `capgate audit verify` to say where. Only the file's last line is read (the
// whole file is read by verify, not at every start); lines before it are verify's to judge.
type mirrorFile struct {
	path    string
	s       store.Audit
	log     *slog.Logger
	errs    *atomic.Int64
	timeout time.Duration

	f        *os.File
	size     int64 // the file's size after this writer's last read or write; -1 unknown
	lastSeq  int64 // seq of the file's last line, when size is known
	lastHash string
	refused  string // the last refusal logged, so that it is logged once, not per batch
	buf      []byte // the lines being written, kept for the next write
}

// mirrorChunk is how many bytes of lines the mirror writes at a time, and about the most its
// buffer keeps between writes.
const mirrorChunk = 256 << 10

func newMirrorFile(path string, s store.Audit, log *slog.Logger, errs *atomic.Int64, timeout time.Duration) *mirrorFile {
	return &mirrorFile{path: path, s: s, log: log, errs: errs, timeout: timeout, size: -1}
}

// run writes each batch from in, after first bringing the file up to the store's head (the
// repair after a crash), and closes the file when in is closed.
func (m *mirrorFile) run(in <-chan []store.AuditEntry, done chan<- struct{}) {
	defer close(done)
	m.sync(nil)
	var next []store.AuditEntry // a batch taken that does not follow the ones before it
	for {
		batch := next
		if batch == nil {
			var ok bool
			if batch, ok = <-in; !ok {
				break
			}
		}
		batch, next = gatherBatches(batch, in)
		m.sync(batch)
		if next == nil {
			time.Sleep(mirrorEvery)
		}
	}
	if m.f != nil {
		if err := m.f.Close(); err != nil {
			m.failed(err)
		}
	}
}

// gatherBatches appends to batch the batches waiting in in that follow it without a gap (a
// batch may be missing: the writer drops those it cannot queue), and returns the one that does
// not follow, if any, for the next write.
func gatherBatches(batch []store.AuditEntry, in <-chan []store.AuditEntry) (all, next []store.AuditEntry) {
	all = batch
	for {
		select {
		case b, ok := <-in:
			if !ok {
				return all, nil
			}
			if len(b) == 0 {
				continue
			}
			if len(all) > 0 && b[0].Seq != all[len(all)-1].Seq+1 {
				return all, b
			}
			if len(all) == len(batch) {
				all = append([]store.AuditEntry(nil), batch...) // not the writer's slice
			}
			all = append(all, b...)
		default:
			return all, nil
		}
	}
}

func (m *mirrorFile) failed(err error) {
	m.errs.Add(1)
	m.log.Error("audit: mirror write failed; the store still holds the records, and the next write adds what the mirror lacks", "err", err)
	m.size = -1
}

// refuse says, once per reason, that the mirror is not written because it disagrees with the
// store.
func (m *mirrorFile) refuse(reason string) {
	m.errs.Add(1)
	if reason != m.refused {
		m.refused = reason
		m.log.Error("audit: the mirror is not written: "+reason+"; run capgate audit verify", "mirror", m.path)
	}
	m.size = -1
}

// sync appends to the file the entries it lacks up to the end of batch (nil: up to the
// store's head), taking them from batch and, for what comes before it, from the store.
func (m *mirrorFile) sync(batch []store.AuditEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	if m.f == nil {
		f, err := os.OpenFile(m.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			m.failed(err)
			return
		}
		m.f = f
	}
	unlock, err := lockFile(m.f, true)
	if err != nil {
		m.failed(fmt.Errorf("lock %s: %w", m.path, err))
		return
	}
	defer unlock()
	fi, err := m.f.Stat()
	if err != nil {
		m.failed(err)
		return
	}
	if fi.Size() != m.size {
		// Another writer appended, or this is the first look: read where the file ends.
		if err := m.readTail(ctx, fi.Size()); err != nil {
			return
		}
	}
	var target int64
	if len(batch) > 0 {
		target = batch[len(batch)-1].Seq
	} else {
		h, err := m.s.AuditHead(ctx)
		if errors.Is(err, store.ErrNotFound) {
			if m.lastSeq > 0 {
				m.refuse("the mirror holds entries and the store none")
			}
			return
		}
		if err != nil {
			m.failed(fmt.Errorf("read the store's head: %w", err))
			return
		}
		target = h.Seq
	}
	if m.lastSeq >= target {
		if len(batch) == 0 && m.lastSeq > target {
			m.refuse("the mirror ends at seq " + strconv.FormatInt(m.lastSeq, 10) + ", past the store's head at seq " + strconv.FormatInt(target, 10))
		}
		return
	}
	from := m.lastSeq + 1
	for len(batch) == 0 || from < batch[0].Seq {
		// What the file lacks before the batch (or, without one, up to the head) comes from
		// the store, a page at a time.
		to := target
		if len(batch) > 0 {
			to = batch[0].Seq - 1
		}
		page, err := m.s.AuditRange(ctx, from, to, verifyPageSize)
		if err != nil {
			m.failed(fmt.Errorf("read the store from seq %d: %w", from, err))
			return
		}
		if len(page) == 0 {
			if len(batch) == 0 {
				return
			}
			break
		}
		if !m.appendEntries(page, false) {
			return
		}
		from = m.lastSeq + 1
		if len(batch) == 0 && from > target {
			return
		}
	}
	i := 0
	for i < len(batch) && batch[i].Seq <= m.lastSeq {
		i++
	}
	m.appendEntries(batch[i:], true)
}

// appendEntries appends the lines of es, which must follow the file's last line; it reports
// whether it did. canonical says the bodies are known to be canonical (a writer's own batch,
// made by Record.Body), which spares checking each again; the store's are checked. The lines
// go out mirrorChunk bytes at a time, from one buffer kept for the next call.
func (m *mirrorFile) appendEntries(es []store.AuditEntry, canonical bool) bool {
	if len(es) == 0 {
		return true
	}
	if es[0].Seq != m.lastSeq+1 || es[0].PrevHash != m.lastHash {
		m.refuse("the store's entry " + strconv.FormatInt(es[0].Seq, 10) + " does not follow the mirror's last line (seq " + strconv.FormatInt(m.lastSeq, 10) + ")")
		return false
	}
	b := m.buf[:0]
	for i, e := range es {
		b = appendLineOf(b, e, canonical)
		if len(b) < mirrorChunk && i < len(es)-1 {
			continue
		}
		if _, err := m.f.Write(b); err != nil {
			m.failed(err)
			return false
		}
		m.size += int64(len(b))
		m.lastSeq, m.lastHash = e.Seq, e.Hash
		b = b[:0]
	}
	if cap(b) <= 2*mirrorChunk {
		m.buf = b
	}
	m.refused = ""
	return true
}

// readTail finds the file's last line and its seq and hash, removing a last line cut short
// by a crash. It logs and returns an error when the file cannot be appended to.
func (m *mirrorFile) readTail(ctx context.Context, size int64) error {
	m.size, m.lastSeq, m.lastHash = -1, 0, ""
	// Read back from the end until the last line is in hand: the newline that ends it (the
	// file's last newline) and the one before it, or the file's start. Bytes after the last
	// newline are a line cut short. Neither is longer than MaxLineBytes, or the file was not
	// written by a writer.
	var tail []byte // the file from off to size
	off := size
	end, start := -1, -1 // in tail: the last newline, and the newline before it (-1: none yet)
	for {
		if end = bytes.LastIndexByte(tail, '\n'); end >= 0 {
			start = bytes.LastIndexByte(tail[:end], '\n')
		}
		if off == 0 || start >= 0 {
			break
		}
		if len(tail) > 2*MaxLineBytes+2 {
			m.refuse("the mirror's last line is longer than any entry's")
			return errors.New("mirror: last line too long")
		}
		n := min(off, 64<<10)
		off -= n
		chunk := make([]byte, n, int(n)+len(tail))
		if _, err := m.f.ReadAt(chunk, off); err != nil && !errors.Is(err, io.EOF) {
			m.failed(err)
			return err
		}
		tail = append(chunk, tail...)
	}
	if keep := off + int64(end+1); keep < size {
		// A write cut short: drop the bytes after the last newline, and write them again.
		if err := m.f.Truncate(keep); err != nil {
			m.failed(fmt.Errorf("remove a last line cut short: %w", err))
			return err
		}
		m.log.Warn("audit: removed the mirror's last line, cut short by a crash; the store's entries are written again", "mirror", m.path, "bytes", size-keep)
		size = keep
	}
	if end < 0 {
		m.size = size // empty, or emptied of one torn line
		return nil
	}
	pl, err := parseLine(tail[start+1 : end])
	if err != nil || pl.checkpoint.Seq != 0 {
		m.refuse("the mirror's last line is not an entry line")
		return errors.New("mirror: last line does not parse")
	}
	// The line the next ones will follow must be the store's: appending the store's entries
	// after a line of another log (or an edited one) would bury the disagreement.
	e := pl.entry
	es, err := m.s.AuditRange(ctx, e.Seq, e.Seq, 1)
	switch {
	case err != nil:
		m.failed(fmt.Errorf("read the store's entry %d: %w", e.Seq, err))
		return err
	case len(es) == 0 || es[0].Seq != e.Seq:
		m.refuse("the mirror's last line is entry " + strconv.FormatInt(e.Seq, 10) + ", which the store lacks")
		return errors.New("mirror: last line not in the store")
	case es[0].Hash != e.Hash || es[0].PrevHash != e.PrevHash || !bytes.Equal(es[0].Body, e.Body):
		m.refuse("the mirror's last line differs from the store's entry " + strconv.FormatInt(e.Seq, 10))
		return errors.New("mirror: last line differs from the store")
	}
	m.size, m.lastSeq, m.lastHash = size, e.Seq, e.Hash
	return nil
}
