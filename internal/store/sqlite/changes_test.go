package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// envChanges tells the helper process of TestChangeCounterAcrossProcesses what to do: "quiet"
// (an app's state, a use taken, an audit record) or "revoke", on the database named by envDB.
const envChanges = "CAPGATE_SQLITE_TEST_CHANGES"

// The change counter is shared by every process on the file: a revocation committed by
// another process moves it as this one sees it; that process's app state, a use taken and
// an audit record do not. A second store on the file in this process shares it too.
func TestChangeCounterAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "capgate.db")
	s, err := sqlite.Open(t.Context(), path)
	must(t, err)
	defer s.Close()
	now := time.Now()
	must(t, s.PutToken(t.Context(), store.Token{ID: helperToken, ClientID: "cl_1", IssuedAt: now, ExpiresAt: now.Add(time.Hour), MaxUses: 5}))
	c0, ok := s.Changes()
	if !ok {
		t.Fatal("no change counter on a local file")
	}
	child := func(mode string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestChangesHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), envDB+"="+path, envChanges+"="+mode)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("helper %s: %v\n%s", mode, err, out)
		}
	}
	child("quiet")
	if c, _ := s.Changes(); c != c0 {
		t.Fatalf("another process's state, use and audit record moved the counter from %d to %d", c0, c)
	}
	child("revoke")
	c1, _ := s.Changes()
	if c1 == c0 {
		t.Fatal("a revocation by another process did not move the counter")
	}
	other, err := sqlite.Open(t.Context(), path)
	must(t, err)
	defer other.Close()
	if c, _ := other.Changes(); c != c1 {
		t.Fatalf("a second store on the file reads %d, the first %d", c, c1)
	}
	must(t, other.PutMandate(t.Context(), store.Mandate{Permission: "app.notes.write", Autonomy: "ask", Updated: time.Now()}))
	if c, _ := s.Changes(); c == c1 {
		t.Fatal("a mandate put through the second store did not move the first's counter")
	}
}

// TestChangesHelper is the child of TestChangeCounterAcrossProcesses; run directly, it does
// nothing.
func TestChangesHelper(t *testing.T) {
	mode := os.Getenv(envChanges)
	if mode == "" {
		t.Skip("helper process only")
	}
	s, err := sqlite.Open(t.Context(), os.Getenv(envDB))
	must(t, err)
	defer s.Close()
	switch mode {
	case "quiet":
		must(t, s.PutState(t.Context(), "org.example.notes", "k", []byte("v")))
		if _, err := s.TakeUse(t.Context(), helperToken, time.Now()); err != nil {
			t.Fatal(err)
		}
		w := audit.NewWriter(s, nil)
		if _, err := w.Append(t.Context(), audit.Record{Action: "query", App: "notes", Method: "search", Decision: "allow",
			Result: "success", ClientID: "cl_1", Kind: "outcome"}); err != nil {
			t.Fatal(err)
		}
		must(t, w.Close())
	case "revoke":
		must(t, s.Revoke(t.Context(), helperToken, time.Now()))
	}
}

// The apps' state is served from memory while no capgate process changed it: another
// process's write (here a second store on the file, and a real child process) is read at the
// very next get, a missing key created elsewhere appears, a value handed out is a copy, and a
// change made to the file by other means (SQL straight at it) is seen within StateCacheTTL.
func TestStateCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capgate.db")
	s, err := sqlite.Open(t.Context(), path)
	must(t, err)
	defer s.Close()
	other, err := sqlite.Open(t.Context(), path)
	must(t, err)
	defer other.Close()
	ctx := t.Context()
	get := func(key string) string {
		t.Helper()
		v, err := s.GetState(ctx, "org.example.app", key)
		if errors.Is(err, store.ErrNotFound) {
			return "<missing>"
		}
		must(t, err)
		return string(v)
	}
	must(t, s.PutState(ctx, "org.example.app", "k", []byte("one")))
	if got := get("k"); got != "one" {
		t.Fatalf("get = %q", got)
	}
	v, _ := s.GetState(ctx, "org.example.app", "k")
	v[0] = 'X' // a copy: the kept value stays
	if got := get("k"); got != "one" {
		t.Fatalf("a change to a value handed out reached the cache: %q", got)
	}
	must(t, other.PutState(ctx, "org.example.app", "k", []byte("two")))
	if got := get("k"); got != "two" {
		t.Fatalf("after another store's write: %q, want two", got)
	}
	if got := get("new"); got != "<missing>" {
		t.Fatalf("a missing key: %q", got)
	}
	must(t, other.CreateState(ctx, "org.example.app", "new", []byte("made")))
	if got := get("new"); got != "made" {
		t.Fatalf("a key created elsewhere: %q", got)
	}
	must(t, other.PutState(ctx, "org.example.app", "new", nil))
	if got := get("new"); got != "<missing>" {
		t.Fatalf("a key deleted elsewhere: %q", got)
	}

	// SQL straight at the file moves no counter: the kept value may be served until the TTL.
	if got := get("k"); got != "two" {
		t.Fatalf("get = %q", got)
	}
	kept := time.Now()
	db, err := sql.Open("sqlite", path)
	must(t, err)
	defer db.Close()
	if _, err := db.Exec(`UPDATE app_state SET value = ? WHERE app_id = 'org.example.app' AND key = 'k'`, []byte("three")); err != nil {
		t.Fatal(err)
	}
	// (On a machine too slow to get here well within the TTL, the kept value may be gone.)
	if got := get("k"); got != "two" && time.Since(kept) < sqlite.StateCacheTTL/2 {
		t.Fatalf("right after a change by other means: %q, want the kept two", got)
	}
	time.Sleep(sqlite.StateCacheTTL + 50*time.Millisecond)
	if got := get("k"); got != "three" {
		t.Fatalf("a change by other means after the TTL: %q, want three", got)
	}
}
