package audit

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// testKey is a fixed Ed25519 key (seed 00 01 … 1f), so that signatures in vectors are fixed.
func testKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// otherKey is a second key, for forged checkpoints.
func otherKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(0xff - i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// sampleRecord is a valid decision record; n varies it.
func sampleRecord(n int) Record {
	return Record{
		Timestamp:  1706620800 + int64(n),
		TokenID:    "cap_1234567890abcdef",
		Action:     "execute",
		App:        "terminal",
		Method:     "execute_command",
		ParamsHash: "sha256:5b410c8ce6f62a8b432077021de038ddeead8ca42db705bbfc2d39dc2b69d36d",
		AuditTag:   "Code compilation task",
		Decision:   DecisionAllow,
		ClientID:   "cl_agent",
		Capability: "app.com.example.terminal.execute_command",
		Permission: "app.terminal.execute",
		CallID:     "call_" + string(rune('a'+n%26)),
		Kind:       KindDecision,
	}
}

// appendN appends n records one after another and fails the test on any error.
func appendN(t testing.TB, w *Writer, n int) []int64 {
	t.Helper()
	seqs := make([]int64, n)
	for i := range n {
		seq, err := w.Append(context.Background(), sampleRecord(i))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		seqs[i] = seq
	}
	return seqs
}

// buildLog makes a log of n entries in a fresh store with checkpoints signed by testKey at
// the given seqs.
func buildLog(t testing.TB, n int, checkpointAt ...int64) *memAudit {
	t.Helper()
	m := &memAudit{}
	// A fixed clock, so that a fuzz target's workers, each building the log again, build the
	// same bytes as the coordinator that made the seeds.
	var ticks int64
	clock := func() time.Time { ticks++; return testTime.Add(time.Duration(ticks) * time.Millisecond) }
	w := NewWriter(m, &Options{Now: clock})
	appendN(t, w, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, seq := range checkpointAt {
		c := SignCheckpoint(testKey(), seq, m.entries[seq-1].Hash, m.entries[seq-1].At)
		if err := m.PutCheckpoint(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// rehashFrom recomputes PrevHash and Hash of every entry from index i on, as an attacker
// who rewrites the log would.
func rehashFrom(m *memAudit, i int) {
	for ; i < len(m.entries); i++ {
		prev := ""
		if i > 0 {
			prev = m.entries[i-1].Hash
		}
		e := &m.entries[i]
		e.PrevHash = prev
		e.Hash = EntryHash(prev, e.Seq, e.Body)
	}
}

// readFileString reads a file as a string.
func readFileString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// logBuffer collects log text from several goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// slogTo is a logger that writes text to l.
func slogTo(l *logBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// testTime is a fixed time for checkpoints made in tests.
var testTime = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
