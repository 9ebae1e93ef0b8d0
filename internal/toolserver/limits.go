package toolserver

import "time"

const (
	// MaxNameBytes bounds a tool server's name: it is an app id label and an alias, and an
	// alias is at most 32 bytes.
	MaxNameBytes = 32
	// MaxTools bounds the tools taken from one server's listing, below the manifest's
	// MaxCapabilities: a server that lists more is cut, and the rest reported.
	MaxTools = 512
	// MaxActionBytes bounds an action derived from a tool name, so that capability ids stay
	// far below their limit.
	MaxActionBytes = 64
	// DefaultRelist is how often a running gateway lists a server's tools again, beside
	// list-changed notifications: a server that changes a tool without notifying is caught
	// within this time.
	DefaultRelist = 30 * time.Second
	// ConnectTimeout bounds starting a server and its initialize handshake.
	ConnectTimeout = 15 * time.Second
	// ListTimeout bounds one tools/list.
	ListTimeout = 15 * time.Second
	// CallTimeout bounds one tools/call when the capability declares no shorter timeout.
	CallTimeout = 30 * time.Second
	// PinRequestTTL is how long a pin consent request waits for the person; the tool stays
	// stopped after it expires, until accepted by `capgate toolserver accept`.
	PinRequestTTL = 24 * time.Hour
	// MaxDiffLines bounds the lines of a difference shown in a pin request.
	MaxDiffLines = 60
	// MaxDiffValueBytes bounds the JSON of one value in a difference line.
	MaxDiffValueBytes = 240
	// MaxOverlayBytes bounds the overlay file read.
	MaxOverlayBytes = 1 << 20
	// MaxEnv bounds the environment variables an operator may let through.
	MaxEnv = 64
	// MaxBinds bounds the folders a stdio server's sandbox binds: each is a mount per start.
	MaxBinds = 32
	// MaxAllow bounds the destinations a stdio server may reach.
	MaxAllow = 32
	// MaxURLBytes bounds the URL of a URL-mode information request shown to the person: longer
	// ones hide what they are in what a page can show, and are declined.
	MaxURLBytes = 2048
	// MaxInputRequests bounds the answers to information requests one call remembers for its
	// result (the go-sdk client itself retries a call at most 10 times).
	MaxInputRequests = 16
	// InputPoll is how often a URL request's consent request is read again while the call
	// waits for the person.
	InputPoll = 200 * time.Millisecond
	// InputGrace is how long after its call's end a URL request would expire: capgate
	// withdraws it (cancelled) when the call ends, within this time.
	InputGrace = 2 * time.Second
	// MaxFormFields bounds the fields of a form-mode information request: a form the person
	// reads and fills in, not a document.
	MaxFormFields = 32
	// MaxFormValueBytes bounds one answer of a form, and one of its enum values.
	MaxFormValueBytes = 4 << 10
	// MaxFormTextBytes bounds a field's title and description as the page shows them.
	MaxFormTextBytes = 512
)

// StdioTerminateWait is how long closing a stdio server waits, after closing its stdin, before
// it is terminated: a server that does not exit on end of input (server-everything) would
// otherwise hold every add, accept and shutdown for the SDK's default 5 s.
const StdioTerminateWait = time.Second

// Bounds on an overlay's param classes: a tool's params are a few members, each named by a
// short pointer.
const (
	// MaxOverlayParams is the most params one tool's overlay entry classifies.
	MaxOverlayParams = 256
	// MaxOverlayPointerBytes is the longest pointer of one.
	MaxOverlayPointerBytes = 1024
)
