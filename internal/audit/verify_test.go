package audit

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// problemSeqs returns the distinct seqs of the problems, in order.
func problemSeqs(ps []Problem) []int64 {
	var out []int64
	for _, p := range ps {
		if len(out) == 0 || out[len(out)-1] != p.Seq {
			out = append(out, p.Seq)
		}
	}
	return out
}

func TestVerifyTampering(t *testing.T) {
	editBody := func(m *memAudit, seq int64) {
		e := &m.entries[seq-1]
		r, _ := DecodeRecord(e.Body)
		r.Decision, r.Code = DecisionDeny, "CAPABILITY_DENIED"
		e.Body, _ = r.Body()
	}
	tests := []struct {
		name        string
		checkpoints []int64
		tamper      func(m *memAudit)
		want        []int64 // seqs of problems
		warnAt      int64   // seq of the unproven-tail warning, 0 for none
	}{
		{name: "intact", checkpoints: []int64{5, 10}},
		{name: "intact, unproven tail", checkpoints: []int64{5}, warnAt: 6},
		{name: "no checkpoints", warnAt: 1},
		{
			name: "edited record", checkpoints: []int64{10},
			tamper: func(m *memAudit) { editBody(m, 4) },
			want:   []int64{4},
		},
		{
			name: "edited record, later hashes recomputed", checkpoints: []int64{5, 10},
			tamper: func(m *memAudit) { editBody(m, 7); rehashFrom(m, 6) },
			want:   []int64{10},
		},
		{
			name: "edited record, whole log rehashed", checkpoints: []int64{3, 5, 10},
			tamper: func(m *memAudit) { editBody(m, 2); rehashFrom(m, 0) },
			want:   []int64{3, 5, 10},
		},
		{
			name: "invalid body, hashes recomputed", checkpoints: []int64{10},
			tamper: func(m *memAudit) { m.entries[5].Body = []byte(`{"kind":"decision"}`); rehashFrom(m, 5) },
			want:   []int64{6, 10},
		},
		{
			name: "deleted middle entry", checkpoints: []int64{10},
			tamper: func(m *memAudit) { m.entries = slices.Delete(m.entries, 5, 6) },
			want:   []int64{6},
		},
		{
			name: "deleted tail after the last checkpoint", checkpoints: []int64{5},
			tamper: func(m *memAudit) { m.entries = m.entries[:8] },
			warnAt: 6,
		},
		{
			name: "deleted tail below the last checkpoint", checkpoints: []int64{5, 10},
			tamper: func(m *memAudit) { m.entries = m.entries[:7] },
			want:   []int64{10},
		},
		{
			name: "whole log deleted", checkpoints: []int64{10},
			tamper: func(m *memAudit) { m.entries = nil },
			want:   []int64{10},
		},
		{
			name: "entries swapped in place", checkpoints: []int64{10},
			tamper: func(m *memAudit) {
				a, b := &m.entries[2], &m.entries[3]
				a.PrevHash, b.PrevHash = b.PrevHash, a.PrevHash
				a.Hash, b.Hash = b.Hash, a.Hash
				a.Body, b.Body = b.Body, a.Body
			},
			want: []int64{3, 4, 5},
		},
		{
			name: "entries returned out of order", checkpoints: []int64{10},
			tamper: func(m *memAudit) { m.entries[2], m.entries[3] = m.entries[3], m.entries[2] },
			want:   []int64{3},
		},
		{
			name: "entry repeated", checkpoints: []int64{10},
			tamper: func(m *memAudit) { m.entries = slices.Insert(m.entries, 4, m.entries[3]) },
			want:   []int64{4},
		},
		{
			name: "forged checkpoint", checkpoints: []int64{5},
			tamper: func(m *memAudit) {
				m.checkpoints = append(m.checkpoints, SignCheckpoint(otherKey(), 10, m.entries[9].Hash, time.Now()))
			},
			want: []int64{10}, warnAt: 6,
		},
		{
			name: "checkpoint past the end", checkpoints: []int64{5, 10},
			tamper: func(m *memAudit) {
				m.checkpoints = append(m.checkpoints, SignCheckpoint(testKey(), 15, m.entries[9].Hash, time.Now()))
			},
			want: []int64{15},
		},
		{
			name: "checkpoint's stored seq moved", checkpoints: []int64{5, 10},
			tamper: func(m *memAudit) { m.checkpoints[1].Seq = 9 },
			want:   []int64{9}, warnAt: 6,
		},
		{
			name: "checkpoints out of order", checkpoints: []int64{5, 10},
			tamper: func(m *memAudit) { m.checkpoints[0], m.checkpoints[1] = m.checkpoints[1], m.checkpoints[0] },
			want:   []int64{5},
		},
		{
			name: "prev_hash edited", checkpoints: []int64{10},
			tamper: func(m *memAudit) { m.entries[6].PrevHash = m.entries[4].Hash },
			want:   []int64{7},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := buildLog(t, 10, tt.checkpoints...)
			if tt.tamper != nil {
				tt.tamper(m)
			}
			rep, err := Verify(context.Background(), m, pubOf(testKey()))
			if err != nil {
				t.Fatal(err)
			}
			if got := problemSeqs(rep.Problems); !slices.Equal(got, tt.want) {
				t.Fatalf("problems at %v, want %v: %v", got, tt.want, rep.Problems)
			}
			if rep.OK() != (len(tt.want) == 0) {
				t.Fatalf("OK = %v with problems %v", rep.OK(), rep.Problems)
			}
			var warnAt int64
			if len(rep.Warnings) > 0 {
				warnAt = rep.Warnings[0].Seq
			}
			if warnAt != tt.warnAt || len(rep.Warnings) > 1 {
				t.Fatalf("warnings %v, want one at %d", rep.Warnings, tt.warnAt)
			}
			for _, p := range rep.Problems {
				if p.Rule == "" || strings.Contains(p.Rule, "\n") {
					t.Fatalf("bad rule text %q", p.Rule)
				}
			}
		})
	}
}

