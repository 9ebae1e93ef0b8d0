package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/store/sqlite" // its log and the "sqlite" database/sql driver, to tamper as an attacker would
)

// callsThrough adds a client to the gateway at r, takes a token and makes n calls with it;
// env names the data folder (and store). It returns the client key and the token.
func callsThrough(t *testing.T, r *replica, env []string, n int) (key, tok string) {
	t.Helper()
	key, tok = agentToken(t, env, r.url, "100000")
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range n {
		if a, err := ipcCall(client, r.url, key, tok, "c"+strconv.Itoa(i)); err != nil || a.Status != "success" {
			t.Fatalf("call %d: %+v %v", i, a, err)
		}
	}
	return key, tok
}

// verdict is the part of `audit verify --json` the tests read.
type verdict struct {
	Intact   bool      `json:"intact"`
	Entries  int64     `json:"entries"`
	HeadSeq  int64     `json:"head_seq"`
	Problems []finding `json:"problems"`
	Warnings []finding `json:"warnings"`
	Compared []struct {
		Source string `json:"source"`
		Seq    int64  `json:"seq"`
	} `json:"compared"`
}

type finding struct {
	Seq    int64  `json:"seq"`
	Source string `json:"source"`
	Rule   string `json:"rule"`
}

func verifyJSON(t *testing.T, env []string, args ...string) (verdict, result) {
	t.Helper()
	r := capgate(t, "", env, append([]string{"audit", "verify", "--json"}, args...)...)
	var v verdict
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("audit verify --json: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	if v.Intact != (r.code == 0) {
		t.Fatalf("intact %v with exit %d", v.Intact, r.code)
	}
	return v, r
}

func (v verdict) has(seq int64, source, words string) bool {
	for _, p := range v.Problems {
		if (seq < 0 || p.Seq == seq) && p.Source == source && strings.Contains(p.Rule, words) {
			return true
		}
	}
	return false
}

func (v verdict) warns(source, words string) bool {
	for _, p := range v.Warnings {
		if p.Source == source && strings.Contains(p.Rule, words) {
			return true
		}
	}
	return false
}

