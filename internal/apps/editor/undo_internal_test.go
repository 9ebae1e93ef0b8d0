package editor

import (
	"testing"
	"time"
)

func TestUndoStoreBounds(t *testing.T) {
	var u undoStore
	t0 := time.Unix(1_700_000_000, 0)
	first := u.put(&undoRecord{capID: SetID, at: t0}, t0)
	if _, ok := u.get(first, SetID, t0.Add(UndoWindow)); !ok {
		t.Fatal("record gone within its window")
	}
	if _, ok := u.get(first, SetID, t0.Add(UndoWindow+undoGrace+time.Second)); ok {
		t.Fatal("record found past its window")
	}
	if _, ok := u.get(first, OpenID, t0); ok {
		t.Fatal("record found under another capability")
	}
	// Past the window, the next put drops it.
	later := t0.Add(UndoWindow + undoGrace + time.Second)
	u.put(&undoRecord{capID: SetID, at: later}, later)
	if _, ok := u.recs[first]; ok || len(u.order) != 1 {
		t.Fatalf("old record kept: %d", len(u.order))
	}
	// Count bound: the oldest go first.
	var toks []string
	for range MaxUndoRecords + 10 {
		toks = append(toks, u.put(&undoRecord{capID: SetID, at: later}, later))
	}
	if len(u.recs) != MaxUndoRecords || len(u.order) != MaxUndoRecords {
		t.Fatalf("%d records kept, %d in order", len(u.recs), len(u.order))
	}
	if _, ok := u.get(toks[0], SetID, later); ok {
		t.Fatal("the oldest record was kept")
	}
	if _, ok := u.get(toks[len(toks)-1], SetID, later); !ok {
		t.Fatal("the newest record was dropped")
	}
	// Byte bound.
	big := string(make([]byte, MaxFileBytes))
	for range MaxUndoBytes/MaxFileBytes + 5 {
		u.put(&undoRecord{capID: SetID, at: later, before: buffer{content: big}}, later)
	}
	if u.bytes > MaxUndoBytes {
		t.Fatalf("%d bytes kept", u.bytes)
	}
	for tok := range u.recs {
		u.drop(tok)
	}
	if u.bytes != 0 || len(u.order) != 0 {
		t.Fatalf("after dropping all: %d bytes, %d in order", u.bytes, len(u.order))
	}
}
