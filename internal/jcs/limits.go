package jcs

// Every limit of the package is here, each with its reason.

const (
	// DefaultMaxDepth is the deepest nesting of arrays and objects that Parse
	// accepts when Options.MaxDepth is zero. Parse, AppendCanonical and the
	// code that walks a Value all recurse once per level, so the bound keeps
	// a document of a million '[' from using unbounded stack and time.
	// capgate's own documents nest fewer than ten levels; 128 leaves room
	// for tool parameters described by JSON Schema.
	DefaultMaxDepth = 128

	// MaxDepthCeiling is the deepest nesting any Options.MaxDepth can allow
	// and the deepest AppendCanonical and AppendIndent will write. A Value
	// built by hand can contain itself through a shared slice; without a
	// bound, writing it would recurse until the Go stack overflowed, which
	// kills the process instead of returning an error. Ten thousand levels
	// use a few megabytes of stack.
	MaxDepthCeiling = 10000

	// DefaultMaxBytes is the largest input Parse accepts when
	// Options.MaxBytes is zero. A parsed Value takes far more memory than
	// its text: every array element is a 96-byte Value, so "[0,0,0,…]"
	// grows some fifty-fold, and while it is parsed the elements sit on
	// the parser's stack as well as in the finished array. A 4 MiB array
	// of zeros peaks near 400 MiB. The limit on the input is therefore the
	// limit on the memory a hostile document can make a verifier use.
	// Manifests and tokens are kilobytes, so 4 MiB is still a thousand
	// times what capgate signs; a caller that needs more says so in
	// Options.MaxBytes.
	DefaultMaxBytes = 4 << 20
)

const (
	// linearDupScan is how many members an object may have before
	// duplicate names are checked with a map instead of a linear scan. A
	// scan beats a map for the small objects that make up nearly every
	// document, but is quadratic; the map keeps a hostile object with
	// a hundred thousand members linear.
	linearDupScan = 16

	// maxPathName is the longest member name, in bytes, written into an
	// error's Path. Names come from the input, so an unbounded one would let
	// a document make an error message (and the log line holding it) as
	// large as the document.
	maxPathName = 64

	// maxPathSegments is the most steps of a path written into an error;
	// a longer one keeps its first and last steps. Like maxPathName it
	// keeps a deeply nested document from making a huge error message.
	maxPathSegments = 32

	// maxExactDigits is the most significant digits a number literal may
	// have under Options.ExactNumbers. The shortest decimal that reads back
	// as a given double never needs more than 17 digits, so a literal with
	// more cannot equal it; the bound also lets the check work in a
	// fixed-size buffer however long the literal is.
	maxExactDigits = 17

	// firstChunk and maxChunk bound the chunks of the parser's element
	// stack, which double from the first to the largest: the first small
	// enough that parsing a token allocates little, the largest big enough
	// that a huge array needs few chunks, small enough that the last one
	// wastes little.
	firstChunk = 16
	maxChunk   = 4096

	// maxPooledScratch is the largest scratch buffer (escaped strings, the error path) a
	// parser keeps for the next document.
	maxPooledScratch = 4096
)
