package audit

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// backend is a real store and a way to run SQL on its tables, as an attacker with the
// database would.
type backend struct {
	st   store.Store
	exec func(t *testing.T, query string)
	// cutLog deletes the log's entries after seq keep, as someone holding the store could.
	cutLog func(t *testing.T, keep int64)
}

func sqliteBackend(t *testing.T, dir string) backend {
	t.Helper()
	path := filepath.Join(dir, "capgate.db")
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	sw := &swappable{Store: st}
	t.Cleanup(func() { sw.Store.(*sqlite.Store).Close() })
	// Edited as by someone with the files while capgate is stopped: the store is closed,
	// edited, and opened again.
	edit := func(t *testing.T, fn func() error) {
		t.Helper()
		if err := sw.Store.(*sqlite.Store).Close(); err != nil {
			t.Fatal(err)
		}
		if err := fn(); err != nil {
			t.Fatal(err)
		}
		again, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		sw.Store = again
	}
	return backend{st: sw, exec: func(t *testing.T, query string) {
		t.Helper()
		edit(t, func() error {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.Exec(query)
			return err
		})
	}, cutLog: func(t *testing.T, keep int64) {
		t.Helper()
		edit(t, func() error {
			return sqlite.RewriteAuditUnsafe(path, func(es []store.AuditEntry) []store.AuditEntry {
				return es[:min(int64(len(es)), keep)]
			})
		})
	}}
}

// swappable is a store whose implementation a test replaces (opened again after an edit).
type swappable struct{ store.Store }

func postgresBackend(t *testing.T) backend {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	dsn := pgtest.Schema(t)
	st, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	exec := func(t *testing.T, query string) {
		t.Helper()
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(t.Context(), query); err != nil {
			t.Fatal(err)
		}
	}
	return backend{st: st, exec: exec, cutLog: func(t *testing.T, keep int64) {
		t.Helper()
		exec(t, fmt.Sprintf(`DELETE FROM audit_log WHERE seq > %d`, keep))
	}}
}

