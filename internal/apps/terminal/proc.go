package terminal

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// proc is one running command: its process group, the parent's ends of its pipes, and its
// captured output.
type proc struct {
	cmd      *exec.Cmd
	pid      int // also its process group id
	started  time.Time
	exitedAt time.Time     // set before exited is closed
	exited   chan struct{} // closed once the command's own process has exited (not yet reaped)
	drained  chan struct{} // closed once both output readers have stopped

	stdout, stderr *capture   // nil when output is not captured
	reads          []*os.File // the parent's read ends of stdout and stderr

	stdin    *os.File      // the parent's write end of stdin; nil when the command reads /dev/null
	inLock   chan struct{} // holds one token while a write or close of stdin is under way
	inClosed bool          // with inLock held
	ending   atomic.Bool   // set when the command is being ended: no more input
}

// errInputClosed is what write answers once the command's input is closed.
var errInputClosed = errors.New("terminal: the command's input is closed")

// notFound is the problem of a program that cannot be run.
var notFound = sdk.InvalidParams(manifest.Problems{{Path: "command", Rule: "the program is not an executable file on the terminal's PATH"}})

// notVisible is the problem of a program outside what a command's sandbox shows.
var notVisible = sdk.InvalidParams(manifest.Problems{{Path: "command", Rule: "the program is neither the system's nor in the terminal's root folder, and cannot run in its sandbox"}})

// lookPath finds the program a command names: a name without a slash in searchPath's folders
// only (never in the working folder, never in capgate's own PATH), a name with one as the path
// it is, relative to dir.
func lookPath(name, dir string) (string, error) {
	if name == "" {
		return "", notFound
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, err := exec.LookPath(p); err != nil {
			return "", notFound
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(searchPath) {
		// exec.LookPath of a path with a slash checks that one file and searches nothing.
		p := filepath.Join(d, name)
		if _, err := exec.LookPath(p); err == nil {
			return p, nil
		}
	}
	return "", notFound
}

// start runs spec in the sandbox sb. With capture its stdout and stderr are read into
// captures, else they go to /dev/null; with input its stdin is a pipe written by write, else
// /dev/null.
func start(sb *sandbox.Sandbox, spec sandbox.Spec, capture, input bool) (*proc, error) {
	cmd, err := sb.Command(spec)
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = sysProcAttr()
	p := &proc{cmd: cmd, exited: make(chan struct{}), drained: make(chan struct{}), inLock: make(chan struct{}, 1)}
	var childEnds []*os.File
	fail := func(err error) (*proc, error) {
		for _, f := range childEnds {
			f.Close()
		}
		for _, f := range p.reads {
			f.Close()
		}
		if p.stdin != nil {
			p.stdin.Close()
		}
		return nil, err
	}
	// The pipes are *os.File, so exec.Cmd starts no copying goroutines of its own and Wait
	// returns when the process exits, even while something it left behind holds a pipe.
	if capture {
		p.stdout, p.stderr = newCapture(MaxOutputBytes), newCapture(MaxOutputBytes)
		or, ow, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		p.reads, childEnds, cmd.Stdout = append(p.reads, or), append(childEnds, ow), ow
		er, ew, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		p.reads, childEnds, cmd.Stderr = append(p.reads, er), append(childEnds, ew), ew
	}
	if input {
		ir, iw, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		childEnds, cmd.Stdin, p.stdin = append(childEnds, ir), ir, iw
	}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	p.started = time.Now()
	for _, f := range childEnds {
		f.Close()
	}
	p.pid = cmd.Process.Pid
	go func() {
		_ = waitExited(p.pid)
		p.exitedAt = time.Now()
		close(p.exited)
	}()
	var wg sync.WaitGroup
	if capture {
		wg.Add(2)
		go func() { defer wg.Done(); drain(p.reads[0], p.stdout) }()
		go func() { defer wg.Done(); drain(p.reads[1], p.stderr) }()
	}
	go func() { wg.Wait(); close(p.drained) }()
	return p, nil
}

// write writes data to the command's stdin, waiting at most until deadline (none when zero),
// and then closes it when closeAfter is set. It answers how much was written.
func (p *proc) write(data []byte, deadline time.Time, closeAfter bool) (int, error) {
	if !p.lockInput(deadline) {
		return 0, os.ErrDeadlineExceeded
	}
	defer p.unlockInput()
	return p.writeLocked(data, deadline, closeAfter)
}

// lockInput takes the input lock, waiting at most until deadline (for ever when zero): a
// write waits for the one before it within its own deadline.
func (p *proc) lockInput(deadline time.Time) bool {
	if deadline.IsZero() {
		p.inLock <- struct{}{}
		return true
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case p.inLock <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

func (p *proc) unlockInput() { <-p.inLock }

// writeLocked is write with the input lock held.
func (p *proc) writeLocked(data []byte, deadline time.Time, closeAfter bool) (int, error) {
	if p.stdin == nil || p.inClosed || p.ending.Load() {
		return 0, errInputClosed
	}
	n := 0
	if len(data) > 0 {
		var err error
		_ = p.stdin.SetWriteDeadline(deadline)
		// closeInput sets ending before it moves the deadline to now: seen unset here, its
		// deadline comes after this one and wakes the write below.
		if p.ending.Load() {
			return 0, errInputClosed
		}
		if n, err = p.stdin.Write(data); err != nil {
			return n, err
		}
	}
	if closeAfter {
		p.inClosed = true
		p.stdin.Close()
	}
	return n, nil
}

// closeInput closes the command's stdin, first waking any write blocked on it.
func (p *proc) closeInput() {
	if p.stdin == nil {
		return
	}
	p.ending.Store(true)
	_ = p.stdin.SetWriteDeadline(time.Now())
	p.lockInput(time.Time{}) // the write holding it wakes at the deadline just set
	defer p.unlockInput()
	if !p.inClosed {
		p.inClosed = true
		p.stdin.Close()
	}
}

// finish kills the command's process group (the command itself if it still runs, and
// whatever it left running), reaps it, closes its input and collects its output. It answers
// the command's exit state (nil if it could not be read) and how long it ran.
func (p *proc) finish() (*os.ProcessState, time.Duration) {
	killGroup(p.pid)
	// The command's own process too, should its group be out of reach: it cannot have been
	// reaped yet, so its pid is still its own.
	_ = p.cmd.Process.Kill()
	<-p.exited
	_ = p.cmd.Wait() // a non-zero exit is an *exec.ExitError; ProcessState says it
	st := p.cmd.ProcessState
	dur := p.exitedAt.Sub(p.started)
	p.closeInput()
	select {
	case <-p.drained:
	case <-time.After(DrainGrace):
		// Something outside the group still holds the pipes: stop reading.
		for _, f := range p.reads {
			f.Close()
		}
		<-p.drained
	}
	for _, f := range p.reads {
		f.Close()
	}
	return st, dur
}
