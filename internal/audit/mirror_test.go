package audit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/store"
)

// mirrorLog makes a log of n entries in a fresh in-memory store with its mirror file, and
// returns the store and the mirror's path.
func mirrorLog(t *testing.T, n int) (*memAudit, string) {
	t.Helper()
	m := &memAudit{}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w := NewWriter(m, &Options{MirrorPath: path, Logger: quietLogger()})
	appendN(t, w, n)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return m, path
}

func mirrorLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

func verifyMirror(t *testing.T, m *memAudit, path string) Report {
	t.Helper()
	rep, err := VerifyWith(context.Background(), m, pubOf(testKey()), &VerifyOptions{Mirror: path})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestMirrorIsTheExport checks that the mirror file is the export of the log, line for line.
func TestMirrorIsTheExport(t *testing.T) {
	m, path := mirrorLog(t, 5)
	var want bytes.Buffer
	if err := Export(context.Background(), m, &want, 1, 0); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != want.String() {
		t.Fatalf("mirror:\n%s\nexport:\n%s", got, want.String())
	}
	if rep := verifyMirror(t, m, path); !rep.OK() || hasWarning(rep, SourceMirror, "") || rep.Compared[0].Seq != 5 {
		t.Fatalf("intact mirror: %+v", rep)
	}
}

// TestMirrorTampering is the reproduction: an edited or deleted line of the mirror
// passed unnoticed. Each alteration is a problem at the seq where it shows; what a crash can
// leave (the mirror behind the store, its last line cut short) is a warning.
func TestMirrorTampering(t *testing.T) {
	tests := []struct {
		name    string
		alter   func(lines []string) []string // lines[i] is seq i+1, with its newline; lines[n] is ""
		problem int64                         // seq of the problem, 0 for none
		source  string
		words   string
		warn    string // words of a warning, "" for none expected
	}{
		{name: "a record edited", problem: 3, words: "line 3: record differs from the store's entry",
			alter: func(l []string) []string {
				l[2] = strings.Replace(l[2], `"decision":"allow"`, `"decision":"deny"`, 1)
				return l
			}},
		{name: "an edit re-hashed", problem: 3, words: "line 3: hash differs from the store's entry",
			alter: func(l []string) []string {
				l[2] = rehashLine(t, l[2], `"decision":"allow"`, `"decision":"deny"`)
				return l
			}},
		{name: "a time edited", problem: 2, words: "at differs",
			alter: func(l []string) []string { l[1] = strings.Replace(l[1], `"at":"20`, `"at":"19`, 1); return l }},
		{name: "a middle line deleted", problem: 3, words: "entry 3 is missing from the mirror before line 3",
			alter: func(l []string) []string { return append(l[:2], l[3:]...) }},
		{name: "two lines swapped", problem: 3, words: "out of order",
			alter: func(l []string) []string { l[2], l[3] = l[3], l[2]; return l }},
		{name: "a line repeated", problem: 2, words: "out of order or repeated",
			alter: func(l []string) []string { return append(l[:2], append([]string{l[1]}, l[2:]...)...) }},
		{name: "a line that is not one", problem: 0, words: "line 4: not strict JSON",
			alter: func(l []string) []string { return append(l[:3], append([]string{"{oops\n"}, l[3:]...)...) }},
		{name: "a respelled line", problem: 0, words: "line 2: not in the one spelling of an entry line",
			alter: func(l []string) []string { l[1] = strings.Replace(l[1], `{"at":`, `{ "at":`, 1); return l }},
		{name: "a checkpoint line", problem: 3, words: "a checkpoint line",
			alter: func(l []string) []string {
				return append(l[:3], append([]string{string(appendCheckpointLine(nil, SignCheckpoint(testKey(), 3, hashOf(3), testTime)))}, l[3:]...)...)
			}},
		{name: "the last two lines lost in a crash", warn: "entries 4 to 5 are not in the mirror yet",
			alter: func(l []string) []string { return l[:3] }},
		{name: "the last line cut short", warn: "line 5: the last line is incomplete",
			alter: func(l []string) []string { l[4] = l[4][:40]; return l[:5] }},
		{name: "the mirror emptied", warn: "entries 1 to 5 are not in the mirror yet",
			alter: func(l []string) []string { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, path := mirrorLog(t, 5)
			writeLines(t, path, tt.alter(mirrorLines(t, path)))
			rep := verifyMirror(t, m, path)
			if tt.words == "" {
				if !rep.OK() {
					t.Fatalf("problems: %v", rep.Problems)
				}
			} else if rep.OK() || !hasProblem(rep, tt.problem, SourceMirror, tt.words) {
				t.Fatalf("problems: %v, want one at %d with %q", rep.Problems, tt.problem, tt.words)
			}
			if tt.warn != "" && !hasWarning(rep, SourceMirror, tt.warn) {
				t.Fatalf("warnings: %v, want %q", rep.Warnings, tt.warn)
			}
		})
	}
}

// rehashLine edits a line's record and recomputes its hash, as someone who knows the recipe
// would.
func rehashLine(t *testing.T, line, old, new string) string {
	t.Helper()
	pl, err := parseLine([]byte(strings.TrimSuffix(line, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	e := pl.entry
	e.Body = []byte(strings.Replace(string(e.Body), old, new, 1))
	e.Hash = EntryHash(e.PrevHash, e.Seq, e.Body)
	return string(appendLine(nil, e))
}

// TestMirrorRepair checks what a writer does with what a crash leaves: lines missing at the
// end are written from the store at its start, a last line cut short is replaced, and a
// mirror that disagrees with the store is left alone and said so.
func TestMirrorRepair(t *testing.T) {
	for name, cut := range map[string]func([]string) []string{
		"lines lost":   func(l []string) []string { return l[:3] },
		"cut short":    func(l []string) []string { l[3] = l[3][:len(l[3])/2]; return l[:4] },
		"only a torn":  func(l []string) []string { return []string{l[0][:20]} },
		"emptied":      func([]string) []string { return nil },
		"cut and lost": func(l []string) []string { l[1] = l[1][:30]; return l[:2] },
	} {
		t.Run(name, func(t *testing.T) {
			m, path := mirrorLog(t, 5)
			want, _ := os.ReadFile(path)
			writeLines(t, path, cut(mirrorLines(t, path)))
			var logged logBuffer
			w := NewWriter(m, &Options{MirrorPath: path, Logger: slogTo(&logged)})
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != string(want) {
				t.Fatalf("repaired mirror:\n%s\nwant\n%s", got, want)
			}
			if strings.Contains(name, "cut") || strings.Contains(name, "torn") {
				if !strings.Contains(logged.String(), "cut short by a crash") {
					t.Fatalf("the repair was not logged: %s", logged.String())
				}
			}
			if rep := verifyMirror(t, m, path); !rep.OK() || hasWarning(rep, SourceMirror, "") {
				t.Fatalf("after the repair: %+v", rep)
			}
		})
	}

	// A mirror of another log: nothing is appended, and the refusal is logged (once for each
	// reason, not for each batch).
	m, path := mirrorLog(t, 3)
	other, _ := mirrorLog(t, 2)
	other.entries[1].Body = []byte(strings.Replace(string(other.entries[1].Body), "allow", "deny", 1))
	rehashFrom(other, 1)
	before, _ := os.ReadFile(path)
	var logged logBuffer
	w := NewWriter(other, &Options{MirrorPath: path, Logger: slogTo(&logged)})
	appendN(t, w, 2)
	w.Close()
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a mirror that disagrees with the store was appended to")
	}
	if n := strings.Count(logged.String(), "the mirror is not written"); n == 0 || n > 2 || w.Stats().MirrorErrors == 0 {
		t.Fatalf("refusal logged %d times, stats %+v: %s", n, w.Stats(), logged.String())
	}
	_ = m
}

// TestMirrorSharedByWriters runs several writers on one store and one mirror file at once,
// as replicas sharing a data folder do: the mirror ends as the whole log, once, in order.
func TestMirrorSharedByWriters(t *testing.T) {
	m := &memAudit{}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const writers, each = 3, 30
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			w := NewWriter(m, &Options{MirrorPath: path, Logger: quietLogger()})
			defer w.Close()
			for i := range each {
				if _, err := w.Append(context.Background(), sampleRecord(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var want bytes.Buffer
	if err := Export(context.Background(), m, &want, 1, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != want.String() {
		t.Fatalf("shared mirror has %d lines, the log %d", bytes.Count(got, []byte("\n")), writers*each)
	}
}

// Batches that wait are written together when they follow one another; one after a gap (a
// batch the writer could not queue) waits for the next write, which reads the gap from the
// store first. The writer's slices are never appended to.
func TestGatherBatches(t *testing.T) {
	entries := func(from, n int64) []store.AuditEntry {
		out := make([]store.AuditEntry, 0, n+8) // room a careless append would write into
		for i := range n {
			out = append(out, store.AuditEntry{Seq: from + i})
		}
		return out
	}
	seqs := func(es []store.AuditEntry) (out []int64) {
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}
	in := make(chan []store.AuditEntry, 8)
	first := entries(1, 2)
	in <- entries(3, 1)
	in <- entries(4, 2)
	in <- entries(9, 1) // after a gap
	in <- entries(10, 1)
	all, next := gatherBatches(first, in)
	if got := seqs(all); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) || !slices.Equal(seqs(next), []int64{9}) {
		t.Fatalf("gathered %v, next %v", got, seqs(next))
	}
	if len(first[:cap(first)]) > 2 && first[:3][2].Seq != 0 {
		t.Fatal("the first batch's slice was appended to")
	}
	all, next = gatherBatches(next, in)
	if got := seqs(all); !slices.Equal(got, []int64{9, 10}) || next != nil {
		t.Fatalf("gathered %v, next %v", got, seqs(next))
	}
	close(in)
	if all, next = gatherBatches(entries(11, 1), in); len(all) != 1 || next != nil {
		t.Fatalf("after close: %v %v", seqs(all), seqs(next))
	}
}
