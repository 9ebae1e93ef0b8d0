package egress

import "time"

// Every size, count and time limit of the egress proxy is here, each with its reason. The
// client of the proxy is a sandboxed program capgate does not trust, so each bounds what one
// hostile client can make capgate hold or do.

const (
	// MaxHeaderBytes bounds the request line and headers a client sends the proxy: enough
	// for any API request's headers, far from what would let one client fill memory.
	MaxHeaderBytes = 64 << 10

	// MaxResponseHeaderBytes bounds the headers a destination answers with, for the same
	// reason, on the other side.
	MaxResponseHeaderBytes = 256 << 10

	// ReadHeaderTimeout bounds how long a client may take to send a request's headers: a
	// client that trickles them holds a goroutine and a socket.
	ReadHeaderTimeout = 10 * time.Second

	// IdleTimeout closes a client's keep-alive connection that sends nothing for this long.
	IdleTimeout = 60 * time.Second

	// ResolveTimeout bounds the one resolution of a destination's name; a name that takes
	// longer fails the connection (502), it is never retried.
	ResolveTimeout = 5 * time.Second

	// DialTimeout bounds each TCP connection attempt to a checked address.
	DialTimeout = 10 * time.Second

	// MaxDialAttempts is how many of the checked addresses of one answer are tried, in the
	// order the resolver gave them, before the connection fails: enough to step past a dead
	// address or a missing IPv6 route, few enough that an answer of hundreds of addresses
	// cannot make the proxy knock on hundreds of doors. Every address of the answer is
	// classified first, whatever this limit.
	MaxDialAttempts = 4

	// TLSHandshakeTimeout bounds the TLS handshake the proxy makes itself for a request that
	// carries a credential handle.
	TLSHandshakeTimeout = 10 * time.Second

	// ResponseHeaderTimeout bounds how long a destination may take to start answering a
	// forwarded request. Bodies stream for as long as the call lasts.
	ResponseHeaderTimeout = 60 * time.Second

	// UpstreamIdleTimeout closes an idle pooled connection to a destination; connections
	// are pooled per call and closed when the call ends in any case.
	UpstreamIdleTimeout = 30 * time.Second

	// MaxIdlePerDestination bounds the idle pooled connections one call keeps to one
	// destination.
	MaxIdlePerDestination = 4

	// MaxConnectionsPerCall bounds the connection attempts one call may make over its whole
	// life (each admitted destination counts once it is to be resolved and dialled, whether
	// or not it connects): every connection made is observed and reported, so the report
	// stays bounded and complete, and a call cannot make the proxy resolve and dial without
	// end; the next attempt is refused.
	MaxConnectionsPerCall = 256

	// MaxHandlesPerCall bounds the credential handles one call may hold: a capability
	// declares a few credential intents, and a handle is minted per request of the provider.
	MaxHandlesPerCall = 64

	// MinSecretBytes and MaxSecretBytes bound a credential's secret. A shorter value is no
	// secret worth the name, and the proxy's masking of the secret in responses would garble
	// ordinary text; a longer one is no API token and would not fit a header line.
	MinSecretBytes = 8
	MaxSecretBytes = 8 << 10

	// MaxCredentials bounds the host's credential catalog, and MaxCredentialDestinations
	// the destinations of one entry: configuration, but read into memory whole.
	MaxCredentials            = 1024
	MaxCredentialDestinations = 64

	// tunnelBuffer is the copy buffer of each direction of a CONNECT tunnel.
	tunnelBuffer = 32 << 10
)
