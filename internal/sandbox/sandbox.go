package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Mode says whether programs run sandboxed.
type Mode string

const (
	// ModeOn runs every program in a bubblewrap sandbox, and refuses to run any when the
	// sandbox cannot be made. It is the default (the zero Mode reads as it).
	ModeOn Mode = "on"
	// ModeOffUnsafe runs programs directly, with capgate's own user, files and network.
	ModeOffUnsafe Mode = "off-unsafe"
)

// ParseMode reads a mode as capgate serve --sandbox takes it: "on" (or "") or "off-unsafe".
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeOn:
		return ModeOn, nil
	case ModeOffUnsafe:
		return ModeOffUnsafe, nil
	}
	return "", errors.New(`sandbox: the mode must be "on" or "off-unsafe"`)
}

// String returns the mode's name; the zero Mode is "on".
func (m Mode) String() string {
	if m == "" {
		return string(ModeOn)
	}
	return string(m)
}

// ErrUnavailable is what Open wraps when the sandbox cannot be made on this machine: bwrap is
// not installed, or cannot make its namespaces here. The wrapped text says which, and how to
// fix it.
var ErrUnavailable = errors.New("sandbox: unavailable")

// Sandbox starts programs confined. It is safe for concurrent use; its zero value is not
// usable (use Open).
type Sandbox struct {
	bwrap    string   // the bwrap executable; "" when not enforcing
	system   []string // bwrap's arguments for the system's read-only view, made once
	systemRO []string // the paths that view binds, for Landlock
}

// bwrapPaths are where bwrap is looked for, in order: Debian's package first, so that a
// bwrap earlier on capgate's PATH is not preferred to the system's.
var bwrapPaths = []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap"}

// Open returns a sandbox in mode. With ModeOn it finds bwrap and checks once that it can make
// every namespace the sandbox uses, failing with ErrUnavailable (saying why and how to fix
// it) when it cannot; with ModeOffUnsafe it returns a sandbox that confines nothing.
func Open(ctx context.Context, mode Mode) (*Sandbox, error) {
	switch mode {
	case ModeOffUnsafe:
		return &Sandbox{}, nil
	case "", ModeOn:
	default:
		return nil, fmt.Errorf("sandbox: unknown mode %q", string(mode))
	}
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%w: the sandbox needs Linux namespaces (run with --sandbox=off-unsafe to run programs unconfined)", ErrUnavailable)
	}
	bin := ""
	for _, p := range bwrapPaths {
		if _, err := exec.LookPath(p); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			return nil, fmt.Errorf("%w: bubblewrap is not installed (Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), or run with --sandbox=off-unsafe to run programs unconfined", ErrUnavailable)
		}
		bin = p
	}
	s := &Sandbox{bwrap: bin}
	s.system, s.systemRO = systemView()
	if err := s.probe(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Enforcing reports whether programs run confined (false for ModeOffUnsafe).
func (s *Sandbox) Enforcing() bool { return s.bwrap != "" }

// probe runs a program that does nothing in a sandbox with every namespace.
func (s *Sandbox) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	truePath := ""
	for _, p := range []string{"/usr/bin/true", "/bin/true"} {
		if _, err := exec.LookPath(p); err == nil {
			truePath = p
			break
		}
	}
	if truePath == "" {
		return fmt.Errorf("%w: no /usr/bin/true to check bubblewrap with", ErrUnavailable)
	}
	cmd, err := s.Command(Spec{Program: truePath, Args: []string{"true"}, Dir: "/"})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %s cannot start: %v", ErrUnavailable, s.bwrap, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%w: %s did not start a program within %s", ErrUnavailable, s.bwrap, ProbeTimeout)
	}
	if err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > maxProbeOutput {
			msg = msg[:maxProbeOutput]
		}
		return fmt.Errorf("%w: %s cannot start a confined program here (%s): user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces) or forbidden by AppArmor; run with --sandbox=off-unsafe to run programs unconfined", ErrUnavailable, s.bwrap, msg)
	}
	return nil
}

