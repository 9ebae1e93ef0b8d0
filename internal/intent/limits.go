package intent

// Every size limit of the package, each with its reason. Each bounds the work one hostile
// value can cause and the size of what is compared; none is near what a real intent needs.
const (
	// MaxHostBytes is the DNS bound on a name in text form (RFC 1035 2.3.4: 255 octets on
	// the wire, 253 characters without the trailing dot). An IPv6 literal is at most 45.
	MaxHostBytes = 253

	// MaxLabelBytes is the DNS bound on one label (RFC 1035 2.3.4).
	MaxLabelBytes = 63

	// MaxPathBytes is Linux's PATH_MAX: a longer path cannot be opened in one call.
	MaxPathBytes = 4096

	// MaxSegmentBytes is NAME_MAX on the common Linux file systems.
	MaxSegmentBytes = 255

	// MaxCredentialBytes is the length the credential-intent grammar
	// ^[a-z][a-z0-9._-]{0,127}$ allows.
	MaxCredentialBytes = 128

	// MaxEnvironmentBytes bounds an environment name or tag, as manifest.MaxShortStringBytes
	// bounds every identifier inside a capability's lists.
	MaxEnvironmentBytes = 255
)
