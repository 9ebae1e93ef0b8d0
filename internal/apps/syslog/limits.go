package syslog

// Limits of the log, each with its reason.
const (
	// DefaultCapacity is the Ring's size when NewRing is given none: enough for the recent
	// history an agent or a person looks at, small enough to stay in memory.
	DefaultCapacity = 1000

	// MaxCapacity bounds a Ring: at MaxEntryBytes an entry, a full Ring holds at most about
	// 200 MiB, and a query walks at most this many entries.
	MaxCapacity = 100_000

	// MaxEntryBytes bounds one entry's message with its attributes, so that one huge or
	// hostile record cannot fill the memory or the answer.
	MaxEntryBytes = 2048

	// DefaultCount and MaxCount are get_logs' page size: the document's default, and a bound
	// on one answer (at most about 2 MiB).
	DefaultCount = 100
	MaxCount     = 1000

	// MaxOffset bounds get_logs' offset: no Ring holds more entries.
	MaxOffset = MaxCapacity
)
