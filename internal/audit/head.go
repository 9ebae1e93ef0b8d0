package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"

	"github.com/capgate/capgate/internal/atomicfile"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/store"
)

// HeadFormat names the format of a head file's slot: it is the slot's "format" member, so
// that a later format is told apart rather than misread.
const HeadFormat = "capgate-audit-head-v1"

// Head is the log's head as kept outside the store: the last entry (Seq, Hash) that a writer
// made durable, and the latest checkpoint a writer signed, which may be older. A head says
// "the log had at least Seq entries and entry Seq had this hash"; the store must never hold
// less. The zero Head is "nothing kept yet".
//
// The checkpoint is signed by the gateway's key; Seq and Hash are not, so they prove a cut
// only to someone who trusts the file was not rewritten with the store.
type Head struct {
	Seq        int64            // 0: no head yet
	Hash       string           // Hash of entry Seq
	Checkpoint store.Checkpoint // Seq 0: no checkpoint yet; else at or below Seq
}

// ErrHeadFork is a head that disagrees with the one it would replace: the same seq with
// another hash, or a store whose entries do not lead to the head kept before. It is evidence
// that the log was altered (or that two logs share one head file), and the head kept before
// is left in place.
var ErrHeadFork = errors.New("audit: the head disagrees with the head kept before")

// ErrBadHead is a head file, or one of its slots, that breaks its format.
var ErrBadHead = errors.New("audit: bad head file")

// appendHead appends the canonical JSON of h:
//
//	{"checkpoint":<checkpoint body>|null,"format":"capgate-audit-head-v1","hash":"sha256:…","seq":N}
func appendHead(dst []byte, h Head) []byte {
	dst = append(dst, `{"checkpoint":`...)
	if h.Checkpoint.Seq == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, h.Checkpoint.Body...)
	}
	dst = append(dst, `,"format":"`+HeadFormat+`","hash":"`...)
	dst = append(dst, h.Hash...)
	dst = append(dst, `","seq":`...)
	dst = strconv.AppendInt(dst, h.Seq, 10)
	return append(dst, '}')
}

// ParseHead reads one head (a slot's content without its padding) strictly: canonical JSON
// of exactly the members checkpoint, format, hash and seq; format HeadFormat; seq an integer
// in 1..2^53-1; hash "sha256:" and 64 hex digits; checkpoint null or a checkpoint body that
// passes the static rules of VerifyCheckpoint (its signature is not checked here), at or
// below seq, and with hash as its head when at seq. Failures wrap ErrBadHead and name the
// member, never its value.
func ParseHead(b []byte) (Head, error) {
	fail := func(rule string) (Head, error) { return Head{}, fmt.Errorf("%w: %s", ErrBadHead, rule) }
	if len(b) > headSlotSize {
		return fail("longer than a slot")
	}
	v, err := jcs.Parse(b, &jcs.Options{MaxDepth: 2, ExactNumbers: true})
	if err != nil {
		return fail("not strict JSON")
	}
	canon, err := v.AppendCanonical(nil)
	if err != nil || !bytes.Equal(canon, b) {
		return fail("not in RFC 8785 canonical form")
	}
	names := [4]string{"checkpoint", "format", "hash", "seq"}
	if v.Kind != jcs.Object || len(v.Members) != len(names) {
		return fail("must be an object of checkpoint, format, hash and seq")
	}
	for i, m := range v.Members {
		if m.Name != names[i] {
			return fail("must be an object of checkpoint, format, hash and seq")
		}
	}
	cpv, format, hash, seqv := v.Members[0].Value, v.Members[1].Value, v.Members[2].Value, v.Members[3].Value
	if format.Kind != jcs.String || format.Str != HeadFormat {
		return fail("format: must be " + strconv.Quote(HeadFormat))
	}
	if hash.Kind != jcs.String || !isDigest(hash.Str) {
		return fail(`hash: must be "sha256:" and 64 lowercase hex digits`)
	}
	x := seqv.Float
	if seqv.Kind != jcs.Number || x != math.Trunc(x) || x < 1 || x > maxSafeInteger {
		return fail("seq: must be an integer in 1..2^53-1")
	}
	h := Head{Seq: int64(x), Hash: hash.Str}
	switch cpv.Kind {
	case jcs.Null:
	case jcs.Object:
		body, err := cpv.AppendCanonical(nil)
		if err != nil {
			return fail("checkpoint: not canonical")
		}
		c, err := checkpointFromBody(body)
		if err != nil {
			return fail("checkpoint: " + ruleOf(err, ErrBadCheckpoint))
		}
		if c.Seq > h.Seq {
			return fail("checkpoint: seq above the head's seq")
		}
		if c.Seq == h.Seq && c.Head != h.Hash {
			return fail("checkpoint: at the head's seq with another hash")
		}
		h.Checkpoint = c
	default:
		return fail("checkpoint: must be null or a checkpoint")
	}
	return h, nil
}

