package sandbox_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
)

// limited runs a probe under limits and returns its line.
func limited(t *testing.T, s *sandbox.Sandbox, l sandbox.Limits, args ...string) string {
	t.Helper()
	sp := self(t, args...)
	sp.Limits = l
	return strings.TrimSpace(run(t, s, sp))
}

// Forking past the process limit fails, in the sandbox as a whole, though capgate runs as
// root; under the limit it works. The sandbox's cgroup is gone once it has ended.
func TestProcessLimit(t *testing.T) {
	s := sandboxtest.Open(t)
	how, ok := s.ProcessLimit()
	t.Logf("processes held by: %s", how)
	if !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no process limit in CI: %s", how)
		}
		t.Skipf("no process limit here: %s", how)
	}
	// The Go helper's own threads count too (pids counts tasks): 40 leaves room for them
	// and for some sleepers, never for 100.
	got := limited(t, s, sandbox.Limits{Processes: 40}, "fork", "100")
	n, errno, _ := strings.Cut(got, " ")
	if errno != "EAGAIN" || n == "0" || n == "100" {
		t.Errorf("forking 100 under a limit of 40: %s", got)
	}
	if got := limited(t, s, sandbox.Limits{Processes: 100}, "fork", "20"); got != "20 ok" {
		t.Errorf("forking 20 under a limit of 100: %s", got)
	}
	// The cgroups of the ended sandboxes are removed.
	deadline := time.Now().Add(5 * time.Second)
	for sandbox.CgroupsLive() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := sandbox.CgroupsLive(); n > 0 {
		t.Errorf("%d cgroups left", n)
	}
	// And so is this process's base, with no sandbox left in it.
	for time.Now().Before(deadline) {
		if _, err := os.Stat(sandbox.CgroupBase()); errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("the cgroup base %s is left", sandbox.CgroupBase())
}

// Allocating past the memory limit fails; under it works.
func TestMemoryLimit(t *testing.T) {
	s := sandboxtest.Open(t)
	l := sandbox.Limits{MemoryBytes: 256 << 20}
	if got := limited(t, s, l, "alloc", "64"); got != "ok" {
		t.Errorf("64 MiB under 256: %s", got)
	}
	if got := limited(t, s, l, "alloc", "512"); got != "ENOMEM" {
		t.Errorf("512 MiB under 256: %s", got)
	}
	// A C program (python3's interpreter) fails the same way, with its own error.
	if py, err := exec.LookPath("/usr/bin/python3"); err == nil {
		sp := sandbox.Spec{Program: py, Args: []string{"python3", "-c", "b = bytearray(512 << 20)"}, Dir: "/", Limits: l}
		cmd, err := s.Command(sp)
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "MemoryError") {
			t.Errorf("python3 allocating 512 MiB under 256: %v %s", err, out)
		}
	}
}

// Opening past the file limit fails with EMFILE.
func TestOpenFilesLimit(t *testing.T) {
	s := sandboxtest.Open(t)
	got := limited(t, s, sandbox.Limits{OpenFiles: 32}, "open", "100")
	n, errno, _ := strings.Cut(got, " ")
	if errno != "EMFILE" || n == "0" || n == "100" {
		t.Errorf("opening 100 under a limit of 32: %s", got)
	}
	if got := limited(t, s, sandbox.Limits{OpenFiles: 256}, "open", "100"); got != "100 ok" {
		t.Errorf("opening 100 under a limit of 256: %s", got)
	}
	// Its own shell cannot raise it.
	sp := shell("ulimit -n 4096 2>/dev/null && echo raised; ulimit -n")
	sp.Limits = sandbox.Limits{OpenFiles: 32}
	if got := run(t, s, sp); got != "32\n" {
		t.Errorf("ulimit -n after trying to raise it: %q", got)
	}
}

// A program past its CPU time is killed.
func TestCPULimit(t *testing.T) {
	s := sandboxtest.Open(t)
	sp := self(t, "spin")
	sp.Limits = sandbox.Limits{CPUSeconds: 1}
	cmd, err := s.Command(sp)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("a spinning program outlived its CPU limit")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the spinning program ended with %v", err)
	}
	// bwrap reports a child killed by a signal as 128 + the signal.
	if exit.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Errorf("exit status %d, want %d (SIGKILL)", exit.ExitCode(), 128+int(syscall.SIGKILL))
	}
}

// A spec's limits are checked: a negative one is refused naming the field.
func TestLimitsChecked(t *testing.T) {
	s := sandboxtest.Open(t)
	sp := shell("true")
	sp.Limits.Processes = -1
	if _, err := s.Command(sp); err == nil || !strings.Contains(err.Error(), "Limits") {
		t.Errorf("a negative limit: %v", err)
	}
	sp = shell("true")
	sp.Binds = []sandbox.Bind{{Path: "/run/capgate/x", Dir: os.Stdin}}
	if _, err := s.Command(sp); err == nil || !strings.Contains(err.Error(), "Binds[0].Path") {
		t.Errorf("a bind over the sandbox's own folder: %v", err)
	}
}
