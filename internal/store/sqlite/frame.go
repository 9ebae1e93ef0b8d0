package sqlite

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/capgate/capgate/internal/store"
)

// A frame is one batch of the audit log, written whole: its payload's length (uint32,
// big-endian), the payload's CRC-32C, and the payload: the entry count (uint32), then each
// entry's seq (int64), time (a byte, 1 when set, and int64 Unix nanoseconds), previous hash,
// hash and body (each a uint32 length and the bytes). The entries of a frame follow each
// other (seq one more, previous hash the hash before): a frame is one run of the chain.

// maxFrame bounds a frame: a batch of the audit writer's largest records.
const maxFrame = 64 << 20

// frameHeader is the length and checksum before a frame's payload; minFramePayload the
// least payload that holds an entry count and one entry (its fixed fields and three empty
// lengths), whose seq is read without decoding the frame.
const (
	frameHeader     = 8
	minEntry        = 17 + 12
	minFramePayload = 4 + minEntry
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeFrame is entries as one frame.
func encodeFrame(entries []store.AuditEntry) ([]byte, error) {
	return appendFrame(nil, entries)
}

// appendFrame appends entries as one frame to b.
func appendFrame(b []byte, entries []store.AuditEntry) ([]byte, error) {
	n := frameHeader + 4
	for _, e := range entries {
		n += 8 + 1 + 8 + 12 + len(e.PrevHash) + len(e.Hash) + len(e.Body)
	}
	if n-frameHeader > maxFrame {
		return b, fmt.Errorf("audit log: a batch of %d bytes, more than a frame holds (%d)", n-frameHeader, maxFrame)
	}
	start := len(b)
	b = append(b, make([]byte, frameHeader)...)
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
		b = binary.BigEndian.AppendUint32(b, uint32(len(e.PrevHash)))
		b = append(b, e.PrevHash...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(e.Hash)))
		b = append(b, e.Hash...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(e.Body)))
		b = append(b, e.Body...)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-frameHeader))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(b[start+frameHeader:], castagnoli))
	return b, nil
}

// frameSpan checks the frame at the start of b without decoding its entries: its length,
// its checksum, and that it holds at least one entry; it returns the frame's length (header
// included), its entry count and its first entry's seq, and false when b does not start with
// a whole frame whose checksum is right.
func frameSpan(b []byte) (n int, count uint32, first int64, ok bool) {
	if len(b) < frameHeader {
		return 0, 0, 0, false
	}
	l := binary.BigEndian.Uint32(b)
	if l > maxFrame || int64(l)+frameHeader > int64(len(b)) || l < minFramePayload {
		return 0, 0, 0, false
	}
	p := b[frameHeader : frameHeader+l]
	if crc32.Checksum(p, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return 0, 0, 0, false
	}
	count = binary.BigEndian.Uint32(p)
	if count == 0 || uint64(count) > uint64(len(p)-4)/minEntry {
		return 0, 0, 0, false
	}
	return int(l) + frameHeader, count, int64(binary.BigEndian.Uint64(p[4:])), true
}

// decodeFrame reads the frame at the start of b: its entries and its length; false when b
// does not start with a whole frame whose checksum and fields are right.
func decodeFrame(b []byte) ([]store.AuditEntry, int, bool) {
	return decodeFrameInto(nil, b)
}

// decodeFrameInto is decodeFrame appending the entries to dst, which it returns whole
// (entries and all) only when the frame is right.
func decodeFrameInto(dst []store.AuditEntry, b []byte) ([]store.AuditEntry, int, bool) {
	total, count, _, ok := frameSpan(b)
	if !ok {
		return dst, 0, false
	}
	p := b[frameHeader+4 : total]
	base := len(dst)
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
			return dst[:base], 0, false
		}
		e := store.AuditEntry{Seq: int64(binary.BigEndian.Uint64(p))}
		valid := p[8]
		at := store.NullInt{Int64: int64(binary.BigEndian.Uint64(p[9:])), Valid: valid == 1}
		if valid > 1 || (!at.Valid && at.Int64 != 0) {
			return dst[:base], 0, false
		}
		e.At = at.Time()
		p = p[17:]
		prev, ok1 := field()
		hash, ok2 := field()
		body, ok3 := field()
		if !ok1 || !ok2 || !ok3 {
			return dst[:base], 0, false
		}
		e.PrevHash, e.Hash, e.Body = string(prev), string(hash), append([]byte(nil), body...)
		if len(dst) > base && (e.Seq != dst[len(dst)-1].Seq+1 || e.PrevHash != dst[len(dst)-1].Hash) {
			return dst[:base], 0, false
		}
		dst = append(dst, e)
	}
	if len(p) != 0 {
		return dst[:base], 0, false
	}
	return dst, total, true
}
