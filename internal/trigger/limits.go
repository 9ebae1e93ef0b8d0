package trigger

import "time"

// Every size, count and time limit of the package is here, each with its reason.

const (
	// DefaultMaxLifetime is the longest a trigger may live when the host sets nothing: its
	// end date is required and at most this far from its proposal. Three months is long
	// enough for a season's errand, short enough that nothing runs on forgotten.
	DefaultMaxLifetime = 90 * 24 * time.Hour

	// MaxFirings is the largest count budget: a firing a minute for the longest lifetime.
	MaxFirings = 90 * 24 * 60

	// MaxTriggersPerClient is the most triggers one client may hold that are not stopped
	// (proposed, active or paused): a client cannot fill the store or the person's page.
	MaxTriggersPerClient = 64

	// MaxTriggers is the most triggers the host keeps, stopped ones included: every pass of
	// the engine reads them all.
	MaxTriggers = 4096

	// KeepStopped is how long a stopped trigger stays listed, with why it stopped, before it
	// is forgotten (the audit log keeps its history): a month to notice it.
	KeepStopped = 30 * 24 * time.Hour

	// MaxSpecBytes is the largest proposal read: an action's params and a condition fit.
	MaxSpecBytes = 64 << 10

	// MaxReasonBytes is the longest reason an agent gives for a trigger.
	MaxReasonBytes = 1024

	// DefaultTick is how often the engine looks for due firings and answered proposals: a
	// schedule fires within about a second of its time.
	DefaultTick = time.Second

	// MissedAfter is how late a scheduled firing may be and still run as on time. A firing
	// found later than this (capgate was down, or the machine asleep) follows the trigger's
	// missed policy instead.
	MissedAfter = time.Minute

	// MaxDuePerPass is the most scheduled times one pass handles for one trigger; the rest
	// wait for the next pass, so that one trigger cannot hold the engine.
	MaxDuePerPass = 64

	// MaxMissedRecorded is the most missed firings recorded one by one; beyond it the
	// missed times are recorded as one skip that counts them.
	MaxMissedRecorded = 16

	// FiringLease is how long a process that took a firing vouches that it works on it; it
	// renews the lease every third of it while the firing's call runs. A firing taken and
	// not renewed past its lease was interrupted (its process died, or lost the store), and
	// another process finishes it; on the same host one that sees the process gone does not
	// wait (runner.go).
	FiringLease = 30 * time.Second

	// ActivationGrace is how long after the person's approval a trigger may stay proposed
	// while another engine holds its token: the time between issuing it and writing the
	// record is a moment, and one still proposed this long after was left so by an engine
	// that died between the two.
	ActivationGrace = 10 * time.Minute

	// MaxAuditScan is the most audit entries read to learn what became of an interrupted
	// firing, from the head its row noted when it was taken.
	MaxAuditScan = 1 << 20

	// KeepFirings is how many firing rows each trigger keeps for its history; older ones
	// are removed once their key can no longer come again (a schedule's time is behind
	// the trigger's cursor, a webhook's is outside its window).
	KeepFirings = 50

	// MaxEventBytes is the largest event payload a trigger's condition reads.
	MaxEventBytes = 64 << 10
)
