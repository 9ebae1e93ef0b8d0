package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// ChainDomain starts every hashed message: it names the recipe, so that a hash of this log
// can never be mistaken for a hash of anything else capgate computes, and a future recipe
// ("capgate-audit-v2") can never collide with this one.
const ChainDomain = "capgate-audit-v1"

// EntryHash returns the hash of the entry with this seq, prev hash and body:
//
//	"sha256:" + hex(SHA-256("capgate-audit-v1\n" + prevHash + "\n" + decimal(seq) + "\n" + body))
//
// prevHash is the text of the previous entry's hash ("" for seq 1), decimal(seq) is seq in
// base ten without sign or leading zeros, and body is the entry's bytes as stored (no
// trailing newline). The seq is hashed so that an entry moved to another position no longer
// matches; the body is the last field so that its length needs no delimiter.
func EntryHash(prevHash string, seq int64, body []byte) string {
	// The message in one buffer, on the stack for an entry of usual size, hashed at once:
	// no hash state or digest on the heap, one allocation for the text.
	var buf [1024]byte
	b := append(buf[:0], ChainDomain...)
	b = append(b, '\n')
	b = append(b, prevHash...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, '\n')
	b = append(b, body...)
	return hashText(sha256.Sum256(b))
}

// hashText is the text of a SHA-256 digest: "sha256:" and 64 lowercase hex digits.
func hashText(sum [sha256.Size]byte) string {
	var out [len(hashPrefix) + 2*sha256.Size]byte
	copy(out[:], hashPrefix)
	hex.Encode(out[len(hashPrefix):], sum[:])
	return string(out[:])
}

// hashPrefix names the digest of a hash's text.
const hashPrefix = "sha256:"

// head is the end of the chain as a writer knows it: the last entry's seq and hash, or 0 and
// "" for an empty log.
type head struct {
	seq  int64
	hash string
}

// next returns the entry that follows h with this body, and the new head.
func (h head) next(body []byte, at time.Time) (store.AuditEntry, head) {
	seq := h.seq + 1
	e := store.AuditEntry{Seq: seq, PrevHash: h.hash, Hash: EntryHash(h.hash, seq, body), At: at, Body: body}
	return e, head{seq: seq, hash: e.Hash}
}

// Entry is a decoded entry of the log.
type Entry struct {
	Seq      int64     `json:"seq"`
	PrevHash string    `json:"prev_hash"`
	Hash     string    `json:"hash"`
	At       time.Time `json:"at"` // when the writer made the entry; not covered by Hash (Record.Timestamp is)
	Record   Record    `json:"record"`
}

// DecodeEntry decodes e's body with DecodeRecord. It does not check the hashes; Verify does.
func DecodeEntry(e store.AuditEntry) (Entry, error) {
	r, err := DecodeRecord(e.Body)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Seq: e.Seq, PrevHash: e.PrevHash, Hash: e.Hash, At: e.At, Record: r}, nil
}
