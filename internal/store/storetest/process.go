package storetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// Environment of a process UseProcesses starts.
const (
	envHelper = "CAPGATE_STORETEST_HELPER" // "takeuse" selects the helper
	envGo     = "CAPGATE_STORETEST_GO"     // a file whose appearance starts the uses
	envIndex  = "CAPGATE_STORETEST_INDEX"
)

// processWait bounds how long the processes may take to open the store and to hear the word
// to start: it ends a hung test, it measures nothing.
const processWait = 60 * time.Second

// UseProcesses checks what goroutines in one process cannot: that TakeUse is atomic across
// processes. It starts procs copies of the test binary, each running the backend's
// TestHelperProcess with env added to its environment (where to find the store); that test
// skips unless InUseProcess and otherwise opens the store and calls TakeUses. UseProcesses
// lets them all open the store before any takes a use, so that their uses overlap, and
// returns the uses taken and the ErrExhausted met, summed over the processes.
func UseProcesses(t *testing.T, procs int, env ...string) (uses, exhausted int) {
	t.Helper()
	goFile := filepath.Join(t.TempDir(), "go")
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envHelper+"=takeuse", envGo+"="+goFile, fmt.Sprintf("%s=%d", envIndex, i))
		cmd.Env = append(cmd.Env, env...)
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	deadline := time.Now().Add(processWait)
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
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}

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
		uses += ok
		exhausted += ex
	}
	return uses, exhausted
}

// InUseProcess reports whether this process is one that UseProcesses started.
func InUseProcess() bool { return os.Getenv(envHelper) == "takeuse" }

// TakeUses is the work of a process UseProcesses started, on the store s it opened: it says
// it is ready, waits for the word to start, then takes uses from workers goroutines, each
// taking perWorker uses of ids in turn (worker w starts at ids[w%len(ids)]), and prints what
// it got for UseProcesses to read. An error other than ErrExhausted fails the test.
func TakeUses(t *testing.T, s store.Store, workers, perWorker int, ids ...string) {
	if err := os.WriteFile(os.Getenv(envGo)+".ready"+os.Getenv(envIndex), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(processWait)
	for {
		if _, err := os.Stat(os.Getenv(envGo)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no go signal")
		}
		time.Sleep(time.Millisecond)
	}
	var n useCount
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				id := ids[(w+i)%len(ids)]
				_, err := s.TakeUse(t.Context(), id, time.Now())
				n.add(t, id, err)
			}
		})
	}
	wg.Wait()
	fmt.Printf("RESULT ok=%d exhausted=%d\n", n.ok, n.exhausted)
}
