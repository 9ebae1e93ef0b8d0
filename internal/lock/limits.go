package lock

import "github.com/capgate/capgate/manifest"

// Every limit of the package is here, each with its reason.
const (
	// MaxFileBytes bounds the lockfile Load reads. A parsed JSON document takes many times
	// its size in memory, so the bound is the bound on what a damaged or hostile file can
	// make Load use. Real lockfiles hold tens of plugins whose manifests are tens of KiB;
	// 32 MiB leaves room for hundreds of large ones.
	MaxFileBytes = 32 << 20

	// maxDepth bounds JSON nesting in the lockfile: four levels of its own structure
	// (pending → entry → entry → manifest) above a manifest, which manifest.MaxDepth bounds.
	maxDepth = manifest.MaxDepth + 8

	// MaxSourceBytes bounds Entry.Source, a path or URL shown to people.
	MaxSourceBytes = 4096

	// MaxApprovedByBytes bounds Entry.ApprovedBy, the name of a reviewer.
	MaxApprovedByBytes = 256

	// maxProblems bounds how many problems one validation reports, so that a lockfile with
	// thousands of broken entries gives an error of readable size.
	maxProblems = 32
)