// gatewayLog writes n records to b's store as the gateway does: checkpoints every 10 records
// and at close, the head file and the mirror in dir. With closed false the writer is left
// running, as a gateway killed with SIGKILL leaves it (no checkpoint at the end); its records
// are durable and, within HeadConfirm, in the head file all the same.
func gatewayLog(t *testing.T, b backend, dir string, n int, closed bool) *VerifyOptions {
	t.Helper()
	opts := &VerifyOptions{HeadFile: filepath.Join(dir, "audit.head"), Mirror: filepath.Join(dir, "audit.jsonl"), State: b.st}
	w := NewWriter(b.st, &Options{CheckpointKey: testKey(), CheckpointEvery: 10, HeadPath: opts.HeadFile, MirrorPath: opts.Mirror, Logger: quietLogger()})
	for i := range n {
		rec := sampleRecord(i)
		if i == 3 {
			rec.Action, rec.TokenID, rec.Result = "request_capability", "tok_issued", "issued"
		}
		if _, err := w.Append(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if closed {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Cleanup(func() { w.Close() })
		waitMirror(t, opts.Mirror, n)
		waitHead(t, opts.HeadFile, int64(n))
	}
	// State that only calls make: a client, and the token whose issue is record 4.
	ctx := t.Context()
	if err := b.st.PutClient(ctx, store.Client{ID: "cl_agent", Name: "agent", KeyHash: "sha256:" + strings.Repeat("a", 64), Trust: "user", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := b.st.PutToken(ctx, store.Token{ID: "tok_issued", ClientID: "cl_agent", IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour), Hash: "sha256:" + strings.Repeat("b", 64)}); err != nil {
		t.Fatal(err)
	}
	return opts
}

// waitHead waits until the head file holds seq: the writer confirms its last batch within
// HeadConfirm.
func waitHead(t *testing.T, path string, seq int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := ReadHeadFile(path)
		if err == nil && c.Head.Seq >= seq {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the head file did not reach seq %d: %+v %v", seq, c.Head, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitMirror waits until the mirror file holds n lines: it is written after the store.
func waitMirror(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := readFileString(path); err == nil && strings.Count(b, "\n") >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the mirror did not reach %d lines", n)
}

// hasProblem reports whether rep has a problem from source at seq whose rule holds words.
func hasProblem(rep Report, seq int64, source, words string) bool {
	for _, p := range rep.Problems {
		if p.Seq == seq && p.Source == source && strings.Contains(p.Rule, words) {
			return true
		}
	}
	return false
}

func hasWarning(rep Report, source, words string) bool {
	for _, p := range rep.Warnings {
		if p.Source == source && strings.Contains(p.Rule, words) {
			return true
		}
	}
	return false
}

// TestDeletedTail is the reproduction: the last records and checkpoints deleted from
// the database, or all of them, used to leave a log that verified intact. The store's own
// check (Verify) still cannot see it; VerifyWith, holding the log against the head file, the
// mirror and the state of the store, reports where.
func TestDeletedTail(t *testing.T) {
	backends := map[string]func(t *testing.T, dir string) backend{
		"sqlite":   sqliteBackend,
		"postgres": func(t *testing.T, _ string) backend { return postgresBackend(t) },
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			pub := pubOf(testKey())
			t.Run("intact", func(t *testing.T) {
				dir := t.TempDir()
				b := open(t, dir)
				opts := gatewayLog(t, b, dir, 23, true)
				rep, err := VerifyWith(t.Context(), b.st, pub, opts)
				if err != nil || !rep.OK() || rep.LastCheckpointSeq != 23 || rep.KeptSeq != 23 || len(rep.Warnings) != 0 || len(rep.Compared) != 2 {
					t.Fatalf("intact log: %+v %v", rep, err)
				}
			})
			t.Run("last records and checkpoints deleted", func(t *testing.T) {
				dir := t.TempDir()
				b := open(t, dir)
				opts := gatewayLog(t, b, dir, 23, true)
				b.cutLog(t, 20)
				b.exec(t, `DELETE FROM audit_checkpoints WHERE seq > 20`)
				// What today's check says: intact, and nothing after the last checkpoint.
				if rep, err := Verify(t.Context(), b.st, pub); err != nil || !rep.OK() || len(rep.Warnings) != 0 {
					t.Fatalf("the store alone: %+v %v", rep, err)
				}
				rep, err := VerifyWith(t.Context(), b.st, pub, opts)
				if err != nil || rep.OK() {
					t.Fatalf("cut log verified: %+v %v", rep, err)
				}
				if !hasProblem(rep, 23, SourceHeadFile, "the log ends at seq 20 but the head file holds a checkpoint at seq 23") ||
					!hasProblem(rep, 23, SourceHeadFile, "the store lacks the checkpoint at this seq that the head file holds") ||
					!hasProblem(rep, 21, SourceMirror, "past the store's last (20)") {
					t.Fatalf("problems: %v", rep.Problems)
				}
			})
			t.Run("every record and checkpoint deleted", func(t *testing.T) {
				dir := t.TempDir()
				b := open(t, dir)
				opts := gatewayLog(t, b, dir, 23, true)
				b.cutLog(t, 0)
				b.exec(t, `DELETE FROM audit_checkpoints`)
				if rep, err := Verify(t.Context(), b.st, pub); err != nil || !rep.OK() {
					t.Fatalf("the store alone: %+v %v", rep, err)
				}
				rep, _ := VerifyWith(t.Context(), b.st, pub, opts)
				if rep.OK() || !hasProblem(rep, 1, SourceState, "the log is empty but the store holds 1 client, 1 token") ||
					!hasProblem(rep, 23, SourceHeadFile, "the log ends at seq 0") {
					t.Fatalf("problems: %v", rep.Problems)
				}
				// Without the head file and the mirror (deleted too), the state still says so.
				rep, _ = VerifyWith(t.Context(), b.st, pub, &VerifyOptions{State: b.st})
				if rep.OK() || !hasProblem(rep, 1, SourceState, "the log is empty") {
					t.Fatalf("state only: %v", rep.Problems)
				}
			})
			t.Run("records after the last checkpoint deleted", func(t *testing.T) {
				// The writer was killed (no checkpoint at close): the last checkpoint is at 20,
				// and the head file, written with every commit and at rest, at 23.
				dir := t.TempDir()
				b := open(t, dir)
				opts := gatewayLog(t, b, dir, 23, false)
				b.cutLog(t, 21)
				rep, _ := VerifyWith(t.Context(), b.st, pub, opts)
				if rep.OK() || !hasProblem(rep, 23, SourceHeadFile, "entries 22 to 23 are missing from the store") {
					t.Fatalf("problems: %v", rep.Problems)
				}
			})
			t.Run("the token's issue deleted, the tail rewritten", func(t *testing.T) {
				// Records from 4 on deleted, with the head file and the mirror: only the token
				// issued at record 4 is left to say the log was longer.
				dir := t.TempDir()
				b := open(t, dir)
				gatewayLog(t, b, dir, 23, true)
				b.cutLog(t, 3)
				b.exec(t, `DELETE FROM audit_checkpoints`)
				rep, _ := VerifyWith(t.Context(), b.st, pub, &VerifyOptions{State: b.st})
				if rep.OK() || !hasProblem(rep, 0, SourceState, "token tok_issued is in the store but its issue is not in the log") {
					t.Fatalf("problems: %v", rep.Problems)
				}
			})
			t.Run("rewritten tail", func(t *testing.T) {
				// Record 22 edited and the chain re-hashed from it, checkpoints after 20
				// deleted: the chain is consistent, the head file's hash at 23 is not its.
				dir := t.TempDir()
				b := open(t, dir)
				opts := gatewayLog(t, b, dir, 23, true)
				es, err := b.st.AuditRange(t.Context(), 1, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				m := &memAudit{entries: es}
				r, _ := DecodeRecord(m.entries[21].Body)
				r.Decision, r.Code = DecisionDeny, "CAPABILITY_DENIED"
				if m.entries[21].Body, err = r.Body(); err != nil {
					t.Fatal(err)
				}
				rehashFrom(m, 21)
				b.cutLog(t, 21)
				b.exec(t, `DELETE FROM audit_checkpoints WHERE seq > 20`)
				if err := b.st.AppendAudit(t.Context(), m.entries[21:]); err != nil {
					t.Fatal(err)
				}
				rep, _ := VerifyWith(t.Context(), b.st, pub, opts)
				if rep.OK() || !hasProblem(rep, 23, SourceHeadFile, "hash differs from the checkpoint the head file holds") ||
					!hasProblem(rep, 22, SourceMirror, "differs from the store's entry") {
					t.Fatalf("problems: %v", rep.Problems)
				}
			})
		})
	}
}

// TestWriterKeepsHeadEvidence checks that a writer started on a store whose tail was cut
// does not overwrite the head file that says so, and that it logs the disagreement.
func TestWriterKeepsHeadEvidence(t *testing.T) {
	dir := t.TempDir()
	b := sqliteBackend(t, dir)
	opts := gatewayLog(t, b, dir, 23, true)
	b.cutLog(t, 20)
	b.exec(t, `DELETE FROM audit_checkpoints WHERE seq > 20`)
	before, err := ReadHeadFile(opts.HeadFile)
	if err != nil {
		t.Fatal(err)
	}
	var logged logBuffer
	w := NewWriter(b.st, &Options{CheckpointKey: testKey(), HeadPath: opts.HeadFile, MirrorPath: opts.Mirror,
		Logger: slogTo(&logged)})
	for i := range 5 { // seqs 21 to 25: past the head file's 23, on another chain
		if _, err := w.Append(t.Context(), sampleRecord(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	after, err := ReadHeadFile(opts.HeadFile)
	if err != nil || !sameHead(before.Head, after.Head) {
		t.Fatalf("the head file moved from %+v to %+v (%v)", before.Head, after.Head, err)
	}
	if st := w.Stats(); st.HeadErrors == 0 || st.MirrorErrors == 0 {
		t.Fatalf("stats %+v", st)
	}
	if !strings.Contains(logged.String(), "the head file disagrees with the store") || !strings.Contains(logged.String(), "the mirror is not written") {
		t.Fatalf("log: %s", logged.String())
	}
	rep, _ := VerifyWith(t.Context(), b.st, pubOf(testKey()), opts)
	if rep.OK() || !hasProblem(rep, 23, SourceHeadFile, "hash differs from the checkpoint the head file holds") {
		t.Fatalf("problems: %v", rep.Problems)
	}
}
