package sandbox_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	cgroupsRemoved(t)
}

// cgroupsRemoved fails the test unless the cgroups of the ended sandboxes are removed, and
// then this process's bases, with no sandbox left in them.
func cgroupsRemoved(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for sandbox.CgroupsLive() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := sandbox.CgroupsLive(); n > 0 {
		t.Errorf("the cgroups of %d sandboxes left", n)
	}
	for _, base := range sandbox.CgroupBases() {
		for {
			_, err := os.Stat(base)
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the cgroup base %s is left", base)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Allocating past the memory limit fails, in a process of its own (RLIMIT_DATA, the first
// limit a program meets); under it works.
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
	// The sandboxes' memory cgroups, where they had one, are removed like pids ones.
	cgroupsRemoved(t)
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

// memoryCgroup returns the memory cgroup among dirs (the one with a memory limit), or "".
func memoryCgroup(dirs []string) string {
	for _, d := range dirs {
		for _, f := range []string{"memory.limit_in_bytes", "memory.max"} {
			if _, err := os.Stat(filepath.Join(d, f)); err == nil {
				return d
			}
		}
	}
	return ""
}

// cgroupValue reads one number (or "max") of a cgroup's file; "" when the file is missing.
func cgroupValue(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// probeCmd is a started probe: exited is closed once it has ended (Wait has returned).
type probeCmd struct {
	*exec.Cmd
	exited chan struct{}
}

// wait waits for the probe to end and returns its exit status.
func (p *probeCmd) wait() int {
	<-p.exited
	return p.ProcessState.ExitCode()
}

// startProbe starts spec with pipes on its standard input and output, and returns the
// command, its input and its output's lines; at the test's end its input is closed, and it
// is killed if it does not end then.
func startProbe(t *testing.T, s *sandbox.Sandbox, spec sandbox.Spec) (*probeCmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd, err := s.Command(spec)
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	// A sandbox whose pid 1 outlives bwrap (bubblewrap#633) would hold the pipes open.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		in.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if errOut.Len() > 0 {
			t.Logf("%v: stderr: %s", spec.Args, errOut.String())
		}
	})
	return &probeCmd{cmd, exited}, in, bufio.NewReader(out)
}

// A memory budget bounds the sandbox as a whole where a memory cgroup can be made: six
// children that each hold less than the budget (100 MiB and the Go runtime's own, about 110
// MiB of data, under 256), and together more, are not all let hold it
// (an allocation fails, or the kernel kills one of the sandbox's processes), the cgroup's
// limit is the budget, swap included, and the sandbox never used more; a process of the host
// outside the sandbox lives on. Under the budget every child holds its memory.
func TestSandboxMemoryLimit(t *testing.T) {
	s := sandboxtest.Open(t)
	how, ok := sandbox.MemoryLimit()
	t.Logf("memory held by: %s", how)
	if !ok {
		t.Skipf("no memory cgroup here: %s", how)
	}
	outside := exec.Command("/bin/sleep", "120")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = outside.Process.Kill(); _ = outside.Wait() }()

	const budget = 256 << 20
	// The kernel lets a charge it must not fail (for a process being killed, for the kernel's
	// own memory) pass the limit by a few pages: measured here, one.
	const overshoot = 1 << 20
	before := sandbox.CgroupDirs()
	sp := self(t, "memfork", "6", "100")
	sp.Limits = sandbox.Limits{MemoryBytes: budget, Processes: 64}
	cmd, in, out := startProbe(t, s, sp)
	dir := memoryCgroup(slices.DeleteFunc(sandbox.CgroupDirs(), func(d string) bool { return slices.Contains(before, d) }))
	if dir == "" {
		t.Fatal("the sandbox has no memory cgroup")
	}
	line, _ := out.ReadString('\n')
	t.Logf("six children of 100 MiB under a sandbox budget of 256 MiB: %q", line)
	var held, killed, failed int
	if _, err := fmt.Sscanf(line, "%d held %d killed %d failed", &held, &killed, &failed); err != nil {
		// The OOM killer chose the children's parent: the sandbox's processes are killed.
		in.Close()
		if code := cmd.wait(); code != 128+int(syscall.SIGKILL) {
			t.Fatalf("the probe said %q and ended with status %d", line, code)
		}
	} else if held >= 6 || killed+failed == 0 || held*100 > budget>>20 {
		t.Errorf("%d of six children held 100 MiB each in a sandbox of 256 MiB (%d killed, %d failed)", held, killed, failed)
	}
	// While the sandbox lives (its parent waits for its input): the limit is the budget, swap
	// does not widen it, and the sandbox never used more.
	if v := cgroupValue(t, dir, "memory.limit_in_bytes"); v != "" {
		if v != strconv.Itoa(budget) {
			t.Errorf("memory.limit_in_bytes = %s, want %d", v, budget)
		}
		if v := cgroupValue(t, dir, "memory.memsw.limit_in_bytes"); v != "" && v != strconv.Itoa(budget) {
			t.Errorf("memory.memsw.limit_in_bytes = %s, want %d", v, budget)
		}
		if v := cgroupValue(t, dir, "memory.max_usage_in_bytes"); v != "" && mustInt(t, v) > budget+overshoot {
			t.Errorf("memory.max_usage_in_bytes = %s, over the budget %d", v, budget)
		}
	} else {
		if v := cgroupValue(t, dir, "memory.max"); v != strconv.Itoa(budget) {
			t.Errorf("memory.max = %s, want %d", v, budget)
		}
		if v := cgroupValue(t, dir, "memory.swap.max"); v != "" && v != "0" {
			t.Errorf("memory.swap.max = %s, want 0", v)
		}
		if v := cgroupValue(t, dir, "memory.peak"); v != "" && mustInt(t, v) > budget+overshoot {
			t.Errorf("memory.peak = %s, over the budget %d", v, budget)
		}
	}
	in.Close()
	cmd.wait()
	if err := outside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a process outside the sandbox died: %v", err)
	}

	// Within the budget the sandbox runs normally.
	if got := limited(t, s, sandbox.Limits{MemoryBytes: budget, Processes: 64}, "memfork", "2", "16"); got != "2 held 0 killed 0 failed" {
		t.Errorf("two children of 16 MiB under 256: %s", got)
	}
	// And so it does with the proxy's forwarder as the program's parent, in the cgroups too.
	sp = self(t, "memfork", "2", "16")
	sp.Limits = sandbox.Limits{MemoryBytes: budget, Processes: 64}
	sp.ProxySocket = "/dev/null"
	if got := strings.TrimSpace(run(t, s, sp)); got != "2 held 0 killed 0 failed" {
		t.Errorf("two children of 16 MiB under 256, under the forwarder: %s", got)
	}
	cgroupsRemoved(t)
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
