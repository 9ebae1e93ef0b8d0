package plan

import "time"

// Limits of the person's preferences between providers, each with its reason. (The limits of
// retrieval are beside the index, in plan.go.)
const (
	// MaxPreferenceBytes bounds a stored preference before it is decoded: an app id and a
	// SHA-256 set identity take under 400 bytes, so anything longer is not one.
	MaxPreferenceBytes = 1024

	// PreferenceReadTimeout bounds the store read of a preference when a route is asked for
	// (Route takes no context): a store that does not answer in time leaves the route as if no
	// preference were kept, rather than holding every call by definition.
	PreferenceReadTimeout = 2 * time.Second
)
