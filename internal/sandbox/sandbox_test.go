package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
)

// The test binary is also the program the tests run inside the sandbox: started with
// helperEnv set, it does what its arguments say and exits, before any test runs.
const helperEnv = "CAPGATE_SANDBOX_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helper runs one probe from inside the sandbox and prints what it found.
func helper(args []string) int {
	switch args[0] {
	case "dial": // dial ADDR: connect to a TCP address of the host
		c, err := net.DialTimeout("tcp", args[1], 2*time.Second)
		if err != nil {
			fmt.Println("refused:", err)
			return 0
		}
		c.Close()
		fmt.Println("connected")
	case "dialunix": // dialunix PATH-OR-@NAME
		c, err := net.DialTimeout("unix", args[1], 2*time.Second)
		if err != nil {
			fmt.Println("refused:", err)
			return 0
		}
		c.Close()
		fmt.Println("connected")
	case "read": // read PATH
		b, err := os.ReadFile(args[1])
		if err != nil {
			fmt.Println("unreadable:", errors.Is(err, os.ErrNotExist))
			return 0
		}
		fmt.Printf("read %d bytes: %s\n", len(b), b)
	case "write": // write PATH
		if err := os.WriteFile(args[1], []byte("x"), 0o644); err != nil {
			fmt.Println("unwritable")
			return 0
		}
		fmt.Println("written")
	case "env":
		fmt.Println(strings.Join(os.Environ(), "\n"))
	case "fd": // fd N: write to an inherited descriptor
		n, _ := strconv.Atoi(args[1])
		f := os.NewFile(uintptr(n), "fd")
		if _, err := f.WriteString("through the descriptor"); err != nil {
			fmt.Println("no descriptor")
		}
	default:
		return confineHelper(args)
	}
	return 0
}

// run runs spec in s and returns its standard output, failing the test if it cannot start.
func run(t *testing.T, s *sandbox.Sandbox, spec sandbox.Spec) string {
	t.Helper()
	cmd, err := s.Command(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v (stderr: %s)", spec.Args, err, errOut.String())
	}
	return out.String()
}

// self is a spec that runs the test binary as the helper, bound read-only through an open
// descriptor.
func self(t *testing.T, args ...string) sandbox.Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return sandbox.Spec{Program: "/run/helper", ProgramFD: f, Args: append([]string{"helper"}, args...), Dir: "/", Env: []string{helperEnv + "=1"}}
}

func shell(script string) sandbox.Spec {
	return sandbox.Spec{Program: "/bin/sh", Args: []string{"sh", "-c", script}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]sandbox.Mode{"": sandbox.ModeOn, "on": sandbox.ModeOn, "off-unsafe": sandbox.ModeOffUnsafe} {
		if got, err := sandbox.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"off", "OFF-UNSAFE", "On", "none", "false", "0"} {
		if _, err := sandbox.ParseMode(in); err == nil {
			t.Errorf("ParseMode(%q) accepted", in)
		}
	}
}

