package policy

// Every size and count limit of the package is here, each with its reason.

const (
	// MaxListedProblems is the most params field paths an INVALID_REQUEST explanation lists;
	// the rest are counted. An explanation is a sentence for a person, and the broker's own
	// answer carries the full problem list.
	MaxListedProblems = 8

	// MaxFieldPathBytes is the longest field path an explanation repeats; a longer one is
	// replaced by a placeholder. Paths are built from param names and indices, and a param name
	// long enough to pass this bound is more likely data than a name.
	MaxFieldPathBytes = 256

	// maxAllowedTexts bounds the explanations of allowed calls kept per capability name
	// (allowedText): more than any registry holds, few enough to stay small.
	maxAllowedTexts = 1 << 14
)
