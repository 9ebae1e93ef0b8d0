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
