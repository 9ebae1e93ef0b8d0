//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package audit

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes a flock on f, exclusive or shared, waiting for it, and returns the function
// that releases it. flock locks belong to an open file, so two writers in one process that
// each opened the file exclude each other as two processes do, and a holder that crashes
// releases its lock.
func lockFile(f *os.File, exclusive bool) (unlock func(), err error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	fd := int(f.Fd())
	for {
		err = syscall.Flock(fd, how)
		// The Go runtime's own signals interrupt a blocked flock; wait again.
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return func() { syscall.Flock(fd, syscall.LOCK_UN) }, nil
}
