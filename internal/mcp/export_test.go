package mcp

// FastAnswered is how many requests h answered without the SDK (fast.go), for the tests that
// hold the two paths' answers to each other.
func FastAnswered(h *Handler) int64 { return h.fast.Load() }
