// Package python is the Python Interpreter app of the token document as a Tier 1 app:
// execute_script, execute_file and read_output. It runs Starlark, the small, deterministic
// Python dialect of go.starlark.net, with nothing in reach but computation: no load(), no
// files, no environment, no network, no clock, no randomness. print is the only output,
// captured into a bounded buffer. A script sees Starlark's universe and the math and json
// modules, nothing else.
//
// It is not CPython or MicroPython: there are no imports, classes, exceptions, generators,
// f-strings or ** operator. It runs no native code: the script never leaves the interpreter.
//
// # Bounds
//
// Every execution has its own starlark.Thread under MaxSteps interpreter steps (reported as
// "step limit reached"), MaxCallDepth nested calls, MaxOutputBytes of output, MaxMemoryBytes
// of heap and the timeout param capped by the call's deadline (enforced with Thread.Cancel,
// and answered with sdk.Timeout). Scripts are at most MaxSourceBytes. A script that fails,
// or reaches a limit, is a result with status "error" and the fault's position as
// name:line:col, not a Go error.
//
// # A process per script
//
// Starlark bounds neither memory nor the Go stack, and those faults are not errors a Go
// program can recover from. One step can allocate a GiB ("x" * (1 << 29)); a tuple nested
// a few million levels deep, built in a few lines well under the step limit, overflows the
// Go stack when it is hashed or printed, which ends the whole process; and str() of such a
// value runs for minutes inside one built-in, where no cancellation is seen. So the
// interpreter does not run in the gateway's process: each script runs in a child process,
// the gateway's own executable started again with an argument and an environment variable
// that this package's init recognizes before the program's main runs. The child runs in a
// sandbox of its own (package sandbox: its own user, pid, network and mount namespaces, no
// capability, the running binary and the system's libraries read-only, no folder of the
// host), gets an empty environment and no files but its pipes, caps its own memory
// (RLIMIT_DATA), Go stack, CPU time and file writes (RLIMIT_FSIZE 0), runs the script, and
// reports on a pipe. A child
// that runs out of memory or stack dies alone and the script's result says which limit; a
// child that does not stop at its timeout is killed. At most MaxConcurrent children run at
// once. Starting a child costs some milliseconds, which a high-risk call that the person
// agreed to can afford.
//
// The rlimits are Linux's; elsewhere a child is bounded by the Go runtime's memory and stack
// settings and by being killed at its deadline.
package python