// A head file holds two slots of headSlotSize bytes, each a head's canonical JSON padded with
// spaces to its last byte, a newline (or only spaces and the newline: an empty slot):
//
//	{"checkpoint":{…},"format":"capgate-audit-head-v1","hash":"sha256:…","seq":1042}   …   \n
//	{"checkpoint":{…},"format":"capgate-audit-head-v1","hash":"sha256:…","seq":1041}   …   \n
//
// A writer overwrites the slot that does not hold the newer head, in place, and syncs it; a
// reader takes the newer of the slots that parse. A write torn by a crash damages only the
// slot it was writing, so the other still holds the head before it. Overwriting one slot in
// place costs one sync, against the three of a write-and-rename (docs/performance.md).
const (
	headSlotSize = 512
	headFileSize = 2 * headSlotSize
)

// encodeSlot returns h as one slot; the zero Head is an empty slot. A valid head is at most
// about 420 bytes (the longest seq and time); one that would not fit is an error.
func encodeSlot(h Head) ([]byte, error) {
	slot := make([]byte, 0, headSlotSize)
	if h.Seq != 0 {
		slot = appendHead(slot, h)
	}
	if len(slot) > headSlotSize-1 {
		return nil, fmt.Errorf("%w: the head does not fit a slot", ErrBadHead)
	}
	for len(slot) < headSlotSize-1 {
		slot = append(slot, ' ')
	}
	return append(slot, '\n'), nil
}

// parseSlot reads one slot: an empty one is the zero Head.
func parseSlot(slot []byte) (Head, error) {
	if len(slot) != headSlotSize || slot[headSlotSize-1] != '\n' {
		return Head{}, fmt.Errorf("%w: a slot must be %d bytes ending in a newline", ErrBadHead, headSlotSize)
	}
	content := bytes.TrimRight(slot[:headSlotSize-1], " ")
	if len(content) == 0 {
		return Head{}, nil
	}
	return ParseHead(content)
}

// HeadFileContent is what ReadHeadFile found.
type HeadFileContent struct {
	Head    Head  // the newer of the slots that parse; the zero Head when neither holds one
	Newer   int   // the slot Head came from (0 or 1), -1 when neither holds one
	Damaged []int // slots that do not parse (a torn write leaves one), in order
}

// parseHeadFile reads a head file's bytes: exactly headFileSize bytes of two slots. It is an
// error wrapping ErrBadHead when the size is wrong or neither slot parses; one damaged slot
// is reported in Damaged, the other used.
func parseHeadFile(b []byte) (HeadFileContent, error) {
	out := HeadFileContent{Newer: -1}
	if len(b) != headFileSize {
		return out, fmt.Errorf("%w: must be %d bytes", ErrBadHead, headFileSize)
	}
	var heads [2]Head
	var errs [2]error
	for i := range heads {
		heads[i], errs[i] = parseSlot(b[i*headSlotSize : (i+1)*headSlotSize])
		if errs[i] != nil {
			out.Damaged = append(out.Damaged, i)
		}
	}
	if errs[0] != nil && errs[1] != nil {
		return out, fmt.Errorf("slot 0: %w; slot 1: %s", errs[0], ruleOf(errs[1], ErrBadHead))
	}
	for i, h := range heads {
		if errs[i] == nil && h.Seq != 0 && (out.Newer < 0 || newerHead(h, out.Head)) {
			out.Head, out.Newer = h, i
		}
	}
	return out, nil
}

