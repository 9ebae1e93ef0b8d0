//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package lock

import (
	"fmt"
	"runtime"
)

// lockDir fails where there is no flock: Update refuses rather than risk losing a change.
func lockDir(dir string) (unlock func(), err error) {
	return nil, fmt.Errorf("%w: no flock on %s", ErrLocking, runtime.GOOS)
}
