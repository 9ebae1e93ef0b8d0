package yamljson

// Limits on what Convert accepts. The input may come from anyone (a manifest
// sent to be linted, a port descriptor a host copied), so each limit bounds the
// time and memory a hostile document can cost; each is set far above what a
// real capgate manifest needs.
//
// The sizes are smaller than one might expect for a YAML converter because
// goccy/go-yaml, which tokenizes and parses before Convert sees a node, is
// expensive on hostile input (measured with v1.19.2):
//
//   - it allocates about 500 bytes per input byte tokenizing a flow sequence
//     of one-digit numbers, so 1 MiB costs 500 MB and 0.4 s before any limit
//     here can apply;
//   - it parses the keys of one block mapping by recursing once per key and
//     copying the tail of the mapping at each level, so a mapping of n keys
//     costs n-deep recursion and about 4·n² bytes (76,000 keys: 10 s, 22 GB);
//   - it builds a YAMLPath string for every node by copying the parent's path,
//     so a long key above many nodes, or deep nesting, costs the product of
//     the two (a 30 KB key over 30,000 items: 0.3 s, 100 MB; 20,000 nested
//     sequences: 640 MB).
//
// Convert therefore checks the token stream (prescan.go) before goccy's parser
// runs, refusing documents whose estimated shape is beyond scanSlack times a
// limit; the walk over the parsed tree then enforces each limit exactly and
// reports the document path.
const (
	// MaxInputBytes bounds the YAML text. A manifest is kilobytes; 1 MiB keeps
	// goccy's worst-case tokenizing cost (above) near half a gigabyte of
	// short-lived allocation.
	MaxInputBytes = 1 << 20

	// MaxDepth bounds how many mappings and sequences may enclose one another.
	// Manifests nest a JSON Schema a few levels deep; 128 leaves room for
	// generous schemas while keeping recursion, here and in goccy, shallow.
	MaxDepth = 128

	// MaxNodes bounds the number of nodes, counting every key and every value.
	// It bounds the work of the layers that decode and canonicalize the JSON
	// after this one; a real manifest has a few thousand nodes.
	MaxNodes = 100_000

	// MaxMappingKeys bounds the keys of one mapping. It bounds goccy's
	// quadratic block-mapping parse (1,000 keys cost about 4 MB); no schema in
	// a manifest lists a thousand properties.
	MaxMappingKeys = 1_000

	// scanSlack is how far beyond a limit the token pre-scan's estimate must go
	// before it refuses. The estimate is close to the exact count but may run
	// a little high; slack means a document is refused by the exact check,
	// which names the document path, whenever the estimate could be wrong.
	scanSlack = 2

	// maxParseWork bounds the bytes the pre-scan estimates goccy will copy:
	// for each node, the YAMLPath made of the keys above it, and for each
	// block mapping, its tail once per key (4·n² bytes for n keys). A
	// manifest needs well under 1 MiB; 64 MiB costs goccy about 0.1 s.
	maxParseWork = 64 << 20

	// maxQuoteCandidates bounds the quote characters tried as the start of
	// one quoted scalar (see quoted.go). Only quote characters inside plain
	// scalars between two quoted scalars on one line are wrong candidates;
	// the bound keeps a line built of them from costing quadratic time.
	maxQuoteCandidates = 64

	// maxPathSegmentBytes bounds how much of one key an error's Path shows, so
	// an error about a node under a huge key stays short.
	maxPathSegmentBytes = 64
)