// newerHead orders heads by seq, then checkpoint seq.
func newerHead(a, b Head) bool {
	return a.Seq > b.Seq || a.Seq == b.Seq && a.Checkpoint.Seq > b.Checkpoint.Seq
}

// sameHead reports whether a and b say the same.
func sameHead(a, b Head) bool {
	return a.Seq == b.Seq && a.Hash == b.Hash && a.Checkpoint.Seq == b.Checkpoint.Seq &&
		a.Checkpoint.Head == b.Checkpoint.Head && bytes.Equal(a.Checkpoint.Body, b.Checkpoint.Body)
}

// mergeHead returns the head that replaces cur once next is known: the higher seq with its
// hash, and the higher checkpoint. It is ErrHeadFork when next and cur disagree where they
// overlap (one seq, two hashes; one checkpoint seq, two heads) or the merged checkpoint is
// at the merged seq with another hash. That next's seq follows from cur's through the log
// is the caller's to check (HeadFile.Advance's linked).
func mergeHead(cur, next Head) (Head, error) {
	out := cur
	switch {
	case next.Seq > cur.Seq:
		out.Seq, out.Hash = next.Seq, next.Hash
	case next.Seq == cur.Seq && next.Hash != cur.Hash:
		return cur, fmt.Errorf("%w: seq %d has another hash", ErrHeadFork, cur.Seq)
	}
	switch {
	case next.Checkpoint.Seq > cur.Checkpoint.Seq:
		out.Checkpoint = next.Checkpoint
	case next.Checkpoint.Seq != 0 && next.Checkpoint.Seq == cur.Checkpoint.Seq && next.Checkpoint.Head != cur.Checkpoint.Head:
		return cur, fmt.Errorf("%w: the checkpoint at seq %d has another head", ErrHeadFork, cur.Checkpoint.Seq)
	}
	if out.Checkpoint.Seq > out.Seq {
		// A checkpoint is signed over a head already kept; one above it comes from another log.
		return cur, fmt.Errorf("%w: a checkpoint at seq %d above the head at seq %d", ErrHeadFork, out.Checkpoint.Seq, out.Seq)
	}
	if out.Checkpoint.Seq != 0 && out.Checkpoint.Seq == out.Seq && out.Checkpoint.Head != out.Hash {
		return cur, fmt.Errorf("%w: the checkpoint at seq %d has another head than the head", ErrHeadFork, out.Seq)
	}
	return out, nil
}

// HeadFile is a head file that only ever moves forward: every process that writes the log
// (gateway replicas sharing a data folder, the command line beside a running gateway) advances
// it under an exclusive lock on the file, reading the head before writing the next, so that
// the head never goes back and two writers never lose each other's. Reads take a shared lock.
// A HeadFile is not safe for concurrent use; each writer holds its own.
type HeadFile struct {
	path string
	f    *os.File // opened on first use
}

// NewHeadFile returns the head file at path; nothing is opened or created until it is used.
func NewHeadFile(path string) *HeadFile { return &HeadFile{path: path} }

// Path returns the file's path.
func (h *HeadFile) Path() string { return h.path }

// Close closes the file if it was opened.
func (h *HeadFile) Close() error {
	if h.f == nil {
		return nil
	}
	err := h.f.Close()
	h.f = nil
	return err
}

