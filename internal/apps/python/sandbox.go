package python

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/sdk"
)

// A script runs in a child process: the gateway's own executable started again with
// sandboxArg and sandboxEnv, which this package's init recognizes before anything else of
// the program runs. The child reads one request on stdin, runs the engine under process
// limits (memory, Go stack, CPU time, no file writes), prints on stdout and reports on a
// third pipe. Whatever a script does to its process (exhaust memory, overflow the stack in a
// built-in, spin inside one) ends that process only, and the app kills it at the deadline.
// The child gets an empty environment: nothing of the gateway's leaks into it.
const (
	sandboxArg = "__capgate_python_sandbox"
	sandboxEnv = "CAPGATE_PYTHON_SANDBOX"
)

func init() {
	if len(os.Args) == 2 && os.Args[1] == sandboxArg && os.Getenv(sandboxEnv) == "1" {
		os.Exit(serveSandbox(os.Stdin, os.Stdout, os.NewFile(3, "result")))
	}
}

// sandboxRequest is what the app sends the child.
type sandboxRequest struct {
	Name      string `json:"name"`
	Source    string `json:"source"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// serveSandbox is the child's side: it runs one script and returns the exit code.
func serveSandbox(in io.Reader, out io.Writer, result io.WriteCloser) int {
	var req sandboxRequest
	data, err := io.ReadAll(io.LimitReader(in, 4*MaxSourceBytes+4096))
	if err != nil || json.Unmarshal(data, &req) != nil || req.TimeoutMS <= 0 {
		return 3
	}
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	limitProcess(timeout)
	debug.SetMaxStack(MaxStackBytes)
	debug.SetMemoryLimit(2 * MaxMemoryBytes)

	// Output goes out unbuffered, a write per print, so that what a script printed before
	// its process died or was killed still reaches the answer.
	lim := defaultEngineLimits
	lim.time = timeout
	lim.memory = MaxMemoryBytes
	res := runEngine(req.Name, []byte(req.Source), lim, out)
	enc, _ := json.Marshal(res)
	if _, err := result.Write(enc); err != nil {
		return 4
	}
	if result.Close() != nil {
		return 4
	}
	return 0
}

// box starts child processes, at most MaxConcurrent at once, each in a sandbox of its own
// that sees the running binary (read-only, at childProgram), the system's libraries it links
// to, and nothing else: no folder of the host to read or write, no network, no process.
type box struct {
	sb    *sandbox.Sandbox
	exe   *os.File // the running binary, even if replaced on disk since
	slots chan struct{}
}

// childProgram is where the sandbox shows the running binary.
const childProgram = "/run/capgate/python"

func newBox(sb *sandbox.Sandbox) (*box, error) {
	exe := "/proc/self/exe"
	if runtime.GOOS != "linux" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("python: the running binary: %w", err)
	}
	return &box{sb: sb, exe: f, slots: make(chan struct{}, MaxConcurrent)}, nil
}

func (s *box) close() error { return s.exe.Close() }

// capped keeps the first max bytes written to it and drops the rest, never failing, so that
// the child is never blocked or broken by a full pipe.
type capped struct {
	buf       []byte
	max       int
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - len(c.buf)
	if len(p) > room {
		c.truncated = true
		c.buf = append(c.buf, p[:max(room, 0)]...)
	} else {
		c.buf = append(c.buf, p...)
	}
	return len(p), nil
}

// run runs src in a child process within timeout and ctx. It returns the outcome, and an
// *sdk.Error when the script did not end on its own: sdk.Timeout at the timeout or the
// call's deadline, ExecutionFailed when the call was cancelled or the sandbox failed. An
// error of the script is an outcome with status "error" and no Go error.
func (s *box) run(ctx context.Context, capabilityID, name string, src []byte, timeout time.Duration) (outcome, error) {
	start := time.Now()
	elapsed := func() int64 { return time.Since(start).Milliseconds() }
	ended := func(status string) (outcome, error) {
		o := outcome{Status: status, DurationMS: elapsed()}
		if status == statusTimeout {
			msg := "the script did not finish in time"
			o.Error = &msg
			return o, sdk.Timeout(capabilityID, o.DurationMS)
		}
		msg := "the call was cancelled"
		o.Error = &msg
		return o, sdk.ExecutionFailed("the call was cancelled before the script ended", true)
	}
	ctxStatus := func() string {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return statusTimeout
		}
		return statusCancelled
	}

	wait := time.NewTimer(timeout)
	select {
	case s.slots <- struct{}{}:
		wait.Stop()
	case <-wait.C:
		return ended(statusTimeout)
	case <-ctx.Done():
		wait.Stop()
		return ended(ctxStatus())
	}
	defer func() { <-s.slots }()

	budget := timeout - time.Since(start)
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d)-deadlineMargin)
	}
	if budget < time.Millisecond {
		budget = time.Millisecond
	}
	req, _ := json.Marshal(sandboxRequest{Name: name, Source: string(src), TimeoutMS: budget.Milliseconds()})

	r, w, err := os.Pipe()
	if err != nil {
		return outcome{}, sdk.ExecutionFailed("the script sandbox could not start", true)
	}
	defer r.Close()
	stdout := &capped{max: MaxOutputBytes}
	stderr := &capped{max: maxStderrBytes}
	cmd, err := s.sb.Command(sandbox.Spec{
		Program: childProgram, ProgramFD: s.exe, Args: []string{"python", sandboxArg}, Dir: "/",
		// GORACE matters to race-detector builds only, which would sleep a second at exit.
		Env:        []string{sandboxEnv + "=1", "GOTRACEBACK=none", "GOMAXPROCS=2", "GORACE=atexit_sleep_ms=0"},
		ExtraFiles: []*os.File{w}, // the child's descriptor 3: its report
	})
	if err != nil {
		w.Close()
		return outcome{}, sdk.ExecutionFailed("the script sandbox could not start", true)
	}
	cmd.Stdin = bytes.NewReader(req)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return outcome{}, sdk.ExecutionFailed("the script sandbox could not start", true)
	}
	report := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, maxResultBytes))
		_, _ = io.Copy(io.Discard, r)
		report <- b
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	kill := time.NewTimer(budget + killGrace)
	defer kill.Stop()
	killed := ""
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-kill.C:
		killed = statusTimeout
	case <-ctx.Done():
		killed = ctxStatus()
	}
	if killed != "" {
		// The whole group: bwrap and what it started. A sandbox whose pid 1 outlives bwrap
		// (bubblewrap#633: killed in its first milliseconds) still holds the report's pipe,
		// so capgate closes its own end rather than wait for that one to.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		waitErr = <-exited
		r.Close()
	}
	raw := <-report

	var res engineResult
	if killed == "" && waitErr == nil && json.Unmarshal(raw, &res) == nil {
		o := outcome{
			Status:     res.Status,
			Output:     strings.ToValidUTF8(string(stdout.buf), "\uFFFD"),
			Truncated:  res.Truncated || stdout.truncated,
			Error:      res.Error,
			DurationMS: elapsed(),
			Steps:      res.Steps,
		}
		if res.Status == statusTimeout {
			return o, sdk.Timeout(capabilityID, o.DurationMS)
		}
		return o, nil
	}
	if killed != "" {
		o, err := ended(killed)
		o.Output, o.Truncated = strings.ToValidUTF8(string(stdout.buf), "\uFFFD"), stdout.truncated
		return o, err
	}
	// The child died on its own: a process limit the script ran into, or, when it ended
	// with one of serveSandbox's own codes, a fault of the sandbox.
	var exit *exec.ExitError
	if !errors.As(waitErr, &exit) || exit.ExitCode() == 3 || exit.ExitCode() == 4 {
		return outcome{}, sdk.ExecutionFailed("the script sandbox failed", false)
	}
	msg := crashReason(string(stderr.buf), memoryPeak(cmd.ProcessState))
	return outcome{
		Status:     statusError,
		Output:     strings.ToValidUTF8(string(stdout.buf), "\uFFFD"),
		Truncated:  stdout.truncated,
		Error:      &msg,
		DurationMS: elapsed(),
	}, nil
}

// crashReason says which process limit a sandbox that died while running a script hit,
// from what the Go runtime printed and the most memory the process held.
func crashReason(stderr string, peak uint64) string {
	switch {
	case strings.Contains(stderr, "stack overflow") || strings.Contains(stderr, "stack exceeds"):
		return "stack limit reached: a value is nested too deeply"
	case strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") || peak >= MaxMemoryBytes:
		return "memory limit reached: the script's process ran out of memory (the limit is 512 MiB)"
	case strings.Contains(stderr, "CPU time limit"):
		return "CPU time limit reached"
	}
	// The Go runtime does not always say it ran out: a failed mapping can end it otherwise.
	return "the script's process ended abnormally, most likely at its memory limit (512 MiB)"
}
