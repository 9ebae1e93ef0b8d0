package conformance

import "time"

// The limits of a run, in one place.
const (
	// CaseTimeout bounds one case's call, and the capability's own timeout_ms lowers it. A
	// case is a dry run or a read of the provider's own small data, and a suite runs while a
	// person waits for an install: ten seconds is far beyond what a working provider needs
	// (the example knowledge base answers in well under a millisecond) and, with the suite
	// format's port.MaxCases, keeps the worst suite to minutes rather than forever.
	CaseTimeout = 10 * time.Second

	// MaxReasonBytes bounds a result's reason. A reason is the host's own words with a field
	// path, and a path of the result can hold member names the provider chose: the bound keeps
	// a provider from making the status, and the page that shows it, as large as it likes.
	MaxReasonBytes = 512

	// MaxRecordBytes bounds one app's stored record: MaxCapabilities (1024) results of at most
	// MaxReasonBytes each, with their ids and suite names, fit in it with room to spare.
	MaxRecordBytes = 4 << 20
)