// open opens the file for reading and writing, creating it (two empty slots, written and
// synced with its folder before it appears, so that a crash never leaves a short file) when
// it is missing.
func (h *HeadFile) open() error {
	if h.f != nil {
		return nil
	}
	f, err := os.OpenFile(h.path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		empty, _ := encodeSlot(Head{})
		empty = append(empty, empty...)
		err = atomicfile.Write(h.path, empty, 0o600, 0o700, false)
		if err != nil && !errors.Is(err, atomicfile.ErrExists) {
			return fmt.Errorf("audit: head file: %w", err)
		}
		// Ours, or another writer's made at the same moment: both hold empty slots.
		f, err = os.OpenFile(h.path, os.O_RDWR, 0)
	}
	if err != nil {
		return fmt.Errorf("audit: head file: %w", err)
	}
	h.f = f
	return nil
}

// Advance moves the head file forward to next, under the file's exclusive lock: it reads the
// head kept (cur), merges next into it (the higher seq and the higher checkpoint), and writes
// the result into the slot that does not hold cur, synced, when it differs from cur. When cur
// holds a head at another seq than next's, linked(cur) must say that the writer's log holds
// cur (its entry at cur.Seq has cur.Hash: the log leads from cur to next, or on past next to
// cur), or Advance writes nothing and returns its error; a nil linked skips the check (a
// witness, which has no log to look in). It returns cur, the head kept before. A disagreement
// is ErrHeadFork, and cur stays.
func (h *HeadFile) Advance(next Head, linked func(cur Head) error) (Head, error) {
	if next.Seq == 0 && next.Checkpoint.Seq == 0 {
		return Head{}, errors.New("audit: head file: advance to no head")
	}
	if err := h.open(); err != nil {
		return Head{}, err
	}
	unlock, err := lockFile(h.f, true)
	if err != nil {
		return Head{}, fmt.Errorf("audit: head file %s: %w", h.path, err)
	}
	defer unlock()
	content, err := h.readLocked()
	if err != nil {
		return Head{}, err
	}
	cur := content.Head
	out, err := mergeHead(cur, next)
	if err != nil {
		return cur, err
	}
	if cur.Seq != 0 && cur.Seq != next.Seq && linked != nil {
		if err := linked(cur); err != nil {
			return cur, err
		}
	}
	if sameHead(out, cur) {
		return cur, nil
	}
	slot := 0
	if content.Newer == 0 {
		slot = 1
	}
	b, err := encodeSlot(out)
	if err != nil {
		return cur, err
	}
	if _, err := h.f.WriteAt(b, int64(slot*headSlotSize)); err != nil {
		return cur, fmt.Errorf("audit: head file %s: %w", h.path, err)
	}
	if err := datasync(h.f); err != nil {
		return cur, fmt.Errorf("audit: head file %s: %w", h.path, err)
	}
	return cur, nil
}

// readLocked reads both slots; the caller holds a lock.
func (h *HeadFile) readLocked() (HeadFileContent, error) {
	b := make([]byte, headFileSize+1)
	n, err := h.f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return HeadFileContent{Newer: -1}, fmt.Errorf("audit: head file %s: %w", h.path, err)
	}
	c, err := parseHeadFile(b[:n])
	if err != nil {
		return c, fmt.Errorf("head file %s: %w", h.path, err)
	}
	return c, nil
}

// Read returns what the head file holds, under a shared lock. A missing file is an error
// wrapping fs.ErrNotExist; one that breaks the format wraps ErrBadHead.
func (h *HeadFile) Read() (HeadFileContent, error) {
	f := h.f
	if f == nil {
		var err error
		if f, err = os.Open(h.path); err != nil {
			return HeadFileContent{Newer: -1}, fmt.Errorf("audit: head file: %w", err)
		}
		defer f.Close()
	}
	unlock, err := lockFile(f, false)
	if err != nil {
		return HeadFileContent{Newer: -1}, fmt.Errorf("audit: head file %s: %w", h.path, err)
	}
	defer unlock()
	r := HeadFile{path: h.path, f: f}
	return r.readLocked()
}

// ReadHeadFile reads the head file at path (HeadFile.Read).
func ReadHeadFile(path string) (HeadFileContent, error) { return NewHeadFile(path).Read() }
