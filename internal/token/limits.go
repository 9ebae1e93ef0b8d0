package token

import "time"

// Every size, count and time limit of the package is here, each with its reason.

const (
	// MaxWireBytes is the longest wire form Parse and Verify read. A token is a few hundred
	// bytes; the lists of its constraints make it grow, and 32 KiB leaves room for the longest
	// lists below while bounding the work (and memory) a hostile string can cost before its
	// signature is checked.
	MaxWireBytes = 32 << 10

	// MaxLifetime is the longest a token may live, expires_at - issued_at. A stolen token is
	// useful until it expires; revocation needs the store, expiry does not.
	MaxLifetime = 30 * 24 * time.Hour

	// MaxGrants is the most capabilities one token grants. A request that needs more is
	// better served by a pattern (fs.*) the person can read.
	MaxGrants = 64

	// MaxListEntries is the most entries of each constraint list (allowed_paths,
	// allowed_commands, denied_commands, denied_patterns). Every call checks each entry, some
	// against the filesystem, so the bound is a bound on the cost of one check.
	MaxListEntries = 64

	// MaxEntryBytes is the longest entry of a constraint list, and of a path checked against
	// allowed_paths: PATH_MAX on Linux.
	MaxEntryBytes = 4096

	// MaxFieldBytes is the longest token_id, client_id, parent_id, consent_id and audit_tag.
	// They are names and a sentence for a log line, never documents.
	MaxFieldBytes = 256

	// MaxConditionBytes is the longest CEL condition. Conditions are short predicates written
	// for a person to read at consent time.
	MaxConditionBytes = 2048

	// MaxConditionCost is the CEL cost limit of one evaluation (cel.CostLimit): enough for a
	// few comprehensions over params, small enough that a hostile condition (nested
	// comprehensions over a large list) stops within microseconds instead of holding a call.
	MaxConditionCost = 100_000

	// conditionCacheSize is how many compiled conditions are kept. Tokens are few and their
	// conditions fewer; compiling one takes far longer than evaluating it.
	conditionCacheSize = 256

	// MaxCommandBytes is the longest command string a constrained token checks; longer ones
	// are refused. Shells accept far longer, but an agent's command is a line.
	MaxCommandBytes = 16 << 10

	// MaxArgs is the most words one command may split into.
	MaxArgs = 1024

	// MaxUnwrapDepth is the deepest nesting of wrappers (sudo env bash -c "nice ...") that
	// Constraints.Check follows; deeper nesting is refused rather than left unchecked.
	MaxUnwrapDepth = 8

	// MaxUnwraps is the most wrappers one command may contain in all.
	MaxUnwraps = 32

	// maxLinkHops is how many symbolic links one path may pass through while it is resolved,
	// as the kernel's own bound (40 on Linux); more is a loop and the path is refused.
	maxLinkHops = 40

	// DefaultCacheSize is the number of verified tokens a Verifier keeps when NewVerifier is
	// given zero; MaxCacheSize is the most it keeps whatever it is given. A cached token
	// costs about a kilobyte.
	DefaultCacheSize = 4096
	MaxCacheSize     = 1 << 20

	// maxJSONDepth is the deepest nesting of a token's JSON: the token, its constraints, a
	// list, a string.
	maxJSONDepth = 4

	// maxSafeInteger is the largest integer a double holds exactly (2^53 - 1); times and
	// counts beyond it would not read back as written.
	maxSafeInteger = 1<<53 - 1
)

// MaxPathLookups is how many path segments one Check may examine on disk for the words of
// the call's commands under allowed_paths. A command of MaxCommandBytes can hold thousands of
// words that may name paths, and an option word's attached value may start anywhere in it;
// each candidate is resolved through its links. Past the bound the call is refused.
const MaxPathLookups = 1 << 14
