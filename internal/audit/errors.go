package audit

import "errors"

// Errors callers test with errors.Is.
var (
	// ErrInvalidRecord is a Record that breaks a rule of Record.Validate, or an entry body
	// that is not the canonical JSON of a valid Record. The wrapping error names the field
	// and the rule, never the value.
	ErrInvalidRecord = errors.New("audit: invalid record")

	// ErrBadCheckpoint is a checkpoint whose body is malformed, whose signature does not
	// verify, or whose body disagrees with the store's Seq and Head.
	ErrBadCheckpoint = errors.New("audit: bad checkpoint")

	// ErrClosed is an Append on a closed Writer.
	ErrClosed = errors.New("audit: writer is closed")
)
