package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// batch is n entries following head.
func batch(head AuditEntry, n int) []AuditEntry {
	es := make([]AuditEntry, n)
	for i := range es {
		e := AuditEntry{Seq: head.Seq + 1, PrevHash: head.Hash, Hash: "h" + string(rune('a'+i)), At: time.Unix(int64(i), 0)}
		es[i], head = e, e
	}
	return es
}

func TestCheckAudit(t *testing.T) {
	es := batch(AuditEntry{Seq: 7, Hash: "h7"}, 4)
	var seen []NullInt
	if err := CheckAudit(es, func(i int, at NullInt) {
		if i != len(seen) {
			t.Errorf("each(%d) after %d calls", i, len(seen))
		}
		seen = append(seen, at)
	}); err != nil {
		t.Fatal(err)
	}
	for i, at := range seen {
		if at != (NullInt{Int64: int64(i) * 1e9, Valid: true}) {
			t.Errorf("entries[%d].At column %+v", i, at)
		}
	}
	if len(seen) != len(es) {
		t.Errorf("each called %d times for %d entries", len(seen), len(es))
	}
	if err := CheckAudit(es, nil); err != nil {
		t.Errorf("nil each: %v", err)
	}

	for _, tc := range []struct {
		name     string
		mangle   func(es []AuditEntry)
		want     string
		conflict bool
	}{
		{"a gap", func(es []AuditEntry) { es[2].Seq++ }, "entries[2] does not follow entries[1]", true},
		{"a repeat", func(es []AuditEntry) { es[3].Seq = es[2].Seq }, "entries[3] does not follow entries[2]", true},
		{"a fork", func(es []AuditEntry) { es[1].PrevHash = "other" }, "entries[1] does not follow entries[0]", true},
		{"an empty link", func(es []AuditEntry) { es[1].PrevHash = "" }, "entries[1] does not follow entries[0]", true},
		{"a time out of range", func(es []AuditEntry) { es[3].At = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }, "entries[3].At: ", false},
	} {
		bad := batch(AuditEntry{Seq: 7, Hash: "h7"}, 4)
		tc.mangle(bad)
		err := CheckAudit(bad, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || errors.Is(err, ErrConflict) != tc.conflict {
			t.Errorf("%s: %v, want %q (conflict %v)", tc.name, err, tc.want, tc.conflict)
		}
	}
}

func TestCheckHead(t *testing.T) {
	head := AuditEntry{Seq: 7, Hash: "h7"}
	if err := CheckHead(head, AuditEntry{Seq: 8, PrevHash: "h7"}); err != nil {
		t.Errorf("the next entry: %v", err)
	}
	if err := CheckHead(AuditEntry{}, AuditEntry{Seq: 1}); err != nil {
		t.Errorf("the first entry of an empty log: %v", err)
	}
	for _, first := range []AuditEntry{
		{Seq: 7, PrevHash: "h7"}, {Seq: 9, PrevHash: "h7"}, {Seq: 8, PrevHash: "h6"}, {Seq: 8},
		{Seq: 1}, // a log started again over this one
	} {
		if err := CheckHead(head, first); !errors.Is(err, ErrConflict) {
			t.Errorf("CheckHead(%+v) = %v, want ErrConflict", first, err)
		}
	}
	if err := CheckHead(AuditEntry{}, AuditEntry{Seq: 1, PrevHash: "x"}); !errors.Is(err, ErrConflict) {
		t.Errorf("a first entry that names a predecessor: %v", err)
	}
}

func TestCheckLimit(t *testing.T) {
	for _, n := range []int{0, 1, 1 << 40} {
		if err := CheckLimit(n); err != nil {
			t.Errorf("CheckLimit(%d) = %v", n, err)
		}
	}
	for _, n := range []int{-1, -1 << 62} {
		if err := CheckLimit(n); err == nil || !strings.HasPrefix(err.Error(), "limit: ") {
			t.Errorf("CheckLimit(%d) = %v", n, err)
		}
	}
}
