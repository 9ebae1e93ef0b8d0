package postgres_test

import (
	"os"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
	"github.com/capgate/capgate/internal/store/storetest"
)

// envDSN tells the helper process that TestMultiProcessTakeUse starts where the schema is.
const envDSN = "CAPGATE_POSTGRES_TEST_DSN"

// Each helper process runs helperWorkers goroutines, each taking helperUses uses, alternately
// of helperRoot and of helperLeaf, a token derived from it.
const (
	helperRoot    = "tk_root"
	helperLeaf    = "tk_leaf"
	helperWorkers = 4
	helperUses    = 10
)

// TestMultiProcessTakeUse runs four processes, each with its own pool, taking uses of one
// token and of a token derived from it: TakeUse must be atomic across processes, and a use of
// the derived token must count against the shared one.
func TestMultiProcessTakeUse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const procs, maxUses = 4, 25
	dsn := pgtest.Schema(t)
	s := open(t, dsn)
	now := time.Now()
	must(t, s.PutToken(t.Context(), store.Token{ID: helperRoot, ClientID: "cl_1", IssuedAt: now,
		ExpiresAt: now.Add(time.Hour), MaxUses: maxUses}))
	must(t, s.PutToken(t.Context(), store.Token{ID: helperLeaf, ParentID: helperRoot, ClientID: "cl_1",
		IssuedAt: now, ExpiresAt: now.Add(time.Hour)}))

	total, exhausted := storetest.UseProcesses(t, procs, envDSN+"="+dsn)
	if all := procs * helperWorkers * helperUses; total != maxUses || exhausted != all-maxUses {
		t.Errorf("%d uses and %d ErrExhausted across %d processes, want %d and %d",
			total, exhausted, procs, maxUses, all-maxUses)
	}
	root, err := s.GetToken(t.Context(), helperRoot)
	must(t, err)
	if root.Uses != maxUses {
		t.Errorf("root Uses = %d, want %d", root.Uses, maxUses)
	}
	leaf, err := s.GetToken(t.Context(), helperLeaf)
	must(t, err)
	if leaf.Uses == 0 || leaf.Uses > maxUses {
		t.Errorf("leaf Uses = %d, want between 1 and %d", leaf.Uses, maxUses)
	}
}

// TestHelperProcess is the child of TestMultiProcessTakeUse; run directly, it does nothing.
func TestHelperProcess(t *testing.T) {
	if !storetest.InUseProcess() {
		t.Skip("helper process only")
	}
	s, err := postgres.Open(t.Context(), os.Getenv(envDSN))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.TakeUses(t, s, helperWorkers, helperUses, helperRoot, helperLeaf)
}
