package desktop

import "time"

// Every size, count and time limit of the package is here, each with its reason.
const (
	// MaxDepth is the deepest a walk goes into an app's tree: real windows nest a few
	// dozen levels; a deeper tree is hostile or broken.
	MaxDepth = 32

	// MaxNodes is the most elements a walk reads of one app; the rest is left out (and
	// the walk says so): each element is a few D-Bus calls.
	MaxNodes = 2000

	// WalkTimeout bounds one walk: an app that does not answer its accessibility calls
	// does not hold the caller.
	WalkTimeout = 10 * time.Second

	// CallTimeout bounds one accessibility call to an app.
	CallTimeout = 2 * time.Second

	// MaxNameBytes is the longest accessible name kept: names become capability names.
	MaxNameBytes = 128

	// MaxTextBytes is the most text get_text answers and set_text takes.
	MaxTextBytes = 64 << 10

	// MaxCapabilities is the most capabilities one app derives.
	MaxCapabilities = 200
)
