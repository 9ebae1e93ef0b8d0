package gateway

import (
	"os"
	"runtime/debug"
)

// GCPercent is the garbage collector's target that a serving gateway sets when its environment
// does not (GOGC): the heap may grow to five times what is live between collections, instead
// of Go's default of twice. A gateway's live heap is small (caches bounded in the broker, the
// verifier and the registry) and most of what a call allocates dies with it, so collecting
// less often saves CPU that calls use: about a tenth of the calls a second on two cores
// (docs/performance.md), for some tens of megabytes more memory.
const GCPercent = 400

// TuneRuntime sets the garbage collector's target to GCPercent unless GOGC is set in the
// environment, which always wins. `capgate serve` and `capgate bench gateway` call it.
func TuneRuntime() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(GCPercent)
	}
}