// Spec is one program to run in the sandbox. Every path is absolute and, except for Binds,
// the same inside the sandbox as on the host.
type Spec struct {
	// Program is the program's path, which the sandbox must see: under the system's view or
	// a folder of Writable or ReadOnly. ProgramFD, when set, is used instead (see there).
	Program string
	// ProgramFD, when not nil, is an open file of the program to run (an O_PATH descriptor
	// does): it is bound read-only at Program inside the sandbox, so that the program run is
	// the file opened, even when its path on the host now holds another. Command passes it
	// to bwrap as one of the command's ExtraFiles, after those the caller set.
	ProgramFD *os.File
	// RunFD runs ProgramFD through the program's own descriptor of it (/proc/self/fd/N)
	// instead of binding it at Program: for a file bwrap cannot bind, such as a sealed memory
	// file. Program is then only the name the program is given.
	RunFD bool
	// Args is the argument vector, Args[0] included.
	Args []string
	// Dir is the working folder; it must be visible in the sandbox.
	Dir string
	// Env is the program's whole environment; nothing of capgate's is added (no HOME, no
	// PATH), except the proxy's variables with ProxySocket.
	Env []string
	// Writable are folders bound read-write at their own paths.
	Writable []string
	// ReadOnly are files or folders bound read-only at their own paths.
	ReadOnly []string
	// Binds are host folders shown at other paths, such as a capability's filesystem intents
	// (see IntentBinds), after Writable and ReadOnly.
	Binds []Bind
	// Hidden are files or folders never visible in the sandbox, even inside a folder bound
	// above or in the system's view: a folder is covered by an empty one, a file by an empty
	// file. A path that does not exist is skipped.
	Hidden []string
	// ExtraFiles are passed to the program as descriptors 3, 4, ... as exec.Cmd.ExtraFiles
	// does; bwrap and the init pass them through. No other descriptor reaches the program.
	// The command's ExtraFiles hold these, then files of Command's own (ProgramFD, the
	// init's executable, the Binds' folders): a caller may close them all once the command
	// has started.
	ExtraFiles []*os.File
	// Limits bound what the program may use; the zero Limits sets none.
	Limits Limits
	// ProxySocket, when not "", is the path of a unix socket of the host (the egress
	// proxy's) that the program reaches as its HTTP proxy: the init listens on the sandbox's
	// own loopback, 127.0.0.1:ProxyPort, and forwards each connection to the socket, bound
	// into the sandbox where only the init dials it; HTTP_PROXY and HTTPS_PROXY (and
	// http_proxy, https_proxy) are set to it in the program's environment, replacing what
	// Env says of them. The program runs as the init's child then, not in its place; a
	// signal sent to the sandbox's process reaches it. Without ProxySocket the program has no
	// network but its loopback.
	ProxySocket string
	// ProxyUser, with ProxySocket, is put in the proxy variables' URL as its user
	// information (http://USER:PASSWORD@127.0.0.1:ProxyPort), which HTTP clients send the
	// proxy as Proxy-Authorization: the egress proxy's credential for this sandbox. Nil puts
	// none. The forwarder carries it as any other byte; it never reads it.
	ProxyUser *url.Userinfo
	// Tunnels, with ProxySocket and ProxyUser, are destinations the program reaches by name
	// even when it ignores the proxy variables: the sandbox's /etc/hosts maps each Host to
	// an address of its own loopback (in TunnelNet), where the init listens on each Port and
	// carries every connection to the proxy as a CONNECT to Host:Port (see tunnel.go).
	// Without Tunnels the sandbox has no /etc/hosts but localhost's. At most MaxTunnels.
	Tunnels []Tunnel
}

// Bind is a folder of the host shown in the sandbox at another path.
type Bind struct {
	// Path is where the program sees the folder: a clean absolute path other than /.
	Path string
	// Dir is the host's folder, open (os.Open of the folder, or an O_PATH descriptor): bwrap
	// binds the folder opened, so that no symbolic link on the way to it, made since it was
	// opened, can point the bind elsewhere. The caller closes it once the command has started.
	Dir *os.File
	// Write shows the folder read-write; else it is read-only.
	Write bool
}

