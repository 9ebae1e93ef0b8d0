package audit

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// exportOf exports m from from to to.
func exportOf(t *testing.T, m *memAudit, from, to int64) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Export(context.Background(), m, &buf, from, to); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func verifyExportString(t *testing.T, s string, opts *ExportVerifyOptions) Report {
	t.Helper()
	rep, err := VerifyExport(context.Background(), strings.NewReader(s), pubOf(testKey()), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestExportHoldsCheckpoints(t *testing.T) {
	m := buildLog(t, 12, 5, 10, 12)
	lines := strings.SplitAfter(exportOf(t, m, 1, 0), "\n")
	// 12 entries, 3 checkpoint lines each just after its entry, and the empty rest.
	if len(lines) != 16 || !strings.HasPrefix(lines[5], `{"checkpoint":{"at":`) || !strings.HasPrefix(lines[11], `{"checkpoint":`) || !strings.HasPrefix(lines[14], `{"checkpoint":`) {
		t.Fatalf("export:\n%s", strings.Join(lines, ""))
	}
	// A range holds the checkpoints in it.
	if part := exportOf(t, m, 6, 10); strings.Count(part, `{"checkpoint":`) != 1 || strings.Count(part, "\n") != 6 {
		t.Fatalf("export 6 to 10:\n%s", part)
	}
	// A checkpoint past the log's end (its tail cut) is written after the last entry.
	m.entries = m.entries[:8]
	if cut := exportOf(t, m, 1, 0); strings.Count(cut, `{"checkpoint":`) != 3 {
		t.Fatalf("export of the cut log:\n%s", cut)
	}
}

// TestVerifyExport is the reproduction: an exported file could not be verified at all.
// It now verifies offline with the public key, and every alteration shows.
func TestVerifyExport(t *testing.T) {
	m := buildLog(t, 12, 5, 10, 12)
	full := exportOf(t, m, 1, 0)
	rep := verifyExportString(t, full, nil)
	if !rep.OK() || rep.Entries != 12 || rep.Checkpoints != 3 || rep.LastCheckpointSeq != 12 {
		t.Fatalf("intact export: %+v", rep)
	}
	// Nothing in the file says it was not cut after its end, and the report says so.
	if !hasWarning(rep, SourceExport, "entries 1 to 12 are after the last head kept outside the file") {
		t.Fatalf("warnings: %v", rep.Warnings)
	}
	lines := strings.SplitAfter(full, "\n") // entries 1-5 at 0-4, cp 5 at 5, entries 6-10 at 6-10, cp 10 at 11, 11-12 at 12-13, cp 12 at 14
	join := func(ls ...[]string) string {
		var b strings.Builder
		for _, l := range ls {
			b.WriteString(strings.Join(l, ""))
		}
		return b.String()
	}
	cp := func(i int) []string { return lines[i : i+1] }
	tests := []struct {
		name   string
		file   string
		seq    int64
		words  string
		source string
	}{
		{"an edited record", strings.Replace(full, `"call_c"`, `"call_x"`, 1), 3, "hash does not match", SourceExport},
		{"an edited record, re-hashed", join(lines[:2], []string{rehashLine(t, lines[2], `"call_c"`, `"call_x"`)}, lines[3:]), 4, "prev_hash is not the hash of entry 3", SourceExport},
		{"a line deleted", join(lines[:7], lines[8:]), 7, "entry missing", SourceExport},
		{"the tail and its checkpoint cut", join(lines[:12]), 0, "", ""}, // shows only against a head: below
		{"a checkpoint moved", join(lines[:4], cp(5), lines[4:5], lines[6:]), 5, "checkpoint past the last entry", SourceExport},
		{"a checkpoint by another key", strings.Replace(full, lines[5], string(appendCheckpointLine(nil, SignCheckpoint(otherKey(), 5, m.entries[4].Hash, testTime))), 1), 5, "signature does not verify", SourceExport},
		{"a checkpoint repeated", join(lines[:12], cp(5), lines[12:]), 5, "checkpoint seqs do not strictly increase", SourceExport},
		{"a line of garbage", join(lines[:3], []string{"garbage\n"}, lines[3:]), 4, "line 4: not strict JSON", SourceExport},
		{"a respelled line", strings.Replace(full, `{"at":`, `{"at" :`, 1), 1, "line 1: not in the one spelling", SourceExport},
		{"cut inside a line", full[:len(full)-20], 13, "the file ends inside a line: it was cut", SourceExport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := verifyExportString(t, tt.file, nil)
			if tt.words == "" {
				if !rep.OK() {
					t.Fatalf("problems: %v", rep.Problems)
				}
				return
			}
			if rep.OK() || !hasProblem(rep, tt.seq, tt.source, tt.words) {
				t.Fatalf("problems: %v, want one at %d from %s with %q", rep.Problems, tt.seq, tt.source, tt.words)
			}
		})
	}

	// With the head file of the log, a cut export shows, and a whole one has nothing unproven.
	dir := t.TempDir()
	headPath := filepath.Join(dir, "audit.head")
	hf := NewHeadFile(headPath)
	if _, err := hf.Advance(Head{Seq: 12, Hash: m.entries[11].Hash, Checkpoint: m.checkpoints[2]}, nil); err != nil {
		t.Fatal(err)
	}
	hf.Close()
	opts := &ExportVerifyOptions{HeadFile: headPath}
	if rep := verifyExportString(t, full, opts); !rep.OK() || len(rep.Warnings) != 0 || rep.KeptSeq != 12 {
		t.Fatalf("whole export with its head: %+v", rep)
	}
	rep = verifyExportString(t, join(lines[:12]), opts)
	if rep.OK() || !hasProblem(rep, 12, SourceHeadFile, "the log ends at seq 10 but the head file holds a checkpoint at seq 12: entries 11 to 12 are missing from the file") ||
		!hasProblem(rep, 12, SourceHeadFile, "the export lacks the checkpoint at this seq that the head file holds") {
		t.Fatalf("cut export with its head: %v", rep.Problems)
	}

	// An export from seq 6 checks from there, and says so.
	part := exportOf(t, m, 6, 0)
	rep = verifyExportString(t, part, opts)
	if !rep.OK() || !hasWarning(rep, SourceExport, "the export starts at seq 6") {
		t.Fatalf("export from 6: %+v", rep)
	}
	// An empty file proves nothing, and says so; against a head it is a cut.
	if rep := verifyExportString(t, "", nil); !rep.OK() || !hasWarning(rep, SourceExport, "holds no entries") {
		t.Fatalf("empty export: %+v", rep)
	}
	if rep := verifyExportString(t, "", opts); rep.OK() {
		t.Fatal("an empty export passed against a head at seq 12")
	}
	if _, err := VerifyExport(context.Background(), strings.NewReader(full), nil, nil); err == nil {
		t.Fatal("VerifyExport accepted a nil public key")
	}
}

func TestVerifyExportLongLine(t *testing.T) {
	m := buildLog(t, 3, 3)
	lines := strings.SplitAfter(exportOf(t, m, 1, 0), "\n")
	long := strings.Repeat("x", MaxLineBytes+10) + "\n"
	file := lines[0] + long + strings.Join(lines[1:], "")
	rep := verifyExportString(t, file, nil)
	if rep.OK() || !hasProblem(rep, 2, SourceExport, "line 2: longer than") || rep.Entries != 3 {
		t.Fatalf("%+v", rep)
	}
}
