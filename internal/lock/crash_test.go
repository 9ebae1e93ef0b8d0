package lock_test

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/lock"
)

// The two states the crash test alternates between: a few hundred KiB each, so that a Save
// takes long enough to be killed in the middle.
func crashStates(t testing.TB) (a, b *lock.File) {
	return bigFile(t, 40, 4, "1.0.0"), bigFile(t, 40, 4, "2.0.0")
}

// TestHelperWriter runs in a child process: it saves states A and B in turn until killed.
func TestHelperWriter(t *testing.T) {
	helperMode(t, "writer")
	dir := os.Getenv(helperDir)
	a, b := crashStates(t)
	if os.Getenv(helperFirst) == "B" {
		a, b = b, a
	}
	ppid := os.Getppid()
	os.Stdout.WriteString(helperReady + "\n")
	deadline := time.Now().Add(30 * time.Second)
	for !parentGone(ppid) && time.Now().Before(deadline) {
		for _, f := range []*lock.File{a, b} {
			if err := lock.Save(dir, f); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// helperFirst names the state the writer saves first: the one the file is not in, so that
// every kill during the first Save interrupts a real change.
const helperFirst = "CAPGATE_LOCK_FIRST"

// A process killed at a random instant of Save leaves the old lockfile or the new one.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a hundred processes")
	}
	dir := t.TempDir()
	a, b := crashStates(t)
	encA, err := lock.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	encB, err := lock.Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Save(dir, a); err != nil {
		t.Fatal(err)
	}
	wantA, _ := lock.Load(dir)
	saveStart := time.Now()
	if err := lock.Save(dir, b); err != nil {
		t.Fatal(err)
	}
	// Kills fall from the start of the first Save to past the end of the second.
	window := min(3*time.Since(saveStart), 25*time.Millisecond)
	wantB, _ := lock.Load(dir)
	t.Logf("states of %d and %d bytes; kills within %v of the writer starting", len(encA), len(encB), window)

	const iterations = 100
	start := time.Now()
	var sawA, sawB, changed, torn int
	current := "B"
	for i := range iterations {
		if time.Since(start) > 12*time.Second {
			t.Logf("stopping after %d iterations to keep the test short", i)
			break
		}
		first := map[string]string{"A": "B", "B": "A"}[current]
		cmd := helperCommand(t, "TestHelperWriter", helperEnv+"=writer", helperDir+"="+dir, helperFirst+"="+first)
		cmd.Stderr = nil // a killed child prints nothing useful
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		tempsBefore := temps(t, dir)
		waitReady(t, bufio.NewScanner(out))
		time.Sleep(rand.N(window))
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()

		data, err := os.ReadFile(filepath.Join(dir, lock.FileName))
		if err != nil {
			t.Fatalf("iteration %d: %v", i, err)
		}
		got, err := lock.Load(dir)
		if err != nil {
			t.Fatalf("iteration %d: Load after a kill: %v", i, err)
		}
		now := ""
		switch {
		case bytes.Equal(data, encA) && reflect.DeepEqual(got, wantA):
			sawA, now = sawA+1, "A"
		case bytes.Equal(data, encB) && reflect.DeepEqual(got, wantB):
			sawB, now = sawB+1, "B"
		default:
			t.Fatalf("iteration %d: the lockfile is neither state A nor state B", i)
		}
		if now != current {
			changed++
		}
		current = now
		if temps(t, dir) > tempsBefore {
			torn++ // killed between creating its temporary file and renaming it
		}
		if i%10 == 9 {
			if err := lock.Cleanup(dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("A %d times, B %d times; %d kills after a change, %d in the middle of a Save", sawA, sawB, changed, torn)
	if sawA == 0 || sawB == 0 || torn == 0 {
		t.Errorf("kills never fell in the middle of a Save or between two Saves (A %d, B %d, torn %d)", sawA, sawB, torn)
	}

	if err := lock.Cleanup(dir); err != nil {
		t.Fatal(err)
	}
	if n := temps(t, dir); n != 0 {
		t.Errorf("%d temporary files left after Cleanup", n)
	}
	if _, err := lock.Load(dir); err != nil {
		t.Fatal(err)
	}
}

// temps counts atomicfile's temporary files for the lockfile in dir.
func temps(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "."+lock.FileName+".tmp-") {
			n++
		}
	}
	return n
}

func TestCleanup(t *testing.T) {
	dir := t.TempDir()
	if err := lock.Save(dir, testFile(t)); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".capgate.lock.tmp-123", "{\"lockfile_version\":1,\"plu") // a torn write
	write(".capgate.lock.tmp-456", "")
	write(".other.tmp-1", "keep")     // another file's temporary
	write("capgate.lock.bak", "keep") // not ours to judge
	if err := os.Mkdir(filepath.Join(dir, ".capgate.lock.tmp-dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Load(dir); err != nil {
		t.Fatalf("Load with temporary files present: %v", err)
	}
	if err := lock.Cleanup(dir); err != nil {
		t.Fatal(err)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{".capgate.lock.tmp-dir", ".other.tmp-1", "capgate.lock", "capgate.lock.bak", "capgate.lock.flock"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("after Cleanup: %q, want %q", names, want)
	}
	if _, err := lock.Load(dir); err != nil {
		t.Fatal(err)
	}
	if err := lock.Cleanup(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("Cleanup of a missing folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("Cleanup created the missing folder")
	}
}