// Limits are a sandbox's resource budget, set on the program before it runs, soft and hard
// alike. A zero field sets no limit of its kind (the sandbox's fixed bounds, such as the size
// of /tmp, stay); a negative one is refused.
type Limits struct {
	// MemoryBytes bounds each process's data memory (RLIMIT_DATA: its heap, private
	// mappings and thread stacks), and its address space to that plus AddressSlack
	// (RLIMIT_AS): an allocation past it fails (malloc returns NULL, Python raises
	// MemoryError, the Go runtime dies "out of memory"). It also bounds the memory of the
	// whole sandbox at once, swap included, where a memory cgroup can be made (see
	// cgroup_linux.go; MemoryLimit says): when the sandbox's processes together reach it,
	// the kernel kills one of them (SIGKILL), never a process outside the sandbox. Where
	// none can be made the sandbox runs with the per-process limits alone.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// CPUSeconds bounds each process's CPU time (RLIMIT_CPU): the kernel kills a process that
	// reaches it (SIGKILL).
	CPUSeconds int64 `json:"cpu_seconds,omitempty"`
	// Processes bounds the tasks, processes and threads alike, of the whole sandbox at once
	// (a cgroup's pids.max; see cgroup_linux.go): fork and clone past it fail with EAGAIN.
	// Where no cgroup can be made, and capgate runs as root so that RLIMIT_NPROC does not
	// bind, Command refuses a spec that sets it.
	Processes int64 `json:"processes,omitempty"`
	// OpenFiles bounds each process's descriptors (RLIMIT_NOFILE): an open past it fails
	// with EMFILE.
	OpenFiles int64 `json:"open_files,omitempty"`
}

// ProcessLimit says how the sandbox holds Limits.Processes on this machine, for capgate serve
// to report at start, and whether it can: "cgroup v1 pids controller (/sys/fs/cgroup/...)",
// "RLIMIT_NPROC", or, with false, why it cannot.
func (s *Sandbox) ProcessLimit() (string, bool) {
	if !s.Enforcing() {
		return "the sandbox is off", false
	}
	how, ok := cgroupHeld(pidsController)
	if !ok && os.Geteuid() != 0 {
		return "RLIMIT_NPROC (no cgroup: " + how + ")", true
	}
	return how, ok
}

// MemoryLimit says how a sandbox holds Limits.MemoryBytes on this machine, for capgate serve
// to report at start: for the whole sandbox, with true, "cgroup v1 memory controller
// (/sys/fs/cgroup/memory/...)"; else, with false, "per process only (...)" saying why no
// memory cgroup can be made: a sandbox of N processes may then use N times its budget. Per
// process (RLIMIT_DATA) it is held wherever the sandbox enforces.
func MemoryLimit() (string, bool) {
	how, ok := cgroupHeld(memoryController)
	if !ok {
		return "per process only (RLIMIT_DATA; no memory cgroup: " + how + ")", false
	}
	return how, true
}

// initExe is capgate's executable, opened once: the file every sandbox's init runs, even when
// an upgrade has replaced it on disk since.
var initExe = sync.OnceValues(func() (*os.File, error) { return os.Open("/proc/self/exe") })

// initFile returns a descriptor of initExe of the command's own: callers close the
// command's ExtraFiles once it has started (and one that does not leaves it to the garbage
// collector, as any *os.File), which must not close the one every command shares.
func initFile() (*os.File, error) {
	exe, err := initExe()
	if err != nil {
		return nil, err
	}
	fd, err := unix.FcntlInt(exe.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), initPath), nil
}

