package port

// Limits on the host's descriptor folder. The folder is the host's own, written by its operator,
// but it is still parsed strictly and bounded, so that a mistake (a log file dropped in, a
// generated descriptor gone wrong) is refused rather than loaded slowly or partly.
const (
	// MaxDescriptorBytes bounds one descriptor file and the kit index. A port of a hundred
	// methods is a few KiB.
	MaxDescriptorBytes = 1 << 20

	// MaxDescriptorDepth bounds JSON nesting in a descriptor: the format nests four levels
	// (root, methods, a method, its evidence list).
	MaxDescriptorDepth = 8

	// MaxDescriptorFiles bounds the descriptor files of one folder, and so the work of LoadDir.
	MaxDescriptorFiles = 1024

	// MaxMethods bounds the methods of one port.
	MaxMethods = 1024

	// MaxEvidence bounds the evidence records one method requires.
	MaxEvidence = 64

	// MaxSuites bounds the entries of the kit index.
	MaxSuites = 4096
)

// Limits on a conformance suite file (suite.go). A suite is data the host runs against a
// provider at install, while a person waits: a few cases of small params each, so the bounds
// are far above any real suite and far below what would make loading one slow.
const (
	// MaxSuiteBytes bounds one suite file. Sixty-four cases of a few hundred bytes of params
	// each are some 32 KiB.
	MaxSuiteBytes = 256 << 10

	// MaxSuiteDepth bounds JSON nesting in a suite file: the format itself nests four levels
	// (root, cases, a case, its params or expect), which leaves params the rest.
	MaxSuiteDepth = 32

	// MaxCases bounds the cases of one suite: each is one call of the provider, under its own
	// timeout, so the bound is also the bound on how long a suite can keep an install waiting.
	MaxCases = 64
	// MaxCaseNames bounds a case's data classes and surface requirements: a method touches a
	// few classes, and there are three surface requirements.
	MaxCaseNames = 32
)
