package postgres_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
)

// Environment of the helper process that TestMultiProcessTakeUse starts.
const (
	envHelper = "CAPGATE_POSTGRES_TEST_HELPER" // "takeuse" selects the helper
	envDSN    = "CAPGATE_POSTGRES_TEST_DSN"
	envGo     = "CAPGATE_POSTGRES_TEST_GO" // a file whose appearance starts the uses
	envIndex  = "CAPGATE_POSTGRES_TEST_INDEX"
)

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

	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envHelper+"=takeuse", envDSN+"="+dsn, envGo+"="+goFile,
			fmt.Sprintf("%s=%d", envIndex, i))
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	// Let them all open the store first, so that their uses overlap.
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < procs; {
		if _, err := os.Stat(fmt.Sprintf("%s.ready%d", goFile, i)); err == nil {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatal("helpers not ready")
		}
		time.Sleep(time.Millisecond)
	}
	must(t, os.WriteFile(goFile, nil, 0o600))

	total, exhausted := 0, 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
		var ok, ex int
		line := ""
		for l := range strings.Lines(outs[i].String()) {
			if strings.HasPrefix(l, "RESULT ") {
				line = l
			}
		}
		if _, err := fmt.Sscanf(line, "RESULT ok=%d exhausted=%d", &ok, &ex); err != nil {
			t.Fatalf("helper %d: no result (%v):\n%s", i, err, outs[i])
		}
		t.Logf("helper %d: %d uses, %d exhausted", i, ok, ex)
		total += ok
		exhausted += ex
	}
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
	if os.Getenv(envHelper) != "takeuse" {
		t.Skip("helper process only")
	}
	s, err := postgres.Open(t.Context(), os.Getenv(envDSN))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.WriteFile(os.Getenv(envGo)+".ready"+os.Getenv(envIndex), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(os.Getenv(envGo)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no go signal")
		}
		time.Sleep(time.Millisecond)
	}
	var mu sync.Mutex
	ok, exhausted := 0, 0
	var wg sync.WaitGroup
	for w := range helperWorkers {
		wg.Go(func() {
			for i := range helperUses {
				id := []string{helperRoot, helperLeaf}[(w+i)%2]
				_, err := s.TakeUse(t.Context(), id, time.Now())
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, store.ErrExhausted):
					exhausted++
				default:
					t.Errorf("TakeUse %s: %v", id, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Printf("RESULT ok=%d exhausted=%d\n", ok, exhausted)
}
