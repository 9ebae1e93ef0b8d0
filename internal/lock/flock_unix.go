//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package lock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive flock on dir/capgate.lock.flock, creating dir and the file when
// missing, and returns the function that releases it. flock locks belong to an open file, so
// two goroutines of one process exclude each other as two processes do. The lock goes with the
// process: a holder that crashes releases it.
func lockDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLocking, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, flockName), os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLocking, err)
	}
	fd := int(f.Fd())
	for {
		err = syscall.Flock(fd, syscall.LOCK_EX)
		// The Go runtime's own signals interrupt a blocked flock; wait again.
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrLocking, f.Name(), err)
	}
	return func() {
		// Closing the file releases the lock; the explicit unlock says so.
		syscall.Flock(fd, syscall.LOCK_UN)
		f.Close()
	}, nil
}
