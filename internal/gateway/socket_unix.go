//go:build unix

package gateway

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ownSocket takes an exclusive, non-blocking flock on path+".lock", which this process holds
// while it serves the socket: of several replicas sharing a data folder exactly one serves its
// socket, and a crash releases it for the next. It returns errSocketInUse when another process
// holds it.
func ownSocket(path string) (release func(), err error) {
	return lockFile(path + ".lock")
}

// lockFile takes an exclusive, non-blocking flock on path, creating it, and returns
// errSocketInUse when another process holds it; release gives it up.
func lockFile(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("gateway: lock %s: %w", path, err)
	}
	fd := int(f.Fd())
	for {
		err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errSocketInUse
		}
		return nil, fmt.Errorf("gateway: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}
