//go:build !linux

package python

import (
	"os"
	"time"
)

// limitProcess sets no process limits outside Linux: there the sandbox process is bounded by
// the debug package's memory and stack limits and by being killed at the deadline only.
func limitProcess(time.Duration) {}

// memoryPeak is unknown outside Linux.
func memoryPeak(*os.ProcessState) uint64 { return 0 }