// copyDir copies a data folder (files and folders, not sockets), so that each tampering
// starts from the same log.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		switch {
		case fi.IsDir():
			return os.MkdirAll(dst, fi.Mode().Perm())
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// cutAudit cuts the audit log of the SQLite store in data after seq keep, as someone holding
// the data folder could.
func cutAudit(t *testing.T, data string, keep int64) {
	t.Helper()
	err := sqlite.RewriteAuditUnsafe(filepath.Join(data, "capgate.db"), func(es []store.AuditEntry) []store.AuditEntry {
		return es[:min(int64(len(es)), keep)]
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sqliteExec(t *testing.T, data string, queries ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(data, "capgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range queries {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAuditVerifyDeletedTail is the reproduction on the command line: deleting the
// last records and checkpoints from capgate.db, or all of them, left `capgate audit verify`
// saying intact with exit 0. Each now exits 1 and says where.
func TestAuditVerifyDeletedTail(t *testing.T) {
	data := t.TempDir()
	r := serveWith(t, data)
	env := []string{"CAPGATE_DATA_DIR=" + data}
	callsThrough(t, r, env, 20)
	r.stop(t) // a final checkpoint at the head
	v, res := verifyJSON(t, env)
	mustCode(t, res, 0)
	if len(v.Warnings) != 0 || len(v.Compared) != 2 {
		t.Fatalf("a log closed by SIGTERM: %s", res.stdout)
	}
	last := v.HeadSeq

	t.Run("last records and checkpoints", func(t *testing.T) {
		d := copyDir(t, data)
		cutAudit(t, d, last-6)
		sqliteExec(t, d, fmt.Sprintf(`DELETE FROM audit_checkpoints WHERE seq > %d`, last-6))
		v, res := verifyJSON(t, []string{"CAPGATE_DATA_DIR=" + d})
		mustCode(t, res, 1)
		if !v.has(last, "head_file", fmt.Sprintf("the log ends at seq %d but the head file holds a checkpoint at seq %d", last-6, last)) ||
			!v.has(last-5, "mirror", "past the store's last") {
			t.Fatalf("problems: %s", res.stdout)
		}
		text := capgate(t, "", []string{"CAPGATE_DATA_DIR=" + d}, "audit", "verify")
		mustCode(t, text, 1)
		if !strings.Contains(text.stdout, fmt.Sprintf("seq %d, head file: the log ends at seq %d", last, last-6)) || strings.Contains(text.stdout, "\nintact") {
			t.Fatalf("text: %s", text.stdout)
		}
	})
	t.Run("every record and checkpoint", func(t *testing.T) {
		d := copyDir(t, data)
		cutAudit(t, d, 0)
		sqliteExec(t, d, `DELETE FROM audit_checkpoints`)
		v, res := verifyJSON(t, []string{"CAPGATE_DATA_DIR=" + d})
		mustCode(t, res, 1)
		if !v.has(1, "state", "the log is empty but the store holds 1 client, 1 token") {
			t.Fatalf("problems: %s", res.stdout)
		}
		// The head file and the mirror deleted as well: the store's own state still says so.
		os.Remove(filepath.Join(d, "audit.head"))
		os.Remove(filepath.Join(d, "audit.jsonl"))
		v, res = verifyJSON(t, []string{"CAPGATE_DATA_DIR=" + d})
		mustCode(t, res, 1)
		if !v.has(1, "state", "the log is empty") || !v.warns("head_file", "no head file") {
			t.Fatalf("problems: %s", res.stdout)
		}
	})
	t.Run("the tail and the token's issue, with the head file and the mirror", func(t *testing.T) {
		// The client's records and the token's issue are the first records; everything from
		// the token's issue on is deleted, the head file and the mirror with it.
		d := copyDir(t, data)
		cutAudit(t, d, 2)
		sqliteExec(t, d, `DELETE FROM audit_checkpoints`)
		os.Remove(filepath.Join(d, "audit.head"))
		os.Remove(filepath.Join(d, "audit.jsonl"))
		v, res := verifyJSON(t, []string{"CAPGATE_DATA_DIR=" + d})
		mustCode(t, res, 1)
		if !v.has(0, "state", "is in the store but its issue is not in the log") {
			t.Fatalf("problems: %s", res.stdout)
		}
	})
}

// TestAuditVerifyDeletedTailPostgres is the same on PostgreSQL: a replica's log cut in the
// database is not intact, from the head file the replicas share in their data folder.
func TestAuditVerifyDeletedTailPostgres(t *testing.T) {
	pg, data := pgtest.Schema(t), t.TempDir()
	r := serveWith(t, data, "--store", pg)
	env := replicaEnv(data, pg)
	callsThrough(t, r, env, 12)
	r.stop(t)
	mustCode(t, capgate(t, "", env, "audit", "verify"), 0)
	conn, err := pgx.Connect(t.Context(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `DELETE FROM audit_log WHERE seq > 10; DELETE FROM audit_checkpoints WHERE seq > 10`); err != nil {
		t.Fatal(err)
	}
	v, res := verifyJSON(t, env)
	mustCode(t, res, 1)
	if !v.has(-1, "head_file", "the log ends at seq 10 but the head file holds a checkpoint") {
		t.Fatalf("problems: %s", res.stdout)
	}
	if _, err := conn.Exec(t.Context(), `DELETE FROM audit_log; DELETE FROM audit_checkpoints`); err != nil {
		t.Fatal(err)
	}
	v, res = verifyJSON(t, env)
	mustCode(t, res, 1)
	if !v.has(1, "state", "the log is empty") {
		t.Fatalf("problems: %s", res.stdout)
	}
}

// TestAuditMirrorAfterKillDashNine kills a loaded gateway with SIGKILL: the mirror, written
// after the store, may lack the last entries. verify says exactly which, as a note (exit 0:
// a crash leaves this), and the next start writes them. An edited or deleted line of the
// mirror is not intact.
func TestAuditMirrorAfterKillDashNine(t *testing.T) {
	data := t.TempDir()
	r := serveWith(t, data)
	env := []string{"CAPGATE_DATA_DIR=" + data}
	key, tok := callsThrough(t, r, env, 1)
	loadThenKill(t, r, key, tok, 1200*time.Millisecond)

	mirror := filepath.Join(data, "audit.jsonl")
	v, res := verifyJSON(t, env)
	mustCode(t, res, 0)
	lines := strings.Count(readFile(t, mirror), "\n")
	if int64(lines) < v.HeadSeq {
		want := fmt.Sprintf("entries %d to %d are not in the mirror yet", lines+1, v.HeadSeq)
		if int64(lines)+1 == v.HeadSeq {
			want = fmt.Sprintf("entry %d is not in the mirror yet", v.HeadSeq)
		}
		if !v.warns("mirror", want) {
			t.Fatalf("the mirror lacks entries %d to %d, and verify says: %s", lines+1, v.HeadSeq, res.stdout)
		}
	}
	t.Logf("after SIGKILL: %d entries in the store, %d in the mirror", v.HeadSeq, lines)
	// Whatever the kill left, cut the mirror's last line in half, as a kill inside a write does.
	whole := readFile(t, mirror)
	cut := whole[:len(whole)-200]
	if err := os.WriteFile(mirror, []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	v, res = verifyJSON(t, env)
	mustCode(t, res, 0)
	if !v.warns("mirror", "the last line is incomplete") || !v.warns("mirror", "not in the mirror yet") {
		t.Fatalf("a mirror cut inside a line: %s", res.stdout)
	}

	// An edited line and a deleted line are not what a crash leaves.
	ls := strings.SplitAfter(cut, "\n")
	edited := strings.Join(ls[:5], "") + strings.Replace(ls[5], `"decision":"allow"`, `"decision":"deny"`, 1) + strings.Join(ls[6:], "")
	if edited == cut {
		t.Fatal("line 6 has no decision to edit")
	}
	if err := os.WriteFile(mirror, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	v, res = verifyJSON(t, env)
	mustCode(t, res, 1)
	if !v.has(6, "mirror", "line 6: record differs from the store's entry") {
		t.Fatalf("an edited line: %s", res.stdout)
	}
	deleted := strings.Join(ls[:3], "") + strings.Join(ls[4:], "")
	if err := os.WriteFile(mirror, []byte(deleted), 0o600); err != nil {
		t.Fatal(err)
	}
	v, res = verifyJSON(t, env)
	mustCode(t, res, 1)
	if !v.has(4, "mirror", "entry 4 is missing from the mirror before line 4") {
		t.Fatalf("a deleted line: %s", res.stdout)
	}

	// Back to what the kill left, cut short: the next start mends the mirror.
	if err := os.WriteFile(mirror, []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	serveWith(t, data)
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, res = verifyJSON(t, env)
		mustCode(t, res, 0)
		if !v.warns("mirror", "") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted gateway did not mend the mirror: %s", res.stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	export := capgate(t, "", env, "audit", "export")
	var entries []string
	for _, l := range strings.SplitAfter(export.stdout, "\n") {
		if strings.HasPrefix(l, `{"at":`) {
			entries = append(entries, l)
		}
	}
	if got := readFile(t, mirror); got != strings.Join(entries, "") {
		t.Fatalf("the mended mirror is not the log's entries (%d lines, %d entries)", strings.Count(got, "\n"), len(entries))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAuditVerifyExport is the reproduction for exports: an exported file could not
// be verified at all. It now verifies offline with the gateway's public key, and against a
// copy of the head file.
func TestAuditVerifyExport(t *testing.T) {
	data := t.TempDir()
	r := serveWith(t, data)
	env := []string{"CAPGATE_DATA_DIR=" + data}
	callsThrough(t, r, env, 8)
	r.stop(t)
	dir := t.TempDir() // the auditor's folder: no data folder, no store
	exported := capgate(t, "", env, "audit", "export")
	mustCode(t, exported, 0)
	file := filepath.Join(dir, "audit.export")
	if err := os.WriteFile(file, []byte(exported.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(dir, "gateway.pub")
	mustCode(t, capgate(t, "", env, "audit", "public-key", "--out", pub), 0)
	head := filepath.Join(dir, "audit.head")
	if err := os.WriteFile(head, []byte(readFile(t, filepath.Join(data, "audit.head"))), 0o600); err != nil {
		t.Fatal(err)
	}
	offline := []string{"CAPGATE_DATA_DIR=" + filepath.Join(dir, "none")}
	v, res := verifyJSON(t, offline, "--export", file, "--public-key", pub, "--head", head)
	mustCode(t, res, 0)
	if len(v.Warnings) != 0 || v.Entries == 0 {
		t.Fatalf("the whole export with its head: %s", res.stdout)
	}
	// Without the head, the file could have been cut after its last line, and the notes say so.
	v, res = verifyJSON(t, offline, "--export", file, "--public-key", pub)
	mustCode(t, res, 0)
	if !v.warns("export", "after the last head kept outside the file") {
		t.Fatalf("the export alone: %s", res.stdout)
	}

	lines := strings.SplitAfter(exported.stdout, "\n")
	for name, content := range map[string]string{
		"edited":    strings.Replace(exported.stdout, `"decision":"allow"`, `"decision":"deny"`, 1),
		"cut":       strings.Join(lines[:len(lines)-4], ""),
		"line gone": strings.Join(lines[:3], "") + strings.Join(lines[4:], ""),
	} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "audit.export")
			if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			v, res := verifyJSON(t, offline, "--export", f, "--public-key", pub, "--head", head)
			mustCode(t, res, 1)
			if len(v.Problems) == 0 {
				t.Fatalf("%s", res.stdout)
			}
		})
	}
	// Another key: no checkpoint verifies.
	other := filepath.Join(dir, "other.pub")
	if err := os.WriteFile(other, bytes.Repeat([]byte{7}, 32), 0o644); err != nil {
		t.Fatal(err)
	}
	v, res = verifyJSON(t, offline, "--export", file, "--public-key", other)
	mustCode(t, res, 1)
	if !v.has(-1, "export", "signature does not verify") {
		t.Fatalf("another key: %s", res.stdout)
	}
	// No key to verify with, and --head without --export: usage errors.
	mustCode(t, capgate(t, "", offline, "audit", "verify", "--export", file), 2)
	mustCode(t, capgate(t, "", env, "audit", "verify", "--head", head), 2)
}

// TestAuditWitness runs a real witness (`capgate audit witness`) and a gateway that sends it
// its checkpoints: with the store's tail cut and the head file and mirror deleted (all an
// attacker with the data folder reaches), verify still finds the cut from the witness.
func TestAuditWitness(t *testing.T) {
	data := t.TempDir()
	env := []string{"CAPGATE_DATA_DIR=" + data}
	serveWith(t, data).stop(t) // makes the gateway's key
	pub := filepath.Join(t.TempDir(), "gateway.pub")
	mustCode(t, capgate(t, "", env, "audit", "public-key", "--out", pub), 0)

	wdir := t.TempDir()
	url := ""
	wit, err := startChild([]string{"audit", "witness", "--listen", "127.0.0.1:0", "--dir", wdir, "--public-key", pub}, nil, true, func(line string) bool {
		if rest, ok := strings.CutPrefix(line, "capgate audit witness on "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
		return true // the first line says where it listens
	})
	if err != nil {
		t.Fatal(err)
	}
	if url == "" {
		wit.kill()
		t.Fatal("the witness did not say where it listens")
	}
	t.Cleanup(func() {
		wit.cmd.Process.Signal(syscall.SIGTERM)
		<-wit.rest
		if err := wit.cmd.Wait(); err != nil {
			t.Errorf("the witness exited with %v", err)
		}
	})

	// The folder in the data folder is refused as a witness: it proves nothing more.
	bad := capgate(t, "", env, "serve", "--listen", "127.0.0.1:0", "--audit-witness", filepath.Join(data, "w"))
	mustCode(t, bad, 2)

	// A change made on the store directly, with no gateway running, signs a checkpoint of its
	// own: the older checkpoint offered to the witness below.
	mustCode(t, capgate(t, "", env, "client", "add", "early"), 0)
	r := serveWith(t, data, "--audit-witness", url)
	callsThrough(t, r, env, 10)
	r.stop(t)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	held, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	v, res := verifyJSON(t, env, "--audit-witness", url)
	mustCode(t, res, 0)
	if resp.StatusCode != 200 || !strings.Contains(string(held), fmt.Sprintf(`"seq":%d`, v.HeadSeq)) || len(v.Compared) != 3 {
		t.Fatalf("the witness holds %s %s; verify: %s", resp.Status, held, res.stdout)
	}
	// An older checkpoint cannot move it back.
	resp, err = http.Post(url, "application/json", strings.NewReader(oldCheckpoint(t, env)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("an older checkpoint: %s", resp.Status)
	}

	cutAudit(t, data, v.HeadSeq-5)
	sqliteExec(t, data, `DELETE FROM audit_checkpoints`)
	os.Remove(filepath.Join(data, "audit.head"))
	os.Remove(filepath.Join(data, "audit.jsonl"))
	v2, res := verifyJSON(t, env, "--audit-witness", url)
	mustCode(t, res, 1)
	if !v2.has(v.HeadSeq, "witness", fmt.Sprintf("the log ends at seq %d but the witness %s holds a checkpoint at seq %d", v.HeadSeq-5, url, v.HeadSeq)) {
		t.Fatalf("problems: %s", res.stdout)
	}
	// The same witness from the configuration's environment variable.
	v3, res := verifyJSON(t, append(env, "CAPGATE_AUDIT_WITNESS="+url))
	mustCode(t, res, 1)
	if !v3.has(v.HeadSeq, "witness", "holds a checkpoint") {
		t.Fatalf("from $CAPGATE_AUDIT_WITNESS: %s", res.stdout)
	}
}

// oldCheckpoint is the first checkpoint line of the data folder's export, as a body.
func oldCheckpoint(t *testing.T, env []string) string {
	t.Helper()
	out := capgate(t, "", env, "audit", "export").stdout
	for _, l := range strings.Split(out, "\n") {
		if body, ok := strings.CutPrefix(l, `{"checkpoint":`); ok {
			return strings.TrimSuffix(body, "}")
		}
	}
	t.Fatal("no checkpoint in the export")
	return ""
}
