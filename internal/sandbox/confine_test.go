package sandbox_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
)

// probe runs one probe of confineHelper in s and returns its line.
func probe(t *testing.T, s *sandbox.Sandbox, args ...string) string {
	t.Helper()
	return strings.TrimSpace(run(t, s, self(t, args...)))
}

// The seccomp filter refuses what the sandbox's program never needs. Each refusal is the
// filter's own: unconfined, the same probe gets another answer (a socket of the refused
// families opens, a key is added), so the test can fail.
func TestSeccompRefuses(t *testing.T) {
	s := sandboxtest.Open(t)
	off, _ := sandbox.Open(context.Background(), sandbox.ModeOffUnsafe)
	af := func(n int) string { return strconv.Itoa(n) }
	for _, c := range []struct {
		name  string
		args  []string
		want  string
		unset string // what the probe answers unconfined, when it differs; "" to skip
	}{
		{"netlink socket", []string{"socket", af(unix.AF_NETLINK), af(unix.SOCK_RAW)}, "EAFNOSUPPORT", "ok"},
		{"packet socket", []string{"socket", af(unix.AF_PACKET), af(unix.SOCK_RAW)}, "EAFNOSUPPORT", ""},
		{"vsock", []string{"socket", af(unix.AF_VSOCK), af(unix.SOCK_STREAM)}, "EAFNOSUPPORT", ""},
		{"alg socket", []string{"socket", af(unix.AF_ALG), af(unix.SOCK_SEQPACKET)}, "EAFNOSUPPORT", ""},
		{"inet socketpair", []string{"socketpair", af(unix.AF_INET)}, "EAFNOSUPPORT", ""},
		{"ptrace of its own child", []string{"ptrace"}, "EPERM", "ok"},
		{"mount", []string{"mount"}, "EPERM", ""},
		{"unshare -n", []string{"unshare"}, "EPERM", ""},
		{"clone into a new network namespace", []string{"clone-newnet"}, "EPERM", ""},
		{"setns", []string{"setns"}, "EPERM", ""},
		{"add_key", []string{"add_key"}, "EPERM", "ok"},
		{"keyctl", []string{"keyctl"}, "EPERM", "ok"},
		{"bpf", []string{"bpf"}, "EPERM", ""},
		{"perf_event_open", []string{"perf_event_open"}, "EPERM", ""},
		{"finit_module", []string{"init_module"}, "EPERM", ""},
		{"io_uring_setup", []string{"io_uring"}, "ENOSYS", "ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := probe(t, s, c.args...); got != c.want {
				t.Errorf("sandboxed: %s, want %s", got, c.want)
			}
			if c.unset != "" {
				if got := probe(t, off, c.args...); got != c.unset {
					t.Errorf("unconfined: %s, want %s (the probe does not show the filter)", got, c.unset)
				}
			}
		})
	}
	// What a program needs still works: the families it may use, and processes and threads.
	for _, fam := range []int{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6} {
		if got := probe(t, s, "socket", af(fam), af(unix.SOCK_STREAM)); got != "ok" {
			t.Errorf("socket family %d: %s", fam, got)
		}
	}
	if got := probe(t, s, "socketpair", af(unix.AF_UNIX)); got != "ok" {
		t.Errorf("a unix socketpair: %s", got)
	}
	if got := run(t, s, shell("grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status")); !strings.Contains(got, "Seccomp:\t2") || !strings.Contains(got, "NoNewPrivs:\t1") {
		t.Errorf("no filter on the program: %q", got)
	}
}