// Command returns the command that runs spec in the sandbox (bwrap and its arguments, or,
// when the sandbox does not enforce, the program itself in spec.Dir), for the caller to
// give its standard streams and process attributes and start. It checks the spec and fails
// naming the field at fault.
//
// Inside the sandbox bwrap runs capgate's own executable as the sandbox's init (see
// init.go), which confines itself and then executes the program. A spec with
// Limits.Processes or Limits.MemoryBytes gets a cgroup of its own (one per cgroup v1
// hierarchy), removed once the sandbox has ended.
func (s *Sandbox) Command(spec Spec) (*exec.Cmd, error) {
	if err := spec.check(); err != nil {
		return nil, err
	}
	if !s.Enforcing() {
		cmd := &exec.Cmd{Path: spec.Program, Args: spec.Args, Dir: spec.Dir, Env: spec.Env, ExtraFiles: spec.ExtraFiles}
		if spec.ProgramFD != nil {
			// The file opened, through the child's own descriptor of it.
			cmd.ExtraFiles = append(append([]*os.File(nil), spec.ExtraFiles...), spec.ProgramFD)
			cmd.Path = "/proc/self/fd/" + strconv.Itoa(3+len(spec.ExtraFiles))
		}
		return cmd, nil
	}
	exe, err := initFile()
	if err != nil {
		return nil, fmt.Errorf("sandbox: capgate's own executable, for the sandbox's init: %w", err)
	}
	conf := initConfig{
		Version:   initVersion,
		Program:   spec.Program,
		KeepFDs:   len(spec.ExtraFiles),
		ReadOnly:  append(append([]string(nil), s.systemRO...), "/proc"),
		ReadWrite: []string{"/tmp"},
		Devices:   []string{"/dev"},
		Listable:  []string{"/"},
		Limits:    spec.Limits,
	}
	args := []string{"bwrap",
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--hostname", "sandbox",
	}
	args = append(args, s.system...)
	args = append(args,
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", strconv.Itoa(TmpBytes), "--tmpfs", "/tmp",
	)
	for _, p := range spec.ReadOnly {
		args = append(args, "--ro-bind", p, p)
	}
	for _, p := range spec.Writable {
		args = append(args, "--bind", p, p)
	}
	conf.ReadOnly = append(conf.ReadOnly, spec.ReadOnly...)
	conf.ReadWrite = append(conf.ReadWrite, spec.Writable...)
	extra := append([]*os.File(nil), spec.ExtraFiles...)
	pass := func(f *os.File) string {
		extra = append(extra, f)
		return strconv.Itoa(2 + len(extra))
	}
	if spec.ProgramFD != nil {
		fd := pass(spec.ProgramFD)
		if spec.RunFD {
			conf.Program = "/proc/self/fd/" + fd
			conf.KeepFDs++
		} else {
			args = append(args, "--ro-bind-fd", fd, spec.Program)
			conf.ReadOnly = append(conf.ReadOnly, spec.Program)
		}
	}
	args = append(args, "--ro-bind-fd", pass(exe), initPath)
	for _, b := range spec.Binds {
		if b.Write {
			args = append(args, "--bind-fd", pass(b.Dir), b.Path)
			conf.ReadWrite = append(conf.ReadWrite, b.Path)
		} else {
			args = append(args, "--ro-bind-fd", pass(b.Dir), b.Path)
			conf.ReadOnly = append(conf.ReadOnly, b.Path)
		}
	}
	env := spec.Env
	if spec.ProxySocket != "" {
		sock := proxyDir + "/socket"
		args = append(args, "--ro-bind", spec.ProxySocket, sock)
		conf.Proxy = sock
		conf.Sockets = []string{proxyDir}
		conf.ReadOnly = append(conf.ReadOnly, initPath) // the init's second stage
		env = proxyEnv(env, spec.ProxyUser)
	}
	tunnels, hosts := planTunnels(spec.Tunnels)
	if len(tunnels) > 0 {
		conf.Tunnels, conf.TunnelAuth = tunnels, proxyAuthorization(spec.ProxyUser)
		for _, t := range spec.Tunnels {
			if t.Port < 1024 && !conf.BindCaps {
				// Listening on a port below 1024, even on the sandbox's own loopback, takes
				// CAP_NET_BIND_SERVICE in the user namespace that owns the network
				// namespace: the init holds it until it listens. --disable-userns would run
				// the init in a user namespace nested below that one, where the capability
				// does not reach the network; without it, the seccomp filter alone keeps the
				// program from making user namespaces (unshare, clone and setns refused,
				// clone3 unavailable).
				conf.BindCaps = true
				args = slices.DeleteFunc(args, func(a string) bool { return a == "--disable-userns" })
				args = append(args, "--cap-add", "CAP_NET_BIND_SERVICE", "--cap-add", "CAP_SETPCAP")
			}
		}
	}
	hostsFile, err := dataFile("capgate-sandbox-hosts", hosts)
	if err != nil {
		return nil, err
	}
	args = append(args, "--ro-bind-data", pass(hostsFile), "/etc/hosts")
	conf.ReadOnly = append(conf.ReadOnly, "/etc/hosts")
	if spec.Limits.Processes > 0 || spec.Limits.MemoryBytes > 0 {
		procs, err := sandboxCgroup(spec.Limits)
		if err != nil {
			return nil, fmt.Errorf("sandbox: Limits: cannot make the sandbox's cgroup: %w", err)
		}
		for i, p := range procs {
			args = append(args, "--bind", p, cgroupPath(i))
			conf.Cgroups = append(conf.Cgroups, cgroupPath(i))
		}
		if why, held := cgroupHeld(pidsController); spec.Limits.Processes > 0 && !held {
			if os.Geteuid() == 0 {
				return nil, fmt.Errorf("sandbox: Limits.Processes: cannot be held on this machine: capgate runs as root, where RLIMIT_NPROC does not bind, and no cgroup can be made (%s)", why)
			}
			conf.NPROC = true
		}
	}
	// Hidden last: a later mount covers what the binds above show.
	shown := append(append([]string(nil), spec.Writable...), spec.ReadOnly...)
	for _, b := range spec.Binds {
		shown = append(shown, b.Path)
	}
	for _, p := range spec.Hidden {
		fi, err := os.Stat(p)
		switch {
		case err != nil, !visible(p, shown):
			continue
		case fi.IsDir():
			args = append(args, "--tmpfs", p, "--remount-ro", p)
		default:
			args = append(args, "--ro-bind", "/dev/null", p)
		}
	}
	enc, err := conf.encode()
	if err != nil {
		return nil, err
	}
	// The sandbox's own root, and the folders bwrap made in it, are read-only too: the only
	// places a program writes are Writable, read-write Binds and the in-memory /tmp.
	// The program's argv[0] is the path it runs from, as bwrap gave it before the init.
	args = append(args, "--remount-ro", "/", "--chdir", spec.Dir, "--", initPath, enc, conf.Program)
	args = append(args, spec.Args[1:]...)
	return &exec.Cmd{Path: s.bwrap, Args: args, Env: env, ExtraFiles: extra}, nil
}

