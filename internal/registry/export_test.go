package registry

// Stopped is how many capabilities r counts as stopped, the count behind Pinned's fast path.
func Stopped(r *Registry) int64 { return r.nstopped.Load() }