// The host's files outside what a spec binds are not there at all: capgate's data folder and
// keys, the host's secrets in /etc, other users' homes.
func TestFilesOutsideTheSpecAreInvisible(t *testing.T) {
	s := sandboxtest.Open(t)
	data := t.TempDir()
	key := filepath.Join(data, "capgate.key")
	if err := os.WriteFile(key, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{key, "/etc/shadow", "/etc/ssh/ssh_host_ed25519_key", "/root/.bash_history"} {
		if got := run(t, s, self(t, "read", p)); !strings.HasPrefix(got, "unreadable") {
			t.Errorf("%s: %s", p, got)
		}
	}
	// And the system's programs run.
	if got := run(t, s, shell("echo hello | tr a-z A-Z")); got != "HELLO\n" {
		t.Errorf("a pipeline of system programs: %q", got)
	}
	if got := run(t, s, shell("awk 'BEGIN{print 6*7}'")); got != "42\n" {
		t.Errorf("awk through /etc/alternatives: %q", got)
	}
}

// Only Writable folders are written; ReadOnly ones and the system are read-only; a Hidden
// path inside a bound folder is not there.
func TestWritableReadOnlyHidden(t *testing.T) {
	s := sandboxtest.Open(t)
	ws, ro := t.TempDir(), t.TempDir()
	data := filepath.Join(ws, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "capgate.key"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "apps.key"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "in"), []byte("ro content"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := func(args ...string) sandbox.Spec {
		sp := self(t, args...)
		sp.Writable, sp.ReadOnly, sp.Hidden = []string{ws}, []string{ro}, []string{data, filepath.Join(ws, "apps.key"), "/nonexistent/x"}
		sp.Dir = ws
		return sp
	}
	if got := run(t, s, spec("write", filepath.Join(ws, "out"))); got != "written\n" {
		t.Errorf("the writable folder: %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out")); err != nil || string(b) != "x" {
		t.Errorf("the host does not see the write: %q %v", b, err)
	}
	for _, p := range []string{filepath.Join(ro, "out"), "/usr/out", "/etc/out", filepath.Join(data, "out"), "/out"} {
		if got := run(t, s, spec("write", p)); got != "unwritable\n" {
			t.Errorf("%s: %s", p, got)
		}
	}
	if got := run(t, s, spec("read", filepath.Join(ro, "in"))); !strings.Contains(got, "ro content") {
		t.Errorf("the read-only folder: %s", got)
	}
	for _, p := range []string{filepath.Join(data, "capgate.key"), filepath.Join(ws, "apps.key")} {
		if got := run(t, s, spec("read", p)); strings.Contains(got, "secret") {
			t.Errorf("hidden %s is readable: %s", p, got)
		}
	}
}

// No network: neither the host's loopback, nor its addresses, nor its unix sockets, abstract
// ones included.
func TestNoNetwork(t *testing.T) {
	s := sandboxtest.Open(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if got := run(t, s, self(t, "dial", ln.Addr().String())); !strings.HasPrefix(got, "refused") {
		t.Errorf("the host's loopback: %s", got)
	}
	abs := "@capgate-sandbox-test-" + strconv.Itoa(os.Getpid())
	uln, err := net.Listen("unix", abs)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	if got := run(t, s, self(t, "dialunix", abs)); !strings.HasPrefix(got, "refused") {
		t.Errorf("an abstract unix socket of the host: %s", got)
	}
	// Without the sandbox, the same probes connect: the test can fail.
	off, _ := sandbox.Open(context.Background(), sandbox.ModeOffUnsafe)
	if got := run(t, off, self(t, "dial", ln.Addr().String())); got != "connected\n" {
		t.Errorf("unconfined, the probe does not connect: %s", got)
	}
}

// Every capability is dropped, even when capgate runs as root, and no user namespace can be
// made inside (where capabilities would come back).
func TestNoPrivileges(t *testing.T) {
	s := sandboxtest.Open(t)
	got := run(t, s, shell("grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; unshare -U true 2>/dev/null && echo nested-userns; true"))
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if strings.HasPrefix(line, "Cap") && !strings.HasSuffix(line, "0000000000000000") {
			t.Errorf("a capability is left: %s", line)
		}
	}
	if strings.Contains(got, "nested-userns") {
		t.Error("a user namespace could be made inside the sandbox")
	}
}

// The program sees its own processes only, and the environment it was given only.
func TestOwnProcessesAndEnvironment(t *testing.T) {
	s := sandboxtest.Open(t)
	got := run(t, s, shell("ls /proc | grep -c '^[0-9]'"))
	if n, _ := strconv.Atoi(strings.TrimSpace(got)); n == 0 || n > 4 {
		t.Errorf("the sandbox sees %s processes", strings.TrimSpace(got))
	}
	t.Setenv("CAPGATE_CLIENT_KEY", "cgk_secret")
	sp := self(t, "env")
	sp.Env = append(sp.Env, "LANG=C.UTF-8")
	env := run(t, s, sp)
	if strings.Contains(env, "cgk_secret") || !strings.Contains(env, "LANG=C.UTF-8") {
		t.Errorf("environment: %q", env)
	}
}

// Descriptors the caller passes reach the program, after the one of the program's own file.
func TestExtraFiles(t *testing.T) {
	s := sandboxtest.Open(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sp := self(t, "fd", "3")
	sp.ExtraFiles = []*os.File{w}
	run(t, s, sp)
	w.Close()
	b := make([]byte, 100)
	n, _ := r.Read(b)
	if string(b[:n]) != "through the descriptor" {
		t.Errorf("fd 3: %q", b[:n])
	}
}

// Whatever the program starts dies with it: when it exits (a daemon that left its session
// with setsid included), and when bwrap is killed.
func TestProcessTreeDiesWithTheProgram(t *testing.T) {
	s := sandboxtest.Open(t)
	marker := fmt.Sprintf("45.%d", os.Getpid()) // sleep's argument names the test's processes
	run(t, s, shell("setsid -f sleep "+marker+"; echo started"))
	waitGone(t, marker)

	cmd, err := s.Command(shell("sleep " + marker + " & sleep " + marker))
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(sleepers(marker)) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(sleepers(marker)); n < 2 {
		t.Fatalf("%d sleepers started", n)
	}
	_ = cmd.Process.Kill() // bwrap itself, not its group
	_ = cmd.Wait()
	waitGone(t, marker)
}

// sleepers returns the pids of the host's processes running sleep with marker.
func sleepers(marker string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == "sleep\x00"+marker+"\x00" {
			st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if !strings.Contains(string(st), ") Z ") {
				pids = append(pids, e.Name())
			}
		}
	}
	return pids
}

func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if len(sleepers(marker)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("processes outlived the sandbox: %v", sleepers(marker))
	for _, p := range sleepers(marker) {
		if n, err := strconv.Atoi(p); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
}

// Off, programs run directly: the same spec reaches what the sandbox hides.
func TestOffUnsafeConfinesNothing(t *testing.T) {
	off, err := sandbox.Open(context.Background(), sandbox.ModeOffUnsafe)
	if err != nil || off.Enforcing() {
		t.Fatalf("off-unsafe: %v enforcing=%v", err, off.Enforcing())
	}
	data := t.TempDir()
	key := filepath.Join(data, "capgate.key")
	if err := os.WriteFile(key, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	sp := sandbox.Spec{Program: exe, Args: []string{"helper", "read", key}, Dir: "/", Env: []string{helperEnv + "=1"}}
	if got := run(t, off, sp); !strings.Contains(got, "secret") {
		t.Errorf("unconfined read: %s", got)
	}
}

func TestSpecChecked(t *testing.T) {
	off, _ := sandbox.Open(context.Background(), sandbox.ModeOffUnsafe)
	ok := sandbox.Spec{Program: "/bin/true", Args: []string{"true"}, Dir: "/"}
	for name, mutate := range map[string]func(*sandbox.Spec){
		"Program":  func(s *sandbox.Spec) { s.Program = "true" },
		"Args":     func(s *sandbox.Spec) { s.Args = nil },
		"Dir":      func(s *sandbox.Spec) { s.Dir = "tmp" },
		"Writable": func(s *sandbox.Spec) { s.Writable = []string{"/"} },
		"ReadOnly": func(s *sandbox.Spec) { s.ReadOnly = []string{"/usr/../etc"} },
		"Hidden":   func(s *sandbox.Spec) { s.Hidden = []string{"rel"} },
		"Args[1]":  func(s *sandbox.Spec) { s.Args = []string{"true", "a\x00b"} },
	} {
		sp := ok
		mutate(&sp)
		if _, err := off.Command(sp); err == nil || !strings.Contains(err.Error(), strings.SplitN(name, "[", 2)[0]) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := off.Command(ok); err != nil {
		t.Error(err)
	}
}