// proxyEnv returns env with the proxy's variables set to the init's forwarder, with user as
// the URL's user information when not nil.
func proxyEnv(env []string, user *url.Userinfo) []string {
	u := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ProxyPort), User: user}
	names := []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}
	out := make([]string, 0, len(env)+len(names))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	for _, n := range names {
		out = append(out, n+"="+u.String())
	}
	return out
}

// check reports the first field of the spec that is not usable.
func (spec Spec) check() error {
	switch {
	case !filepath.IsAbs(spec.Program) || strings.ContainsRune(spec.Program, 0):
		return errors.New("sandbox: Program: must be an absolute path")
	case len(spec.Args) == 0:
		return errors.New("sandbox: Args: must hold the program's name")
	case !filepath.IsAbs(spec.Dir) || strings.ContainsRune(spec.Dir, 0):
		return errors.New("sandbox: Dir: must be an absolute path")
	case len(spec.Writable)+len(spec.ReadOnly)+len(spec.Hidden)+len(spec.Binds) > MaxPaths:
		return fmt.Errorf("sandbox: more than %d paths to bind or hide", MaxPaths)
	case spec.Limits.MemoryBytes < 0, spec.Limits.CPUSeconds < 0, spec.Limits.Processes < 0, spec.Limits.OpenFiles < 0:
		return errors.New("sandbox: Limits: must not be negative")
	case spec.ProxySocket != "" && (!filepath.IsAbs(spec.ProxySocket) || strings.ContainsRune(spec.ProxySocket, 0)):
		return errors.New("sandbox: ProxySocket: must be an absolute path")
	case checkTunnels(spec) != nil:
		return checkTunnels(spec)
	}
	for i, b := range spec.Binds {
		switch {
		case !filepath.IsAbs(b.Path) || filepath.Clean(b.Path) != b.Path || b.Path == "/" || strings.ContainsRune(b.Path, 0):
			return fmt.Errorf("sandbox: Binds[%d].Path: must be a clean absolute path other than /", i)
		case b.Path == "/run/capgate" || strings.HasPrefix(b.Path, "/run/capgate/"):
			return fmt.Errorf("sandbox: Binds[%d].Path: /run/capgate is the sandbox's own", i)
		case b.Dir == nil:
			return fmt.Errorf("sandbox: Binds[%d].Dir: must be an open folder", i)
		}
	}
	for name, ps := range map[string][]string{"Writable": spec.Writable, "ReadOnly": spec.ReadOnly, "Hidden": spec.Hidden} {
		for i, p := range ps {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" || strings.ContainsRune(p, 0) {
				return fmt.Errorf("sandbox: %s[%d]: must be a clean absolute path other than /", name, i)
			}
		}
	}
	for i, a := range spec.Args {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("sandbox: Args[%d]: contains NUL", i)
		}
	}
	return nil
}

// Sees reports whether a program at p (absolute, its links resolved) can be run in a
// sandbox that binds shown: p lies in the system's view or under one of shown. A sandbox
// that does not enforce sees everything.
func (s *Sandbox) Sees(p string, shown []string) bool {
	return !s.Enforcing() || visible(p, shown)
}
