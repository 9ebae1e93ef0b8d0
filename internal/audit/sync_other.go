//go:build !linux

package audit

import "os"

// datasync makes f's data durable: fsync where fdatasync is not at hand.
func datasync(f *os.File) error { return f.Sync() }
