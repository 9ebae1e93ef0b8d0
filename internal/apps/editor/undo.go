package editor

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"
)

// undoRecord is what one call changed, kept until it is undone, too old, or pushed out.
type undoRecord struct {
	capID string
	at    time.Time

	// For every record: the buffer before the call, and the generation the call left it at.
	before   buffer
	afterGen uint64

	// For save_file: the file written, what it held before, and the digest of what was written.
	rel     string
	prev    previous
	written [sha256.Size]byte
}

func (r *undoRecord) size() int { return len(r.before.content) + len(r.prev.data) + 256 }

// undoStore keeps undo records in memory, keyed by an unguessable token, oldest first. It is
// guarded by the App's lock. The zero undoStore is empty and ready.
type undoStore struct {
	recs  map[string]*undoRecord
	order []string // the tokens of recs, oldest first
	bytes int
}

// put keeps rec and returns its token, first dropping records past the window and then the
// oldest until the store is within its bounds.
func (u *undoStore) put(rec *undoRecord, now time.Time) string {
	if u.recs == nil {
		u.recs = map[string]*undoRecord{}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	u.recs[tok] = rec
	u.order = append(u.order, tok)
	u.bytes += rec.size()
	for len(u.order) > 0 {
		old := u.recs[u.order[0]]
		if now.Sub(old.at) <= UndoWindow+undoGrace && len(u.recs) <= MaxUndoRecords && u.bytes <= MaxUndoBytes {
			break
		}
		u.drop(u.order[0])
	}
	return tok
}

// get returns the record of tok for capability capID, if it is still kept and in its window.
func (u *undoStore) get(tok, capID string, now time.Time) (*undoRecord, bool) {
	r, ok := u.recs[tok]
	if !ok || r.capID != capID || now.Sub(r.at) > UndoWindow+undoGrace {
		return nil, false
	}
	return r, true
}

// drop forgets the record of tok.
func (u *undoStore) drop(tok string) {
	if r, ok := u.recs[tok]; ok {
		u.bytes -= r.size()
		delete(u.recs, tok)
		u.order = slices.DeleteFunc(u.order, func(t string) bool { return t == tok })
	}
}
