//go:build !linux

package sqlite

import (
	"errors"
	"os"
)

// errRing wraps a failure of the ring itself.
var errRing = errors.New("io_uring")

// uring is io_uring, which only Linux has: elsewhere the audit log calls fdatasync.
type uring struct{}

func newURing() (*uring, error) { return nil, errors.New("io_uring: not on this system") }

func (*uring) datasync(*os.File) error { return errors.New("io_uring: not on this system") }

func (*uring) close() {}
