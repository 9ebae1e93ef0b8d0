package sandbox

import (
	"errors"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// The seccomp filter every sandboxed program runs under. The init installs it (on every
// thread, before it executes the program, which inherits it) rather than bwrap's --seccomp:
// bwrap reads a filter from a descriptor per start, and a descriptor exec.Cmd hands a child
// stays open in capgate until someone closes it, which the callers of Command, who start the
// command, would all have to do. The init is the first thing that runs in the sandbox, so the
// program sees the same filter either way.
//
// Everything not named is allowed: the filter takes away what a program on someone's behalf
// never needs and what sandbox escapes are made of, and leaves the rest to the namespaces,
// the dropped capabilities and Landlock.

// deniedCalls fail with EPERM.
var deniedCalls = []string{
	// Another process's memory and descriptors.
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	// Mounts and roots (bwrap made the sandbox's; the program changes none).
	"mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "open_tree_attr",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	// Other namespaces.
	"setns",
	// Kernel modules, the kernel's keyrings, BPF, performance counters, kexec and reboot.
	"init_module", "finit_module", "delete_module",
	"add_key", "request_key", "keyctl",
	"bpf", "perf_event_open",
	"kexec_load", "kexec_file_load", "reboot",
	// What a container escape has used, and no program needs here: opening a file by its
	// handle (outside the mount namespace), userfaultfd's races, the system's swap, process
	// accounting, quotas, the kernel's log, I/O ports, terminal hangups.
	"open_by_handle_at", "userfaultfd", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
	"syslog", "iopl", "ioperm", "vhangup", "uselib", "lookup_dcookie", "nfsservctl",
}

// enosysCalls fail with ENOSYS, as if the kernel lacked them, so that libraries fall back:
// clone3 passes its flags in memory, where a filter cannot read them (glibc falls back to
// clone, whose flags it can), and io_uring runs operations (sockets of any family among them)
// where seccomp does not see them.
var enosysCalls = []string{"clone3", "io_uring_setup", "io_uring_enter", "io_uring_register"}

// namespaceFlags are the flags of unshare and clone that make a namespace.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// socketFamilies are the families a program may open sockets of: unix sockets (only those
// capgate hands in are reachable, see the package doc), and IPv4 and IPv6 (only the sandbox's
// own loopback, and through it the egress proxy, is reachable). Netlink, packet sockets,
// Bluetooth, vsock, ALG and the rest fail with EAFNOSUPPORT, as on a kernel without them.
var socketFamilies = []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}

// seccompPolicy is the filter for this machine's architecture.
func seccompPolicy() (*seccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	if info.ID != arch.X86_64.ID && info.ID != arch.AARCH64.ID {
		// Where clone's flags are not its first argument (s390x) the conditions below would
		// read the wrong one: refuse rather than filter wrongly.
		return nil, errors.New("the filter is written for amd64 and arm64 only")
	}
	known := func(names []string) []string {
		var out []string
		for _, n := range names {
			if _, ok := info.SyscallNames[n]; ok {
				out = append(out, n)
			}
		}
		return out
	}
	var otherFamily seccomp.ArgumentConditions
	for _, f := range socketFamilies {
		otherFamily = append(otherFamily, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: f})
	}
	return &seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{
				Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM),
				Names:  known(deniedCalls),
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "unshare", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags | unix.CLONE_NEWTIME}}},
					// clone's low byte is the exit signal, which CLONE_NEWTIME's bit shares.
					{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags}}},
				},
			},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: known(enosysCalls)},
			{
				Action: seccomp.ActionErrno | seccomp.Action(unix.EAFNOSUPPORT),
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "socket", Conditions: otherFamily},
					{Name: "socketpair", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
				},
			},
		},
	}, nil
}

// loadSeccomp installs the filter on every thread of this process.
func loadSeccomp() error {
	p, err := compiledPolicy()
	if err != nil {
		return err
	}
	return seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: *p})
}

var compiledPolicy = sync.OnceValues(seccompPolicy)
