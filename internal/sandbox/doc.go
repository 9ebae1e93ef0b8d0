// Package sandbox runs a program on the person's behalf in a sandbox of its own, never with
// capgate's rights: the terminal's commands and the python app's scripts (and, later,
// provider processes and tool servers). It is built on Debian's bubblewrap (bwrap), which
// capgate starts for each program with:
//
//   - new user, pid, network, ipc, uts and cgroup namespaces: the program sees no process of
//     the host, has no network but a loopback of its own (no address of the host, no abstract
//     unix socket of the host's), and cannot make user namespaces of its own;
//   - every capability dropped, even when capgate runs as root;
//   - a new session, so it cannot push input into a terminal it inherited (TIOCSTI);
//   - --die-with-parent, and bwrap as the pid namespace's init: when the program exits, is
//     killed at its timeout, or capgate (or the thread that started it) dies, everything it
//     started dies with it, including what left its process group with setsid;
//   - a file system of its own: the system's programs and libraries read-only (/usr and the
//     /bin, /lib... links or folders beside it, and a short list of /etc files that programs
//     read to run: the loader's cache, alternatives, passwd and group, time zone, certificate
//     folders), a private /proc, a minimal /dev, an empty /tmp held in memory and bounded in
//     size, the folders Spec.Writable names read-write and Spec.ReadOnly read-only, each at
//     its own path, and nothing else. Spec.Hidden names paths that stay invisible even when
//     one of those folders holds them: capgate hides its data folder, its keys and its
//     configuration this way.
//
// Inside, as a second layer, capgate's own executable runs first as the sandbox's init
// (init.go; MaybeRunInit, which this package's init function calls): it joins the sandbox's
// cgroups (cgroup_linux.go: the process and memory budgets of the whole sandbox), sets
// Spec.Limits on itself, restricts the file system with Landlock to the same set bwrap
// shows (best effort, to the ABI the kernel offers: LandlockABI), installs a seccomp filter
// (seccomp_linux.go says what it refuses and why), closes every descriptor the program is not
// given, and executes the program, so that no capgate code stays in its process. With
// Spec.ProxySocket it stays instead, as the program's parent, forwarding the sandbox's
// 127.0.0.1:ProxyPort to the egress proxy's unix socket (forward.go), and, for Spec.Tunnels,
// listening on the addresses the sandbox's /etc/hosts gives each declared name and carrying
// each connection to the proxy as a CONNECT (tunnel.go), so that a program that ignores
// HTTP_PROXY reaches its declared names too. A tunnel to a port below 1024 needs
// CAP_NET_BIND_SERVICE in the user namespace that owns the network namespace: bwrap then
// runs without --disable-userns (whose nested user namespace the capability would not reach
// from), the init holds that capability and CAP_SETPCAP until it listens and then drops
// every capability of every thread, bounding set included, and the seccomp filter alone
// keeps the program from making user namespaces.
//
// Unix sockets: a program reaches only those capgate hands in. A pathname socket is reached
// through the file system, and the sandbox sees only the system's view and the folders the
// spec binds (a provider's socket folder, the proxy's socket); an abstract socket belongs to a
// network namespace, and the sandbox has its own (and Landlock, from ABI 6, scopes abstract
// sockets to the sandbox as well); any other is a descriptor capgate passed. So the filter
// does not tell unix sockets apart: it refuses every family but unix, IPv4 and IPv6, and a
// program that listens on a unix socket in its folder, as a go-plugin provider does, works.
//
// Filesystem intents (intents.go) are bound at their paths from the app's own folder in
// capgate's data folder, DATA/sandbox/<app id>, made on demand.
//
// What cannot be enforced is refused: Open fails when bwrap is missing or cannot make its
// namespaces here (no user namespaces, a seccomp policy that forbids them), or when the init
// cannot confine a program, and capgate then does not run the apps that need it; Command
// refuses Limits.Processes where nothing can hold it (ProcessLimit says). Limits.MemoryBytes
// is held per process everywhere, and for the whole sandbox where a memory cgroup can be made
// (MemoryLimit says which). The opt-out,
// ModeOffUnsafe (capgate serve --sandbox=off-unsafe), runs programs directly with capgate's
// own user, files and network, and says so.
//
// Known gaps: the sandbox's pid 1 is bwrap's own, whose command line (/proc/1/cmdline) shows
// the host paths of the spec's binds; a program under the proxy forwarder may read capgate's
// executable (the init's second stage runs it); where no memory cgroup can be made (cgroup v2
// without the memory controller delegated to capgate's cgroup, no v1 memory hierarchy), a
// process's memory budget is per process only, and a sandbox of N processes may use N times
// it (MemoryLimit, and capgate serve at start, say so); the init's forwarder, with
// Spec.ProxySocket, counts against the sandbox's memory like the program.
package sandbox
