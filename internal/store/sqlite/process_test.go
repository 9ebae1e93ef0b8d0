package sqlite_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// Environment of the helper process that TestMultiProcessTakeUse starts.
const (
	envHelper = "CAPGATE_SQLITE_TEST_HELPER" // "takeuse" selects the helper
	envDB     = "CAPGATE_SQLITE_TEST_DB"
	envGo     = "CAPGATE_SQLITE_TEST_GO" // a file whose appearance starts the uses
	envIndex  = "CAPGATE_SQLITE_TEST_INDEX"
)

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
	dir := t.TempDir()
	path := filepath.Join(dir, "capgate.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	must(t, s.PutToken(t.Context(), store.Token{ID: helperToken, ClientID: "cl_1", IssuedAt: now,
		ExpiresAt: now.Add(time.Hour), MaxUses: maxUses}))
	must(t, s.Close())

	goFile := filepath.Join(dir, "go")
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envHelper+"=takeuse", envDB+"="+path, envGo+"="+goFile,
			fmt.Sprintf("%s=%d", envIndex, i))
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	// Let them all open the file first, so that their uses overlap.
	deadline := time.Now().Add(30 * time.Second)
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
	if os.Getenv(envHelper) != "takeuse" {
		t.Skip("helper process only")
	}
	s, err := sqlite.Open(t.Context(), os.Getenv(envDB))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.WriteFile(os.Getenv(envGo)+".ready"+os.Getenv(envIndex), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(os.Getenv(envGo)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no go signal")
		}
		time.Sleep(time.Millisecond)
	}
	ok, exhausted := 0, 0
	for range helperUses {
		_, err := s.TakeUse(t.Context(), helperToken, time.Now())
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrExhausted):
			exhausted++
		default:
			t.Fatalf("TakeUse: %v", err)
		}
	}
	fmt.Printf("RESULT ok=%d exhausted=%d\n", ok, exhausted)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
