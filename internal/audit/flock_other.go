//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package audit

import (
	"fmt"
	"os"
	"runtime"
)

// lockFile fails where there is no flock: the head file and the mirror file are not written
// rather than risk one writer's head going back under another's (the writer logs and counts
// it; the store still holds every record).
func lockFile(f *os.File, exclusive bool) (unlock func(), err error) {
	return nil, fmt.Errorf("no flock on %s", runtime.GOOS)
}
