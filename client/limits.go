package client

import "time"

// DefaultServer is where capgate serve listens when nothing else is configured: loopback only.
const DefaultServer = "http://127.0.0.1:7766"

// Limits of what the client reads and sends.
const (
	// MaxAnswerBytes bounds an answer read from the gateway. A tool list of many apps is the
	// largest the gateway writes (a few hundred KiB); more is a bug or not capgate.
	MaxAnswerBytes = 16 << 20
	// minDuration is the least lifetime a token request or a derivation can name: the wire
	// counts whole seconds, and a derivation's 0 means "the parent's expiry", so a shorter
	// one would widen what was asked for.
	minDuration = time.Second
	// minSecretBytes is the shortest key or token the client takes out of what a server
	// says: capgate's are 47 bytes and more, and taking out a short one would garble words.
	minSecretBytes = 8
	// maxCodeBytes bounds an error code: capgate's are a few upper-case words.
	maxCodeBytes = 64
)
