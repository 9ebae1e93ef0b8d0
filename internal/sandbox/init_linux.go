package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// runInit confines this process as c says and executes the program with argv, or, with a
// proxy, starts it as a child and forwards connections until it exits.
func runInit(c initConfig, argv []string) {
	if len(argv) == 0 {
		initFail("no program to run")
	}
	// Descriptors the program is not given are closed when it executes: bwrap passes every
	// descriptor on, including the ones it has used (the folders it bound).
	if err := unix.CloseRange(uint(3+c.KeepFDs), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		initFail("cannot close the descriptors the program is not given: %v", err)
	}
	if c.Child {
		setLimits(c)
		execProgram(c, argv)
	}
	// Joining first: everything after, the program and what it starts, is counted.
	for _, p := range c.Cgroups {
		if err := os.WriteFile(p, []byte("0\n"), 0); err != nil {
			initFail("cannot join the sandbox's cgroup: %v", err)
		}
	}
	if err := restrictFiles(c); err != nil {
		initFail("Landlock: %v", err)
	}
	if err := loadSeccomp(); err != nil {
		initFail("seccomp: %v", err)
	}
	if c.Proxy == "" {
		setLimits(c)
		execProgram(c, argv)
	}
	os.Exit(forwardAndRun(c, argv))
}

// setLimits sets the spec's limits on this process, soft and hard alike, so that neither the
// program nor a runtime that raises its soft limits (Go's raises RLIMIT_NOFILE) can pass
// them. A limit above the current hard one is left at the hard one.
func setLimits(c initConfig) {
	set := func(name string, res int, v int64) {
		if v <= 0 {
			return
		}
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(res, &cur); err != nil {
			initFail("getrlimit %s: %v", name, err)
		}
		n := min(uint64(v), cur.Max)
		// syscall's Setrlimit, not x/sys/unix's: it tells the Go runtime, which would
		// otherwise restore the soft RLIMIT_NOFILE it found at start when it executes.
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			initFail("setrlimit %s: %v", name, err)
		}
	}
	l := c.Limits
	set("RLIMIT_DATA", unix.RLIMIT_DATA, l.MemoryBytes)
	if l.MemoryBytes > 0 {
		set("RLIMIT_AS", unix.RLIMIT_AS, l.MemoryBytes+AddressSlack)
	}
	set("RLIMIT_CPU", unix.RLIMIT_CPU, l.CPUSeconds)
	set("RLIMIT_NOFILE", unix.RLIMIT_NOFILE, l.OpenFiles)
	if c.NPROC {
		set("RLIMIT_NPROC", unix.RLIMIT_NPROC, l.Processes)
	}
}

// execProgram replaces this process with the program; it returns only to fail.
func execProgram(c initConfig, argv []string) {
	err := syscall.Exec(c.Program, argv, os.Environ())
	initFail("cannot execute %s: %v", c.Program, err)
}

// forwardAndRun listens on the sandbox's loopback, starts the program as this process's
// child through the init's second stage (which sets the limits and executes it), forwards
// connections until the program exits, and returns the status to exit with.
func forwardAndRun(c initConfig, argv []string) int {
	ln, err := listenProxy()
	if err != nil {
		initFail("cannot listen for the proxy: %v", err)
	}
	slots := make(chan struct{}, MaxProxyConns)
	go carry(ln, slots, func() (net.Conn, error) { return net.Dial("unix", c.Proxy) })
	for _, t := range c.Tunnels {
		tl, err := net.Listen("tcp4", t.Listen)
		if err != nil {
			initFail("cannot listen for the tunnel to %s: %v", t.Target, err)
		}
		go carry(tl, slots, func() (net.Conn, error) { return connectThrough(c.Proxy, t.Target, c.TunnelAuth) })
	}
	if c.BindCaps {
		// The listeners exist: the capabilities that made them go, before anything else runs.
		if err := dropCapabilities(); err != nil {
			initFail("cannot drop the capabilities it listened with: %v", err)
		}
	}

	child := c
	child.Child, child.Proxy, child.Cgroups, child.Tunnels, child.TunnelAuth, child.BindCaps = true, "", nil, nil, "", false
	conf, err := child.encode()
	if err != nil {
		initFail("%v", err)
	}
	cmd := &exec.Cmd{
		Path:   initPath,
		Args:   append([]string{initName, conf}, argv...),
		Env:    os.Environ(),
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	}
	// The descriptors the program is given stay at their numbers.
	for fd := 3; fd < 3+c.KeepFDs; fd++ {
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(fd), "inherited"))
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	if err := cmd.Start(); err != nil {
		initFail("cannot start %s: %v", c.Program, err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		initFail("waiting for %s: %v", c.Program, err)
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		// Die of the same signal, so that whoever waits for the sandbox sees it.
		signal.Reset()
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// dropCapabilities empties every capability set of every thread of this process, its bounding
// set first, so that neither it nor anything it starts holds one again (an execution as the
// namespace's root would otherwise regain what the bounding set keeps). CAP_SETPCAP, which
// dropping from the bounding set needs, goes last.
func dropCapabilities() error {
	drop := func(c uintptr) error {
		if _, _, e := psx.Syscall3(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); e != 0 {
			return fmt.Errorf("PR_CAPBSET_DROP %d: %w", c, e)
		}
		return nil
	}
	for c := uintptr(0); c <= unix.CAP_LAST_CAP; c++ {
		if c == unix.CAP_SETPCAP {
			continue
		}
		if err := drop(c); err != nil {
			return err
		}
	}
	if err := drop(unix.CAP_SETPCAP); err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}
