package lock

import (
	"errors"
	"strconv"
	"strings"
)

// ErrVersion is wrapped by the error for a lockfile whose lockfile_version this package does
// not know, or that has none.
var ErrVersion = errors.New("unknown lockfile_version")

// ErrLocking is wrapped by Update's and Cleanup's error when the advisory lock cannot be taken,
// including on platforms without flock.
var ErrLocking = errors.New("cannot lock the lockfile")

// Error is a lockfile that breaks a rule: it says where (section, entry, field) and which rule,
// never the offending value. Load and Validate return one, or several joined with errors.Join.
type Error struct {
	// Section is "plugins" or "pending", or "" for the file as a whole.
	Section string
	// Entry is the app id the entry is keyed by, or "#N" when that key is not a valid app id
	// (N counts the section's keys in sorted order from 0), or "" for the whole section.
	Entry string
	// Field is the path of the field inside the entry (or the file), such as "digest",
	// "manifest.app_id" or "entry.version"; "" for the entry itself.
	Field string
	// Rule is the rule broken.
	Rule string
	// Err is the cause, if any: a sentinel such as ErrVersion, or an error of package jcs or
	// manifest. Its text names no value either.
	Err error
}

// Error returns "capgate.lock: PATH: RULE", PATH such as plugins["org.example.notes"].digest.
func (e *Error) Error() string {
	p := e.Path()
	if p == "" {
		return FileName + ": " + e.Rule
	}
	return FileName + ": " + p + ": " + e.Rule
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Path returns the location as one path: section, entry and field.
func (e *Error) Path() string {
	var b strings.Builder
	b.WriteString(e.Section)
	switch {
	case e.Entry == "":
	case strings.HasPrefix(e.Entry, "#"):
		b.WriteString("[" + e.Entry + "]")
	default:
		b.WriteString("[" + strconv.Quote(e.Entry) + "]")
	}
	if e.Field != "" {
		if b.Len() > 0 && e.Field[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(e.Field)
	}
	return b.String()
}

// joinField joins a field path and a sub-path that may start with an index.
func joinField(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case b[0] == '[':
		return a + b
	default:
		return a + "." + b
	}
}

// problems collects Errors up to maxProblems.
type problems struct {
	errs []error
	more bool
}

func (ps *problems) add(e *Error) {
	if len(ps.errs) == maxProblems {
		ps.more = true
		return
	}
	ps.errs = append(ps.errs, e)
}

func (ps *problems) err() error {
	if ps.more {
		ps.errs = append(ps.errs, &Error{Rule: "more problems not listed"})
	}
	return errors.Join(ps.errs...)
}
