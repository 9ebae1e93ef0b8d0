package audit

import (
	"context"
	"testing"

	"github.com/capgate/capgate/internal/store"
)

// FuzzVerifyBody puts arbitrary bytes as the body of entry 2 of a three-entry log, with the
// chain re-hashed around it, and checks that Verify never panics, and reports a problem at
// seq 2 exactly when the bytes are not the canonical body of a valid record.
func FuzzVerifyBody(f *testing.F) {
	f.Add([]byte(vecBody1))
	f.Add([]byte(vecBody2))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"action":1}`))
	f.Add([]byte("\xef\xbb\xbf{}"))
	f.Add([]byte(`[[[[[[[[[[`))
	f.Add([]byte(`{"action":"execute","action":"x"}`))
	base := buildLog(f, 3)
	pub := pubOf(testKey())
	f.Fuzz(func(t *testing.T, body []byte) {
		m := &memAudit{entries: make([]store.AuditEntry, len(base.entries))}
		for i, e := range base.entries {
			m.entries[i] = cloneEntry(e)
		}
		m.entries[1].Body = body
		rehashFrom(m, 1)
		rep, err := Verify(context.Background(), m, pub)
		if err != nil {
			t.Fatal(err)
		}
		_, decodeErr := DecodeRecord(body)
		flagged := false
		for _, p := range rep.Problems {
			if p.Seq != 2 {
				t.Fatalf("problem at seq %d for a body at seq 2: %v", p.Seq, p)
			}
			flagged = true
		}
		if flagged != (decodeErr != nil) {
			t.Fatalf("flagged %v, decode error %v", flagged, decodeErr)
		}
		if decodeErr == nil {
			// A body that decodes is the one canonical spelling of its record.
			r, _ := DecodeRecord(body)
			again, err := r.Body()
			if err != nil || string(again) != string(body) {
				t.Fatalf("decoded body does not round-trip: %v", err)
			}
		}

		// Without the re-hash the edit must show, whatever the bytes.
		m.entries[1].Hash = base.entries[1].Hash
		m.entries[2].PrevHash = base.entries[2].PrevHash
		m.entries[2].Hash = base.entries[2].Hash
		rep, _ = Verify(context.Background(), m, pub)
		if string(body) != string(base.entries[1].Body) && rep.OK() {
			t.Fatal("edited body not detected")
		}
	})
}

// FuzzVerifyCheckpoint checks that arbitrary checkpoint bodies never panic VerifyCheckpoint
// and never verify unless they are exactly what SignCheckpoint would write.
func FuzzVerifyCheckpoint(f *testing.F) {
	f.Add([]byte(vecCheckpoint), int64(2))
	f.Add([]byte(`{}`), int64(1))
	pub := pubOf(testKey())
	f.Fuzz(func(t *testing.T, body []byte, seq int64) {
		c := store.Checkpoint{Seq: seq, Head: vecHash2, Body: body}
		if err := VerifyCheckpoint(pub, c); err == nil && string(body) != vecCheckpoint {
			t.Fatalf("forged checkpoint verified: %q", body)
		}
	})
}
