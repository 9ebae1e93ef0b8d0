package python

import (
	"errors"
	"fmt"
	"io"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.starlark.net/lib/math"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The statuses of an execution, as execute_script and read_output answer them.
const (
	statusSuccess   = "success"   // the script ran to its end
	statusError     = "error"     // the script failed: a syntax or runtime error, or a limit
	statusTimeout   = "timeout"   // the script was stopped at its timeout or the call's deadline
	statusCancelled = "cancelled" // the call was cancelled before the script ended
	statusNone      = "none"      // read_output only: nothing ran yet
)

// engineLimits are the bounds of one run of the engine.
type engineLimits struct {
	steps  uint64        // interpreter steps
	depth  int           // Starlark call depth
	output int           // bytes of print output
	time   time.Duration // wall time, enforced with Thread.Cancel
	memory uint64        // heap bytes of the whole process, watched; 0: not watched
}

var defaultEngineLimits = engineLimits{steps: MaxSteps, depth: MaxCallDepth, output: MaxOutputBytes}

// fileOptions are the Python-like features Starlark leaves out by default: while loops,
// if/for/while at top level, reassigned globals, recursion and sets.
var fileOptions = &syntax.FileOptions{
	Set:             true,
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
	Recursion:       true,
}

// predeclared are the names a script sees besides Starlark's universe: pure modules only.
// time (the clock) and anything else that reaches the host are left out.
var predeclared = starlark.StringDict{
	"math": math.Module,
	"json": jsonModule,
}

// errNoLoad is what load() answers: a script runs alone.
var errNoLoad = errors.New("load() is not available: a script runs alone, with only the math and json modules")

// stopCause is why the engine stopped a script before its end.
type stopCause int32

const (
	stopNone stopCause = iota
	stopSteps
	stopDepth
	stopTimeout
	stopMemory
)

// engineResult is what a run of the engine reports besides its output, which went to the
// sink as it was printed. It travels from the sandbox process to the app as JSON.
type engineResult struct {
	Status    string  `json:"status"` // statusSuccess, statusError or statusTimeout
	Error     *string `json:"error"`
	Steps     uint64  `json:"steps"`
	Truncated bool    `json:"truncated"`
}

// printSink writes print output to w up to max bytes, cutting at a character boundary, and
// drops the rest. It is used from the interpreter's goroutine only.
type printSink struct {
	w         io.Writer
	room      int
	truncated bool
	failed    bool
}

func (s *printSink) print(msg string) {
	if s.truncated || s.failed {
		return
	}
	line := msg + "\n"
	if len(line) > s.room {
		cut := s.room
		for cut > 0 && cut < len(line) && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line = line[:cut]
		s.truncated = true
	}
	s.room -= len(line)
	if _, err := io.WriteString(s.w, line); err != nil {
		s.failed = true
	}
}

// runEngine parses and runs src, named name in positions, under lim, printing into out. It
// never returns a Go error: every failure of the script is a result. It does not freeze the
// script's globals (freezing recurses through nested values).
//
// runEngine is safe to call from several goroutines at once: each run has its own thread.
// It does not bound the memory a script allocates, nor the Go stack a deeply nested value
// needs in a recursive built-in: the sandbox process does (see sandbox.go).
func runEngine(name string, src []byte, lim engineLimits, out io.Writer) engineResult {
	sink := &printSink{w: out, room: lim.output}
	th := &starlark.Thread{Name: "python"}
	th.Print = func(_ *starlark.Thread, msg string) { sink.print(msg) }
	th.Load = func(*starlark.Thread, string) (starlark.StringDict, error) { return nil, errNoLoad }

	var cause atomic.Int32
	stop := func(c stopCause, reason string) {
		if cause.CompareAndSwap(int32(stopNone), int32(c)) {
			th.Cancel(reason)
		}
	}
	// The step budget is spent in checkpoints: at each, the call depth is checked and the
	// next checkpoint set, until the budget is used up.
	th.SetMaxExecutionSteps(min(checkpointSteps, lim.steps))
	th.OnMaxSteps = func(th *starlark.Thread) {
		if th.CallStackDepth() > lim.depth {
			stop(stopDepth, "call depth")
			return
		}
		n := th.ExecutionSteps()
		if n >= lim.steps {
			stop(stopSteps, "step limit")
			return
		}
		th.SetMaxExecutionSteps(min(n+checkpointSteps, lim.steps))
	}
	if lim.time > 0 {
		t := time.AfterFunc(lim.time, func() { stop(stopTimeout, "timeout") })
		defer t.Stop()
	}
	if lim.memory > 0 {
		done := make(chan struct{})
		defer close(done)
		go watchHeap(lim.memory, done, func() { stop(stopMemory, "memory") })
	}

	res := engineResult{Status: statusSuccess}
	_, prog, err := starlark.SourceProgramOptions(fileOptions, name, src, predeclared.Has)
	if err == nil {
		_, err = prog.Init(th, predeclared)
	}
	res.Steps = th.ExecutionSteps()
	res.Truncated = sink.truncated
	if err == nil {
		return res
	}
	res.Status = statusError
	var msg string
	switch stopCause(cause.Load()) {
	case stopSteps:
		msg = where(err) + fmt.Sprintf("step limit reached: the script ran more than %d steps", lim.steps)
	case stopDepth:
		msg = where(err) + fmt.Sprintf("maximum call depth exceeded: more than %d nested calls", lim.depth)
	case stopMemory:
		msg = where(err) + fmt.Sprintf("memory limit reached: the script held more than %d MiB", lim.memory>>20)
	case stopTimeout:
		res.Status = statusTimeout
		msg = where(err) + fmt.Sprintf("timed out after %d ms", lim.time.Milliseconds())
	default:
		msg = describe(err)
	}
	msg = clip(msg, MaxErrorBytes)
	res.Error = &msg
	return res
}

// describe says what went wrong with a script, with the position of the fault as
// name:line:col. It holds the script's own text only.
func describe(err error) string {
	var (
		se  syntax.Error
		rel resolve.ErrorList
		ee  *starlark.EvalError
	)
	switch {
	case errors.As(err, &se):
		return se.Error()
	case errors.As(err, &rel):
		lines := make([]string, 0, min(len(rel), 10))
		for i, e := range rel {
			if i == 10 {
				lines = append(lines, fmt.Sprintf("... and %d more", len(rel)-10))
				break
			}
			lines = append(lines, e.Error())
		}
		return strings.Join(lines, "\n")
	case errors.As(err, &ee):
		// A built-in's message names it mostly ("fail: boom"); say where when it does not.
		in := ""
		if n := len(ee.CallStack); n > 0 && ee.CallStack[n-1].Pos.Filename() == "<builtin>" {
			if name := ee.CallStack[n-1].Name; !strings.HasPrefix(ee.Msg, name+":") {
				in = "in " + name + ": "
			}
		}
		return where(err) + in + ee.Msg
	}
	return "the script failed"
}

// where is the position of the innermost Starlark frame of err, followed by ": ", or "".
func where(err error) string {
	var ee *starlark.EvalError
	if !errors.As(err, &ee) {
		return ""
	}
	for i := len(ee.CallStack) - 1; i >= 0; i-- {
		if pos := ee.CallStack[i].Pos; pos.IsValid() && pos.Filename() != "<builtin>" {
			return pos.String() + ": "
		}
	}
	return ""
}

// clip shortens s to at most max bytes at a character boundary, marking the cut.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = " [...]"
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// watchHeap calls over once the process's heap holds more than limit bytes of objects,
// polling every memoryPoll until done is closed. It watches the whole process, so it is
// meant for the sandbox process, which runs one script.
func watchHeap(limit uint64, done <-chan struct{}, over func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(memoryPoll)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > limit {
			over()
			return
		}
	}
}
