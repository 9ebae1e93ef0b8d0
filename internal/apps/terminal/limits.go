package terminal

import "time"

// Every size, count and time limit of the terminal is here, each with its reason.

const (
	// DefaultTimeout is a command's timeout when the call gives none: the token document's
	// default.
	DefaultTimeout = 30 * time.Second

	// MaxTimeout is the longest timeout a call may ask for. A command that needs longer is a
	// job for something other than an agent's terminal call.
	MaxTimeout = 5 * time.Minute

	// CapabilityTimeoutMS is execute_command's timeout_ms in the manifest, the gateway's
	// deadline for the call: MaxTimeout and some seconds to kill, reap and answer.
	CapabilityTimeoutMS = 310_000

	// MaxCommandBytes is the longest command: token.SplitCommand refuses longer ones, and so
	// would the gateway's command constraints.
	MaxCommandBytes = 16 << 10

	// MaxOutputBytes is how much of each of stdout and stderr is kept per command. The rest
	// is read (so the command is never blocked on a full pipe) and discarded. It is far more
	// than an agent reads, and it bounds a result's size: JSON writes a control byte as six
	// (\u0000), and the gateway checks results of at most 4 MiB against their schema, so two
	// streams of 256 KiB (3 MiB at worst) always fit.
	MaxOutputBytes = 256 << 10

	// MaxStdinBytes is the most input execute_command's stdin and one write_input may carry:
	// a call's input is text an agent wrote, not a file transfer.
	MaxStdinBytes = 64 << 10

	// MaxPathBytes is the longest cwd: PATH_MAX on Linux.
	MaxPathBytes = 4096

	// MaxHistory is how many commands the history keeps (the oldest go first).
	MaxHistory = 100

	// MaxRetainedOutputBytes bounds the output the history keeps in all: finished commands
	// lose their output, oldest first, beyond it (their entries stay). Without it 100
	// commands could hold 50 MiB.
	MaxRetainedOutputBytes = 16 << 20

	// MaxRunning is the most foreground commands running at once; one more is refused, not
	// queued. Each holds up to 512 KiB of output and a process group.
	MaxRunning = 16

	// MaxSessions is the most background commands running at once.
	MaxSessions = 8

	// DrainGrace is how long the output of an exited command is still read after its group
	// was killed: a process that left the group may hold the pipes open, and is not waited
	// for longer.
	DrainGrace = 2 * time.Second

	// InputWait is the longest a write_input waits for a command to read its input when the
	// call has no deadline of its own.
	InputWait = 10 * time.Second

	// MaxListedCommandBytes is how much of each command a history answer shows (read_output
	// shows all of it): 100 commands of 16 KiB, control bytes written as six in JSON, would
	// pass the 4 MiB the gateway checks a result within.
	MaxListedCommandBytes = 2 << 10

	// DefaultHistoryCount and MaxHistoryCount bound one history answer.
	DefaultHistoryCount = 20
	MaxHistoryCount     = MaxHistory

	// maxID is the largest history id, the largest integer a JSON double holds exactly.
	maxID = 1<<53 - 1

	// readBufferBytes is the buffer each output reader reads with.
	readBufferBytes = 32 << 10
)

// searchPath is the only PATH a command sees, and the only one its program is looked up in.
const searchPath = "/usr/local/bin:/usr/bin:/bin"
