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

const (
	// MaxInitConfigBytes bounds the sandbox init's configuration, which travels as one
	// argument of its command line: Linux refuses a single argument longer than 128 KiB
	// (MAX_ARG_STRLEN), and Command fails naming the spec rather than letting bwrap fail.
	MaxInitConfigBytes = 96 << 10

	// AddressSlack is what a process may map beyond Limits.MemoryBytes in address space
	// (RLIMIT_AS): the Go runtime reserves about 1.5 GiB of address space at start, none of
	// it memory yet, and an address-space limit below about 1 GiB kills every Go program
	// before main (measured here: "failed to reserve page summary memory"). The memory the
	// budget means is bounded by RLIMIT_DATA; the address space only stops a program that
	// maps far more (shared mappings, which RLIMIT_DATA does not count).
	AddressSlack = 4 << 30

	// ProxyPort is where the init listens inside a sandbox with Spec.ProxySocket, on the
	// sandbox's own loopback (no other process of the host can reach it): the port HTTP
	// proxies traditionally use, so that tools which guess find it too.
	ProxyPort = 3128

	// MaxProxyConns bounds the connections the init forwards at once: each costs two
	// descriptors in the init, and a program that opens more waits for one to close.
	MaxProxyConns = 256

	// CgroupStartGrace is how long a sandbox's cgroup may wait empty for its program to
	// start before the reaper removes it: Command makes the cgroup, and the caller starts
	// the command right after; a command started later than this fails to start (its init
	// cannot join a removed cgroup) rather than run without its process limit.
	CgroupStartGrace = time.Minute

	// CgroupReapInterval is how often the reaper looks for sandboxes that ended, to remove
	// their cgroups: often enough that cgroups do not pile up, seldom enough to cost
	// nothing (one read per live sandbox).
	CgroupReapInterval = 500 * time.Millisecond
)

const (
	// MaxTunnels bounds a Spec's Tunnels: each is a listener in the init and a line of the
	// sandbox's /etc/hosts, and a server declares a handful of destinations.
	MaxTunnels = 64

	// TunnelHandshakeTimeout bounds the proxy's answer to a tunnel's CONNECT: the proxy
	// resolves and dials within it, or the program's connection is closed.
	TunnelHandshakeTimeout = 30 * time.Second

	// maxTunnelAnswerBytes bounds the proxy's answer to a CONNECT the init reads.
	maxTunnelAnswerBytes = 16 << 10
)