func TestVerifyReport(t *testing.T) {
	m := buildLog(t, 10, 5, 10)
	rep, err := Verify(context.Background(), m, pubOf(testKey()))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Entries != 10 || rep.Checkpoints != 2 || rep.LastCheckpointSeq != 10 || rep.Head != m.entries[9].Hash || !rep.OK() {
		t.Fatalf("report = %+v", rep)
	}
	if _, err := Verify(context.Background(), m, nil); err == nil {
		t.Fatal("Verify accepted a nil public key")
	}
	empty, err := Verify(context.Background(), &memAudit{}, pubOf(testKey()))
	if err != nil || !empty.OK() || empty.Entries != 0 || len(empty.Warnings) != 0 {
		t.Fatalf("empty log: %+v, %v", empty, err)
	}
}

// TestVerifyPages checks a log longer than one page, so that paging cannot drop or repeat.
func TestVerifyPages(t *testing.T) {
	m := &memAudit{}
	w := NewWriter(m, &Options{CheckpointKey: testKey(), CheckpointEvery: 700})
	for i := range 2*verifyPageSize + 17 {
		if _, err := w.Append(context.Background(), sampleRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	rep, err := Verify(context.Background(), m, pubOf(testKey()))
	if err != nil || !rep.OK() || rep.Entries != 2*verifyPageSize+17 || len(rep.Warnings) != 0 {
		t.Fatalf("Verify: %+v %v", rep.Problems, err)
	}
	m.entries = slices.Delete(m.entries, verifyPageSize-1, verifyPageSize+1) // seqs 1000 and 1001
	rep, _ = Verify(context.Background(), m, pubOf(testKey()))
	if got := problemSeqs(rep.Problems); !slices.Equal(got, []int64{verifyPageSize}) {
		t.Fatalf("problems at %v: %v", got, rep.Problems)
	}
}

func TestVerifyProblemsAreBounded(t *testing.T) {
	m := &memAudit{}
	for i := range MaxProblems + 50 {
		m.entries = append(m.entries, store.AuditEntry{Seq: int64(i + 1), Body: []byte("x")})
	}
	rep, err := Verify(context.Background(), m, pubOf(testKey()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != MaxProblems || rep.ProblemsOmitted == 0 || rep.OK() {
		t.Fatalf("%d problems, %d omitted", len(rep.Problems), rep.ProblemsOmitted)
	}
}

type brokenStore struct{ *memAudit }

func (brokenStore) AuditRange(context.Context, int64, int64, int) ([]store.AuditEntry, error) {
	return nil, errDisk
}

func TestVerifyStoreError(t *testing.T) {
	if _, err := Verify(context.Background(), brokenStore{&memAudit{}}, pubOf(testKey())); !errors.Is(err, errDisk) {
		t.Fatalf("err = %v", err)
	}
}
