package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The sandbox's init is capgate's own executable, run by bwrap inside the sandbox in place of
// the program: it applies what only a process inside can apply (it joins the sandbox's
// cgroups, sets the resource limits, restricts the file system with Landlock and installs the
// seccomp filter), then executes the program, so that no capgate code stays in the program's
// process. With Spec.ProxySocket it stays, as the parent of the program, forwarding TCP
// connections from the sandbox's loopback to that socket.
//
// bwrap binds the executable read-only at initPath from a descriptor Command opens once
// (/proc/self/exe), so that the init run is the binary running, even when an upgrade has
// replaced it on disk. The init recognises itself by its argv[0] (initName) and its
// configuration in argv[1]; the program's argument vector follows.

const (
	// initName is the init's argv[0]: what MaybeRunInit looks for.
	initName = "capgate-sandbox-init"
	// initPath is where the sandbox shows capgate's executable.
	initPath = "/run/capgate/init"
	// cgroupDir holds the cgroup.procs files of the sandbox's cgroups (cgroupPath), for the
	// init to join them. Landlock leaves it out of what the program may open.
	cgroupDir = "/run/capgate/cgroup"
	// proxyDir holds the proxy's socket inside the sandbox, at proxyDir/socket.
	proxyDir = "/run/capgate/proxy"
	// initVersion is the configuration's format; an init of another version refuses it.
	initVersion = 2
)

// cgroupPath is where the sandbox shows the cgroup.procs file of its i-th cgroup.
func cgroupPath(i int) string { return cgroupDir + "/" + strconv.Itoa(i) + ".procs" }

// initConfig is what Command tells the init. Paths are the sandbox's.
type initConfig struct {
	Version int `json:"capgate_sandbox_init"`
	// Program is the file to execute; the program's argument vector is the init's own after
	// argv[1].
	Program string `json:"program"`
	// KeepFDs is how many descriptors from 3 the program receives (Spec.ExtraFiles and, with
	// RunFD, the program's own file); every other descriptor is closed at its execution.
	KeepFDs int `json:"keep_fds"`
	// Landlock's rules: ReadOnly read and execute, ReadWrite everything below but devices,
	// Devices read and write with device ioctls (the sandbox's /dev), Sockets connect to the
	// unix sockets in them.
	ReadOnly  []string `json:"ro,omitempty"`
	ReadWrite []string `json:"rw,omitempty"`
	Devices   []string `json:"dev,omitempty"`
	Sockets   []string `json:"unix,omitempty"`
	// Listable are folders whose entries, and those of every folder below, may be listed,
	// nothing more: "/", so that ls / works in the sandbox as bwrap shows it.
	Listable []string `json:"list,omitempty"`
	// Limits are set on the program with setrlimit; Processes and MemoryBytes through the
	// cgroups as well.
	Limits Limits `json:"limits"`
	// NPROC sets RLIMIT_NPROC to Limits.Processes: where no cgroup is usable and the kernel
	// honours the rlimit (capgate does not run as root).
	NPROC bool `json:"nproc,omitempty"`
	// Cgroups are the cgroup.procs files to join before anything else (on cgroup v1, one
	// per hierarchy).
	Cgroups []string `json:"cgroups,omitempty"`
	// Proxy is the unix socket to forward 127.0.0.1:ProxyPort to; "" for none.
	Proxy string `json:"proxy,omitempty"`
	// Tunnels are the listeners carried to Proxy as CONNECTs (see tunnel.go), each with
	// TunnelAuth as its Proxy-Authorization.
	Tunnels    []tunnelConf `json:"tunnels,omitempty"`
	TunnelAuth string       `json:"tunnel_auth,omitempty"`
	// BindCaps says bwrap left the init CAP_NET_BIND_SERVICE (and CAP_SETPCAP), for a
	// tunnel's port below 1024: the init drops every capability once it listens.
	BindCaps bool `json:"bind_caps,omitempty"`
	// Child marks the init's second stage, started by a forwarding init to execute the
	// program: the restrictions are inherited already, only the rlimits are set.
	Child bool `json:"child,omitempty"`
}

func (c initConfig) encode() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	if len(b) > MaxInitConfigBytes {
		return "", fmt.Errorf("sandbox: the paths of the spec take more than %d bytes", MaxInitConfigBytes)
	}
	return string(b), nil
}

// MaybeRunInit runs the sandbox's init when this process is one, and never returns then; in
// every other process it returns at once. It is internal to capgate: the package calls it
// from its own init function, so every binary that links this package (capgate, and every
// test binary that starts sandboxed programs) is an init when bwrap starts it as one, before
// any other package's init of that binary that does not come before this package's. A main
// (or TestMain) may call it first as well; it is idempotent.
//
// Nothing here widens what the process may do: a process started as the init by someone
// else only restricts itself before it executes the program named.
func MaybeRunInit() {
	if len(os.Args) < 3 || (os.Args[0] != initName && os.Args[0] != initPath) || !strings.HasPrefix(os.Args[1], `{"capgate_sandbox_init":`) {
		return
	}
	var c initConfig
	dec := json.NewDecoder(strings.NewReader(os.Args[1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.Version != initVersion || c.Program == "" {
		initFail("its configuration is not one this capgate writes")
	}
	runInit(c, os.Args[2:])
}

func init() { MaybeRunInit() }

// initFail ends the init with bwrap's own failure code, saying why on standard error: the
// program never runs unconfined.
func initFail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "capgate sandbox: "+format+"\n", args...)
	os.Exit(initFailed)
}

// initFailed is the init's exit status when it cannot confine the program (126: found but
// could not be executed, as a shell says).
const initFailed = 126