// Landlock, the second layer, allows the paths bwrap shows and nothing else: what bwrap binds
// for the sandbox's own use (the init's executable) is there, and still out of reach.
func TestLandlockSecondLayer(t *testing.T) {
	abi := sandbox.LandlockABI()
	t.Logf("Landlock ABI %d", abi)
	if abi == 0 {
		t.Skip("this kernel has no Landlock")
	}
	s := sandboxtest.Open(t)
	// (A program other than the test binary: Landlock's rules are on files, and the test
	// binary is the init's binary too.)
	if got := run(t, s, shell("head -c 1 "+sandbox.InitPath+" >/dev/null 2>&1 && echo readable; test -e "+sandbox.InitPath+" && echo there")); got != "there\n" {
		t.Errorf("the init's binary, bound by bwrap: %q, want it there and unreadable", got)
	}
	// The sandbox's pid 1 is bwrap's, outside the program's Landlock domain: its descriptors
	// and its root are not the program's to open.
	for _, p := range []string{"/proc/1/fd/0", "/proc/1/root/etc/passwd"} {
		if got := probe(t, s, "readerr", p); got != "EACCES" {
			t.Errorf("%s: %s", p, got)
		}
	}
	// What is shown stays usable.
	if got := probe(t, s, "list", "/"); !strings.Contains(got, "usr") || !strings.Contains(got, "tmp") {
		t.Errorf("ls /: %s", got)
	}
	if got := run(t, s, shell("echo x > /tmp/a && mkdir /tmp/d && mv /tmp/a /tmp/d/b && cat /tmp/d/b && ls /dev/null")); got != "x\n/dev/null\n" {
		t.Errorf("/tmp and /dev: %q", got)
	}
}

// /etc/shadow, another process, a path out of a writable folder by .. or by a symbolic link
// made on the host, and writing into a read-only binding all fail.
func TestEscapesFail(t *testing.T) {
	s := sandboxtest.Open(t)
	ws, ro := t.TempDir(), t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"shadow": "/etc/shadow", "secret": secret, "up": "../../../.."} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	spec := func(args ...string) sandbox.Spec {
		sp := self(t, args...)
		sp.Writable, sp.ReadOnly, sp.Dir = []string{ws}, []string{ro}, ws
		return sp
	}
	for _, p := range []string{
		"/etc/shadow",
		filepath.Join(ws, "shadow"),
		filepath.Join(ws, "secret"),
		filepath.Join(ws, "up", strings.TrimPrefix(secret, "/")),
		ws + "/../../../.." + secret,
		"/proc/1/root" + secret,
	} {
		if got := run(t, s, spec("read", p)); strings.Contains(got, "secret") || strings.Contains(got, "root:") {
			t.Errorf("%s: %s", p, got)
		}
	}
	if got := run(t, s, spec("write", filepath.Join(ro, "x"))); got != "unwritable\n" {
		t.Errorf("a read-only binding: %s", got)
	}
	if _, err := os.Stat(filepath.Join(ro, "x")); err == nil {
		t.Error("the write reached the host")
	}
	// Unconfined the same reads succeed: the test can fail.
	off, _ := sandbox.Open(context.Background(), sandbox.ModeOffUnsafe)
	exe, _ := os.Executable()
	if got := run(t, off, sandbox.Spec{Program: exe, Args: []string{"helper", "read", filepath.Join(ws, "secret")}, Dir: "/", Env: []string{helperEnv + "=1"}}); !strings.Contains(got, "host secret") {
		t.Errorf("unconfined: %s", got)
	}
}

// The only unix sockets a program reaches are those in the folders it is given: capgate's own
// socket, in a folder that is not bound, and an abstract socket of the host's are not there.
// (Abstract sockets belong to a network namespace, and the sandbox has its own; a pathname
// socket is reached through the file system, which shows only the bound folders.)
func TestOnlyHandedInUnixSockets(t *testing.T) {
	s := sandboxtest.Open(t)
	own := filepath.Join(t.TempDir(), "capgate.sock")
	given := filepath.Join(t.TempDir(), "given.sock")
	for _, p := range []string{own, given} {
		ln, err := net.Listen("unix", p)
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
	}
	abs := "@capgate-test-" + strconv.Itoa(os.Getpid())
	aln, err := net.Listen("unix", abs)
	if err != nil {
		t.Fatal(err)
	}
	defer aln.Close()
	sp := func(addr string) sandbox.Spec {
		p := self(t, "dialunix", addr)
		p.Writable = []string{filepath.Dir(given)}
		return p
	}
	for _, addr := range []string{own, abs} {
		if got := run(t, s, sp(addr)); !strings.HasPrefix(got, "refused") {
			t.Errorf("%s: %s", addr, got)
		}
	}
	if got := run(t, s, sp(given)); got != "connected\n" {
		t.Errorf("the socket handed in: %s", got)
	}
}

