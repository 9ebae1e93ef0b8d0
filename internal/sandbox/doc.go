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
// What cannot be enforced is refused: Open fails when bwrap is missing or cannot make its
// namespaces here (no user namespaces, a seccomp policy that forbids them), and capgate then
// does not run the apps that need it. The opt-out, ModeOffUnsafe (capgate serve
// --sandbox=off-unsafe), runs programs directly with capgate's own user, files and network,
// and says so.
//
// Not yet here: Landlock and a seccomp filter inside the sandbox, and an egress proxy as its
// only network (the egress issue builds them on this package).
package sandbox
