package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/internal/store/storetest"
)

// envDB tells the helper process that TestMultiProcessTakeUse starts where the file is.
const envDB = "CAPGATE_SQLITE_TEST_DB"

// Each helper process takes helperUses uses of helperToken, one after the other.
const (
	helperToken = "tk_shared"
	helperUses  = 20
)

// TestMultiProcessTakeUse runs four processes taking uses of one token in one database file:
// TakeUse must be atomic across processes, not only across goroutines.
func TestMultiProcessTakeUse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs, maxUses = 4, 25
	path := filepath.Join(t.TempDir(), "capgate.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	must(t, s.PutToken(t.Context(), store.Token{ID: helperToken, ClientID: "cl_1", IssuedAt: now,
		ExpiresAt: now.Add(time.Hour), MaxUses: maxUses}))
	must(t, s.Close())

	total, exhausted := storetest.UseProcesses(t, procs, envDB+"="+path)
	if total != maxUses || exhausted != procs*helperUses-maxUses {
		t.Errorf("%d uses and %d ErrExhausted across %d processes, want %d and %d",
			total, exhausted, procs, maxUses, procs*helperUses-maxUses)
	}

	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok, err := s.GetToken(t.Context(), helperToken)
	must(t, err)
	if tok.Uses != maxUses {
		t.Errorf("Uses = %d, want %d", tok.Uses, maxUses)
	}
}

// TestHelperProcess is the child of TestMultiProcessTakeUse; run directly, it does nothing.
func TestHelperProcess(t *testing.T) {
	if !storetest.InUseProcess() {
		t.Skip("helper process only")
	}
	s, err := sqlite.Open(t.Context(), os.Getenv(envDB))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.TakeUses(t, s, 1, helperUses, helperToken)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
