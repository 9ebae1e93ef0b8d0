package sqlite_test

import (
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