// A program's environment is its Env, and nothing else: no HOME, no PATH, unless given.
func TestNoHome(t *testing.T) {
	s := sandboxtest.Open(t)
	t.Setenv("HOME", "/root")
	env := run(t, s, self(t, "env"))
	for _, line := range strings.Split(strings.TrimSpace(env), "\n") {
		if line != helperEnv+"=1" && line != "PWD=/" { // bwrap's --chdir sets PWD
			t.Errorf("the environment holds %q", line)
		}
	}
	if got := run(t, s, shell(`echo "[$HOME]"; ls -d /root /home/* 2>/dev/null; true`)); got != "[]\n" {
		t.Errorf("home: %q", got)
	}
}

// Descriptors capgate used to build the sandbox reach no program: only its standard streams
// and its ExtraFiles are open in it.
func TestOnlyGivenDescriptors(t *testing.T) {
	s := sandboxtest.Open(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	sp := self(t, "list", "/proc/self/fd")
	sp.ExtraFiles = []*os.File{w}
	ws := t.TempDir()
	dir, err := os.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	sp.Binds = []sandbox.Bind{{Path: "/sandbox/x", Dir: dir}}
	// 0, 1, 2, the pipe, and the descriptor ReadDir itself opened.
	if got := strings.Fields(run(t, s, sp)); len(got) != 5 {
		t.Errorf("descriptors in the program: %v", got)
	}
}

// What programs on someone's behalf do still works under both layers: git in a writable
// folder, Python's multiprocessing (semaphores in /dev/shm, pipes, forks), threads and
// subprocesses, tar into /tmp.
func TestRealProgramsRun(t *testing.T) {
	s := sandboxtest.Open(t)
	for _, p := range []string{"/usr/bin/git", "/usr/bin/python3", "/usr/bin/tar"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
	ws := t.TempDir()
	sp := shell(`cd ` + ws + ` && export HOME=` + ws + ` && git init -q r && cd r && echo a > f && git add f &&
git -c user.email=a@b.test -c user.name=n commit -qm x && git log --oneline | wc -l &&
/usr/bin/python3 -c "
import multiprocessing as mp, threading, subprocess
def f(x): return x * x
if __name__ == '__main__':
    with mp.Pool(2) as p: print(sum(p.map(f, range(10))))
    t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()
    print(subprocess.run(['echo', 'sub'], capture_output=True, text=True).stdout.strip())
" && tar czf /tmp/t.tgz -C ` + ws + ` r && echo tar`)
	sp.Writable = []string{ws}
	if got := run(t, s, sp); got != "1\n285\nthread\nsub\ntar\n" {
		t.Errorf("real programs: %q", got)
	}
}

// A caller that closes the command's ExtraFiles once it has started (the tool servers' does)
// closes nothing the next command needs.
func TestClosingExtraFilesAfterStart(t *testing.T) {
	s := sandboxtest.Open(t)
	for i := range 3 {
		cmd, err := s.Command(shell("echo run"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for _, f := range cmd.ExtraFiles {
			f.Close()
		}
		b := make([]byte, 16)
		n, _ := out.Read(b)
		if err := cmd.Wait(); err != nil || string(b[:n]) != "run\n" {
			t.Fatalf("run %d after closing the last one's files: %q %v", i, b[:n], err)
		}
	}
}
