package audit

import "time"

// Every size, count and time limit of the package, each with its reason.

const (
	// MaxFieldBytes bounds every string field of a Record except Explanation: ids, names,
	// hashes, tags and results are short, and a bound keeps one record (and every line of
	// the mirror and every row of the store) small whatever a caller passes.
	MaxFieldBytes = 1024

	// MaxExplanationBytes bounds Record.Explanation, the one free-text field: long enough for
	// every field path of a refused request, short enough that a hostile params document
	// cannot make the log grow by megabytes per call. Callers shorten longer text themselves;
	// the writer refuses it rather than cut a record silently.
	MaxExplanationBytes = 8192

	// MaxBodyBytes is the largest entry body Verify will parse. A record within the field
	// limits above is far smaller (18 fields, 17 × 1 KiB + 8 KiB before escaping, at most six
	// bytes per escaped byte); anything larger was not written by this package.
	MaxBodyBytes = 256 << 10

	// maxSafeInteger is the largest integer a double holds exactly (2^53-1). Numbers in a
	// record are written as RFC 8785 numbers, which are doubles, so a larger timestamp or
	// duration would be rounded in the canonical form and read back as another value.
	maxSafeInteger = 1<<53 - 1
)

const (
	// DefaultMaxBatch is Options.MaxBatch when zero: enough records to amortise one store
	// transaction (one fsync) over a burst of calls, few enough that one transaction stays
	// well under a megabyte.
	DefaultMaxBatch = 256

	// DefaultConflictRetries is Options.ConflictRetries when zero. Each retry means another
	// replica appended between our head read and our write; ten in a row means the log is
	// contended beyond what retrying fixes, and the callers are better told so.
	DefaultConflictRetries = 10

	// DefaultWriteTimeout is Options.WriteTimeout when zero: a store that takes longer to
	// make one batch durable is broken, and every caller waiting on it is a call held open.
	DefaultWriteTimeout = 30 * time.Second

	// DefaultHeadConfirm is Options.HeadConfirm when zero: how long the head file may lag the
	// last batch when no other follows. Under load every batch's head goes in with the next
	// batch's commit; at rest, a record is under the head file this long after its Append
	// returned, a window far shorter than anyone could cut the store and stop the gateway in.
	DefaultHeadConfirm = 20 * time.Millisecond

	// verifyPageSize is how many entries Verify and Export read per AuditRange call: the
	// memory held at once while streaming a log of any length.
	verifyPageSize = 1000

	// MaxProblems is the most problems a Report lists; the rest are counted in
	// Report.ProblemsOmitted. A log damaged from its first entry would otherwise produce one
	// problem per entry, as large as the log itself.
	MaxProblems = 1000
)

const (
	// DefaultWitnessTimeout bounds each exchange with an HTTP witness when HTTPWitness.Client
	// is nil: a witness is reached in the background and at verify, and one that does not
	// answer in this time is reported, not waited for.
	DefaultWitnessTimeout = 5 * time.Second

	// maxWitnessAnswerBytes bounds the answer to a POST read from a witness: a seq and a word.
	maxWitnessAnswerBytes = 4096

	// MaxLineBytes is the longest line of an export or of the mirror that VerifyExport and
	// the mirror check read: an entry's line is its body (at most MaxBodyBytes, or a third
	// more as base64) and some 250 bytes around it. A longer line was not written by this
	// package, and reading it whole would let a hostile file make the verifier hold it all.
	MaxLineBytes = MaxBodyBytes*4/3 + 4096

	// mirrorQueue is how many batches the writer hands its mirror goroutine before it stops
	// handing them (the goroutine then reads what it lacks from the store): enough to ride
	// out a slow disk, bounded so that a stuck mirror never holds the log in memory.
	mirrorQueue = 256

	// checkpointQueue is how many checkpoints the writer may have asked for and the
	// checkpointer not yet stored before the writer waits: a store that takes longer to commit
	// one than CheckpointEvery records take to arrive holds the writer back only past it.
	checkpointQueue = 16

	// mirrorEvery is the least time between two writes of the mirror file: the batches made
	// durable meanwhile wait in mirrorQueue and go in one write, under one lock of the file,
	// instead of one each (a lock, a look at the file and a write, about 6 µs of CPU a
	// batch under load). The mirror is a copy after the store; it lags by this much more.
	mirrorEvery = 10 * time.Millisecond

	// headKeptEntries bounds the entries the head file's keeper holds between two writes for
	// the check that links the head it wrote last to the new one; past it the keeper starts
	// again from the newest batch, and a head older than all it holds is read from the store.
	headKeptEntries = 4096
)
