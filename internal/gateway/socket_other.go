//go:build !unix

package gateway

import (
	"net"
	"time"
)

// ownSocket, where flock is not available, takes the socket unless a live server answers on it.
func ownSocket(path string) (release func(), err error) {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, errSocketInUse
	}
	return func() {}, nil
}

// lockFile takes no lock where flock is not available.
func lockFile(path string) (release func(), err error) { return func() {}, nil }
