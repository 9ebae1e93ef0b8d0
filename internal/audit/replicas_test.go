package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
)

// TestWritersOnReplicas runs three Writers, each on its own connection pool to one PostgreSQL
// schema, as three replicas do, each with checkpoints, appending at once from many goroutines:
// every Append that returned a seq is in the log, the chain has no gap or fork, every
// checkpoint verifies, and the writers took turns (the store's sequenced append) rather than
// racing, so none was refused for contention.
func TestWritersOnReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	dsn := pgtest.Schema(t)
	key := testKey()
	const writers, callers, each = 3, 8, 40
	ws := make([]*Writer, writers)
	for i := range ws {
		s, err := postgres.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ws[i] = NewWriter(s, &Options{CheckpointKey: key, CheckpointEvery: 25, CheckpointInterval: 50 * time.Millisecond})
	}
	seqs := make(chan int64, writers*callers*each)
	var wg sync.WaitGroup
	for i := range writers * callers {
		wg.Go(func() {
			for j := range each {
				seq, err := ws[i%writers].Append(t.Context(), sampleRecord(i*each+j))
				if err != nil {
					t.Errorf("writer %d: %v", i%writers, err)
					return
				}
				seqs <- seq
			}
		})
	}
	wg.Wait()
	close(seqs)
	var conflicts int64
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		conflicts += w.Stats().Conflicts
	}
	seen := map[int64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Fatalf("seq %d given to two records", s)
		}
		seen[s] = true
	}
	if len(seen) != writers*callers*each {
		t.Fatalf("%d records acknowledged, want %d", len(seen), writers*callers*each)
	}
	if conflicts != 0 {
		t.Errorf("%d conflicts: the writers raced for the head instead of taking turns", conflicts)
	}

	s, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := Verify(t.Context(), s, pubOf(key))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %+v", rep.Problems)
	}
	cps, err := s.Checkpoints(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) < writers {
		t.Errorf("%d checkpoints, want at least one from each writer's Close", len(cps))
	}
	head, err := s.AuditHead(t.Context())
	if err != nil || head.Seq != int64(writers*callers*each) {
		t.Fatalf("head %d (%v), want %d", head.Seq, err, writers*callers*each)
	}
}

// TestReplicasHeadAndMirror runs three writers on one PostgreSQL schema, as three replicas,
// twice: sharing one data folder's head file and mirror, and each with a folder of its own.
// A shared folder's head file ends at the log's head and its mirror is the whole log; a folder
// of its own holds the log as far as its writer saw it (a prefix, each line the store's, its
// head no further), which verifies with no problem: the rest is in the notes.
func TestReplicasHeadAndMirror(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	for _, shared := range []bool{true, false} {
		t.Run(map[bool]string{true: "one folder", false: "a folder each"}[shared], func(t *testing.T) {
			dsn := pgtest.Schema(t)
			const writers, callers, each = 3, 4, 25
			dirs := make([]string, writers)
			ws := make([]*Writer, writers)
			common := t.TempDir()
			for i := range ws {
				s, err := postgres.Open(t.Context(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				dirs[i] = common
				if !shared {
					dirs[i] = t.TempDir()
				}
				ws[i] = NewWriter(s, &Options{CheckpointKey: testKey(), CheckpointEvery: 20, Logger: quietLogger(),
					HeadPath: filepath.Join(dirs[i], "audit.head"), MirrorPath: filepath.Join(dirs[i], "audit.jsonl")})
			}
			var wg sync.WaitGroup
			for i := range writers * callers {
				wg.Go(func() {
					for j := range each {
						if _, err := ws[i%writers].Append(t.Context(), sampleRecord(i*each+j)); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			for _, w := range ws {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if st := w.Stats(); st.HeadErrors != 0 || st.MirrorErrors != 0 {
					t.Errorf("stats %+v", st)
				}
			}
			s, err := postgres.Open(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var want bytes.Buffer
			if err := Export(t.Context(), s, &want, 1, 0); err != nil {
				t.Fatal(err)
			}
			var entries []string
			for _, l := range strings.SplitAfter(want.String(), "\n") {
				if strings.HasPrefix(l, `{"at":`) {
					entries = append(entries, l)
				}
			}
			for i, dir := range dirs {
				if i > 0 && shared {
					break
				}
				got, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
				whole := strings.Join(entries, "")
				if shared && string(got) != whole || !strings.HasPrefix(whole, string(got)) || len(got) == 0 {
					t.Errorf("folder %d: the mirror has %d lines, the log %d entries", i, bytes.Count(got, []byte("\n")), len(entries))
				}
				rep, err := VerifyWith(t.Context(), s, pubOf(testKey()), &VerifyOptions{HeadFile: filepath.Join(dir, "audit.head"), Mirror: filepath.Join(dir, "audit.jsonl")})
				if err != nil || !rep.OK() || shared && hasWarning(rep, SourceMirror, "") {
					t.Errorf("folder %d: %v %v %v", i, err, rep.Problems, rep.Warnings)
				}
				if shared && rep.KeptSeq != int64(writers*callers*each) {
					t.Errorf("the shared head file is at %d, the log at %d", rep.KeptSeq, writers*callers*each)
				}
			}
		})
	}
}
