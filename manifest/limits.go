package manifest

// Limits on what a manifest may hold. Each bounds the work a hostile manifest can cause a
// verifier before it is refused; none is close to what a real app declares.
const (
	// MaxManifestBytes bounds the input read for one manifest. The largest real manifests
	// (a few hundred capabilities with schemas) are well under 1 MiB.
	MaxManifestBytes = 4 << 20

	// MaxDepth bounds JSON nesting. Parameter schemas nest a few levels; 64 leaves room for
	// deep schemas while keeping recursion in the parser and schema compiler shallow.
	MaxDepth = 64

	// MaxCapabilities bounds the capabilities of one manifest, and so the schemas compiled
	// when it is loaded.
	MaxCapabilities = 1024

	// MaxEvents bounds the events of one manifest.
	MaxEvents = 256

	// MaxDescriptionBytes is the manifest document's bound on a description: it is untrusted
	// text shown to people and models, delimited and labelled, never as instructions.
	MaxDescriptionBytes = 2048

	// MaxNameBytes bounds a capability's human-readable name.
	MaxNameBytes = 256

	// MaxAppIDBytes is the DNS bound on a reverse-DNS identifier.
	MaxAppIDBytes = 253

	// MaxCapabilityIDBytes bounds a capability id: a domain, an app id and an action.
	MaxCapabilityIDBytes = 512

	// MaxVersionBytes bounds a SemVer string, pre-release and build included.
	MaxVersionBytes = 128

	// MaxListEntries bounds each list inside a capability (intents, evidence, examples, ...).
	MaxListEntries = 256

	// MaxCachedSchemas bounds the process-wide cache of compiled schemas, keyed by the
	// SHA-256 of their canonical bytes. Compiling dominates loading a manifest; a gateway
	// re-verifies the same manifests on every restart and reload, and many capabilities share
	// schemas. At a few KiB each, a full cache costs tens of MiB at most.
	MaxCachedSchemas = 8192

	// MaxShortStringBytes bounds identifiers inside lists (intent names, data classes, ...).
	MaxShortStringBytes = 255
)

// Bounds on what the params fast path (fastcheck.go) precompiles. A schema past them has no
// fast path, which only costs speed; they keep the checker's recursion shallow and its size
// near the schema's.
const (
	// maxFastDepth bounds the nesting of subschemas. Parameter schemas nest a few levels.
	maxFastDepth = 16

	// maxFastNodes bounds the subschemas of one schema.
	maxFastNodes = 512

	// maxFastRatBytes bounds the length of a number literal that is not a plain integer
	// which the fast path turns into a big.Rat, as the library does, to compare it with a
	// bound or an enumerated number. Literals with an exponent are left to the library
	// (1e999999 is an expensive rational), as are longer ones.
	maxFastRatBytes = 40
)

// Bounds on classifying a parameters schema (classes.go). A schema past them is not
// classified, which only means that tokens with path or command constraints refuse its
// capability.
const (
	// MaxClassNodes bounds the schema objects the classifier reads. Parameter schemas have
	// tens; tool servers' largest a few hundred.
	MaxClassNodes = 4096

	// MaxClassSteps bounds the classifier's work on one schema: the fixed point visits every
	// node a few times, and each visit walks its in-place applicators.
	MaxClassSteps = 1 << 20
)
