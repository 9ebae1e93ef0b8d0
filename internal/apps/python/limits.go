package python

import "time"

// Limits of one execution. Each bounds what one script can cost the gateway; none is close to
// what a script an agent writes to compute something needs.
const (
	// MaxSourceBytes bounds a script, inline or read from a file: scripts that compute
	// something are a few KiB; parsing and compiling cost grows with the source.
	MaxSourceBytes = 256 << 10

	// MaxOutputBytes bounds the text print captures; past it, output is dropped and the
	// result says truncated. It is also what read_output keeps per client.
	MaxOutputBytes = 1 << 20

	// MaxErrorBytes bounds the error message of a failed script (fail() takes any string).
	MaxErrorBytes = 4096

	// MaxSteps bounds the interpreter's abstract steps per execution: about a second of CPU,
	// far more than a computation an agent asks for.
	MaxSteps = 10_000_000

	// MaxCallDepth bounds the Starlark call stack (recursion is allowed, as in Python, whose
	// default limit is the same). Each Starlark call is several Go frames: an unbounded depth
	// would end in a Go stack overflow, a crash of the process rather than an error.
	MaxCallDepth = 1000

	// checkpointSteps is how often, in steps, the interpreter stops to check the call depth
	// and the step budget. A call costs several steps, so the depth can overshoot
	// MaxCallDepth by at most a few hundred frames.
	checkpointSteps = 1000

	// MaxJSONDepth bounds the nesting of values json.decode reads and json.encode writes:
	// both recurse once per level, and a string of a million "[" is one step away.
	MaxJSONDepth = 1000

	// DefaultTimeout is the timeout param's default; MaxTimeout its maximum (the manifest's
	// schema says the same).
	DefaultTimeout = 5000 * time.Millisecond
	MaxTimeout     = 60000 * time.Millisecond

	// killGrace is how long after its own timeout the sandbox process is given to stop the
	// script and report before it is killed: the interpreter notices a cancellation between
	// steps, not inside one long built-in (sorting or printing a huge list).
	killGrace = 250 * time.Millisecond

	// deadlineMargin is how much earlier than the call's deadline the sandbox process stops
	// the script itself, so that the output printed so far reaches the answer.
	deadlineMargin = 50 * time.Millisecond

	// MaxConcurrent bounds the sandbox processes running at once; a call waits for a slot
	// within its timeout.
	MaxConcurrent = 8

	// MaxMemoryBytes bounds the heap a script may hold: the sandbox process watches its heap
	// every memoryPoll and stops the script past it. Starlark itself has no memory limit,
	// and one step can ask for a GiB, so the process's data memory is also capped, at twice
	// this beyond what it held when it started (RLIMIT_DATA on Linux): an allocation too
	// big for that ends the process.
	MaxMemoryBytes = 512 << 20
	memoryPoll     = 5 * time.Millisecond

	// MaxStackBytes bounds the Go stack of the sandbox process: a value nested a million
	// levels deep makes a recursive built-in (hashing, printing) overflow any stack, and
	// this ends it early. MaxCallDepth Starlark calls need a few MiB.
	MaxStackBytes = 64 << 20

	// maxResultBytes bounds what the app reads of the sandbox's report (the result without
	// the output, which comes on its own pipe), and maxStderrBytes what it reads of a crash.
	maxResultBytes = 64 << 10
	maxStderrBytes = 4 << 10

	// MaxPathBytes bounds execute_file's path param.
	MaxPathBytes = 4096

	// MaxKeptOutputs bounds the clients whose last execution read_output keeps (the oldest
	// is forgotten first): at most this many times MaxOutputBytes of memory.
	MaxKeptOutputs = 16
)
