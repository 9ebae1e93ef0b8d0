package sandbox_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// confineHelper runs the probes of the confinement tests inside the sandbox. Each prints one
// line: "ok" or the errno's name ("EPERM"), or a count.
func confineHelper(args []string) int {
	switch args[0] {
	case "socket": // socket FAMILY TYPE
		fam, _ := strconv.Atoi(args[1])
		typ, _ := strconv.Atoi(args[2])
		fd, err := unix.Socket(fam, typ, 0)
		if err == nil {
			unix.Close(fd)
		}
		fmt.Println(errName(err))
	case "socketpair": // socketpair FAMILY
		fam, _ := strconv.Atoi(args[1])
		_, err := unix.Socketpair(fam, unix.SOCK_STREAM, 0)
		fmt.Println(errName(err))
	case "ptrace": // ptrace: attach to a child of its own
		c := exec.Command("/bin/sleep", "5")
		if err := c.Start(); err != nil {
			fmt.Println("no child:", err)
			return 1
		}
		err := unix.PtraceAttach(c.Process.Pid)
		_ = c.Process.Kill()
		_ = c.Wait()
		fmt.Println(errName(err))
	case "mount":
		fmt.Println(errName(unix.Mount("none", "/tmp", "tmpfs", 0, "")))
	case "unshare":
		fmt.Println(errName(unix.Unshare(unix.CLONE_NEWNET)))
	case "clone-newnet": // a child in a network namespace of its own, as os/exec makes one
		c := exec.Command("/bin/true")
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
		err := c.Run()
		var errno syscall.Errno
		if errors.As(err, &errno) {
			fmt.Println(errName(errno))
		} else {
			fmt.Println(errName(err))
		}
	case "setns":
		fd, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY, 0)
		if err != nil {
			fmt.Println("open:", errName(err))
			return 0
		}
		fmt.Println(errName(unix.Setns(fd, unix.CLONE_NEWNET)))
	case "add_key":
		_, err := unix.AddKey("user", "capgate-test", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
		fmt.Println(errName(err))
	case "keyctl":
		_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, true)
		fmt.Println(errName(err))
	case "bpf":
		_, _, e := unix.Syscall(unix.SYS_BPF, 0 /* BPF_MAP_CREATE */, 0, 0)
		fmt.Println(errName(errnoErr(e)))
	case "perf_event_open":
		_, _, e := unix.Syscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0, 0)
		fmt.Println(errName(errnoErr(e)))
	case "init_module":
		_, _, e := unix.Syscall(unix.SYS_FINIT_MODULE, 0, 0, 0)
		fmt.Println(errName(errnoErr(e)))
	case "io_uring":
		var params [120]byte
		_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		fmt.Println(errName(errnoErr(e)))
	case "fork": // fork N: start N sleepers, report how many started
		n, _ := strconv.Atoi(args[1])
		var started []*exec.Cmd
		var failure error
		for range n {
			c := exec.Command("/bin/sleep", "30")
			if err := c.Start(); err != nil {
				failure = err
				break
			}
			started = append(started, c)
		}
		for _, c := range started {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		fmt.Println(len(started), errName(failure))
	case "open": // open N: open /dev/null N times, report how many opened
		n, _ := strconv.Atoi(args[1])
		opened := 0
		var failure error
		for range n {
			fd, err := unix.Open("/dev/null", unix.O_RDONLY, 0)
			if err != nil {
				failure = err
				break
			}
			_ = fd
			opened++
		}
		fmt.Println(opened, errName(failure))
	case "alloc": // alloc MiB: allocate and touch, in a C-like way (mmap), report
		n, _ := strconv.Atoi(args[1])
		b, err := unix.Mmap(-1, 0, n<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			fmt.Println(errName(err))
			return 0
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("ok")
	case "hold": // hold MiB: allocate and touch, say "held", keep it until stdin closes
		n, _ := strconv.Atoi(args[1])
		b, err := unix.Mmap(-1, 0, n<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			fmt.Println(errName(err))
			return 0
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("held")
		_, _ = io.Copy(io.Discard, os.Stdin)
		runtime.KeepAlive(b)
	case "memfork": // memfork N MiB: N children that each hold MiB at once, then wait for stdin
		n, _ := strconv.Atoi(args[1])
		held, killed, failed := 0, 0, 0
		var children []*exec.Cmd
		var stdins []io.Closer
		for range n {
			exe, _ := os.Executable()
			c := exec.Command(exe, "hold", args[2])
			in, _ := c.StdinPipe()
			out, _ := c.StdoutPipe()
			if err := c.Start(); err != nil {
				failed++
				continue
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			if line == "held\n" {
				held++
				children, stdins = append(children, c), append(stdins, in)
				continue
			}
			in.Close()
			_ = c.Wait()
			fmt.Fprintf(os.Stderr, "a child said %q and ended: %v\n", line, c.ProcessState)
			if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				killed++
			} else {
				failed++
			}
		}
		// A child that held its memory may have been killed since, to make room for another;
		// the kernel's kill is not instant.
		time.Sleep(300 * time.Millisecond)
		for i, c := range children {
			var st unix.WaitStatus
			if p, _ := unix.Wait4(c.Process.Pid, &st, unix.WNOHANG, nil); p == c.Process.Pid {
				children[i] = nil
				held--
				killed++
			}
		}
		fmt.Println(held, "held", killed, "killed", failed, "failed")
		_, _ = io.Copy(io.Discard, os.Stdin)
		for i, c := range children {
			if c != nil {
				stdins[i].Close()
				_ = c.Wait()
			}
		}
	case "writeerr": // writeerr PATH TEXT: the errno of writing TEXT to it
		f, err := os.OpenFile(args[1], os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(args[2])
			f.Close()
		}
		fmt.Println(errName(err))
	case "writelines": // writelines: for each line "PATH TEXT" of stdin, the errno of the write
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			path, text, _ := strings.Cut(sc.Text(), " ")
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err == nil {
				_, err = f.WriteString(text)
				f.Close()
			}
			fmt.Println(errName(err))
		}
	case "mountcgroup": // mountcgroup CONTROLLER: mount a cgroup v1 hierarchy of it, or v2
		var err error
		if args[1] == "v2" {
			err = unix.Mount("none", "/tmp", "cgroup2", 0, "")
		} else {
			err = unix.Mount("none", "/tmp", "cgroup", 0, args[1])
		}
		fmt.Println(errName(err))
	case "spin": // spin: burn CPU until killed
		for i := 0; ; i++ {
			_ = i * i
		}
	case "list": // list DIR
		ents, err := os.ReadDir(args[1])
		if err != nil {
			fmt.Println(errName(err))
			return 0
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		fmt.Println(strings.Join(names, " "))
	case "readerr": // readerr PATH: the errno of reading it
		_, err := os.ReadFile(args[1])
		fmt.Println(errName(err))
	case "exit": // exit N
		n, _ := strconv.Atoi(args[1])
		return n
	case "proxy": // proxy MESSAGE: send it through the proxy of HTTP_PROXY, print the answer
		addr := strings.TrimPrefix(os.Getenv("HTTPS_PROXY"), "http://")
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			fmt.Println("refused:", err)
			return 0
		}
		defer c.Close()
		_, _ = c.Write([]byte(args[1]))
		_ = c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c)
		fmt.Printf("%s\n", b)
	case "direct": // direct HOST:PORT MESSAGE: dial by name, ignoring HTTP_PROXY, print the answer
		c, err := net.DialTimeout("tcp", args[1], 5*time.Second)
		if err != nil {
			fmt.Println("refused:", err)
			return 0
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Write([]byte(args[2]))
		_ = c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c)
		fmt.Printf("answer: %s\n", b)
	case "proxymany": // proxymany N: N connections through the proxy at once
		n, _ := strconv.Atoi(args[1])
		addr := strings.TrimPrefix(os.Getenv("HTTP_PROXY"), "http://")
		answered := make(chan bool, n)
		for i := range n {
			go func() {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					answered <- false
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				msg := "m" + strconv.Itoa(i)
				_, _ = c.Write([]byte(msg))
				_ = c.(*net.TCPConn).CloseWrite()
				b, _ := io.ReadAll(c)
				answered <- string(b) == "echo: "+msg
			}()
		}
		ok := 0
		for range n {
			if <-answered {
				ok++
			}
		}
		fmt.Println(ok, "answered")
	case "serve": // serve DIR: leave traces for another sandbox, then wait for stdin to close
		_ = os.WriteFile("/tmp/mine", []byte("secret of the first"), 0o644)
		_ = os.WriteFile(args[1]+"/mine", []byte("secret of the first"), 0o644)
		l1, err1 := net.Listen("unix", "/tmp/mine.sock")
		l2, err2 := net.Listen("unix", "@capgate-sandbox-isolation")
		l3, err3 := net.Listen("tcp", "127.0.0.1:4555")
		if err := errors.Join(err1, err2, err3); err != nil {
			fmt.Println("cannot serve:", err)
			return 1
		}
		for _, l := range []net.Listener{l1, l2, l3} {
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					_, _ = c.Write([]byte("first"))
					c.Close()
				}
			}()
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
	default:
		fmt.Println("unknown probe", args[0])
		return 1
	}
	return 0
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// errName is "ok" for nil, else the errno's name (EPERM), else the error's text.
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if n := unix.ErrnoName(errno); n != "" {
			return n
		}
	}
	return err.Error()
}
