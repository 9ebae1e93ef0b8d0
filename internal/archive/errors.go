package archive

import (
	"errors"
	"strconv"
)

// Sentinel errors name the kind of a refusal; every error Open returns for a package it refuses
// is an *Error that wraps one of them, so callers test with errors.Is.
var (
	// ErrFormat: neither a folder nor a gzip file, a corrupt gzip or tar stream, or data after
	// the end of either.
	ErrFormat = errors.New("not a valid package")

	// ErrEntryType: an entry that is not a regular file or a folder (a symbolic link, a hard
	// link, a device, a FIFO, a socket, a sparse file, a tar extension capgate does not accept).
	ErrEntryType = errors.New("entry type not allowed")

	// ErrPath: a path that breaks the path rules (see the package documentation).
	ErrPath = errors.New("invalid path")

	// ErrCollision: two entries with the same path, the same path up to case, or a path both a
	// file and a folder.
	ErrCollision = errors.New("paths collide")

	// ErrManifest: no manifest.json at the root, a root entry that would pass for it on a
	// case-insensitive file system, or a root manifest.yaml or manifest.yml: the authoring
	// form, which is signed into manifest.json before it is packaged.
	ErrManifest = errors.New("manifest missing, ambiguous or not JSON")

	// ErrLimit: a limit of limits.go exceeded.
	ErrLimit = errors.New("limit exceeded")
)

// Error is a refusal or a failure of Open. It says where (the entry's path inside the package,
// or "" for the package as a whole) and which rule, never a file's content.
type Error struct {
	// Path is the offending entry's path inside the package as the package spells it, cut to
	// MaxPathBytes. It may hold any bytes (it is what was refused): quote it before showing it,
	// as Error does.
	Path string
	// Rule says what the entry or package broke, in words.
	Rule string
	// Err is one of the sentinel errors of this package, or nil for an I/O failure.
	Err error
	// Cause is the underlying error (an I/O, gzip or tar error), or nil.
	Cause error
}

func (e *Error) Error() string {
	s := "archive: "
	if e.Path != "" {
		s += "entry " + strconv.Quote(e.Path) + ": "
	}
	if e.Err != nil {
		s += e.Err.Error() + ": "
	}
	s += e.Rule
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the sentinel and the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

func refuse(path string, kind error, rule string) *Error {
	if len(path) > MaxPathBytes {
		path = path[:MaxPathBytes]
	}
	return &Error{Path: path, Rule: rule, Err: kind}
}

func failure(path, rule string, cause error) *Error {
	e := refuse(path, nil, rule)
	e.Cause = cause
	return e
}
