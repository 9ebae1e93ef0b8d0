package sandbox

import "time"

// Every size, count and time limit of the sandbox is here, each with its reason.

const (
	// TmpBytes bounds the sandbox's /tmp, which lives in memory: enough for the scratch files
	// of compilers, archivers and sort, not enough to exhaust the host's memory by filling it.
	TmpBytes = 256 << 20

	// ProbeTimeout bounds the check Open runs once (bwrap starting a program that does
	// nothing): a bwrap that hangs there is as good as missing.
	ProbeTimeout = 10 * time.Second

	// MaxPaths bounds the folders one Spec may bind or hide: each is one mount the kernel
	// makes per start, and no caller needs more than a few.
	MaxPaths = 64

	// maxProbeOutput is how much of bwrap's complaint Open quotes when the probe fails.
	maxProbeOutput = 512
)
