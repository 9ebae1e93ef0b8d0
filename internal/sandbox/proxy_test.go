package sandbox_test

import (
	"errors"
	"io"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
)

// echoServer listens on a unix socket in a folder of its own and answers each connection
// with "echo: " and what it read, to its end.
func echoServer(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				_, _ = c.Write(append([]byte("echo: "), b...))
			}()
		}
	}()
	return p
}

// With ProxySocket the program's HTTP_PROXY is the init's forwarder on the sandbox's own
// loopback, and what it sends there reaches the socket outside, both ways, half closes
// included; the program's exit status is the sandbox's.
func TestProxyForwarder(t *testing.T) {
	s := sandboxtest.Open(t)
	sock := echoServer(t)
	sp := self(t, "proxy", "GET http://example.test/ HTTP/1.1")
	sp.ProxySocket = sock
	sp.Env = append(sp.Env, "HTTP_PROXY=http://evil.test:1", "NO_PROXY_TEST=kept")
	if got := run(t, s, sp); got != "echo: GET http://example.test/ HTTP/1.1\n" {
		t.Errorf("through the forwarder: %q", got)
	}
	sp = self(t, "env")
	sp.ProxySocket = sock
	sp.Env = append(sp.Env, "HTTP_PROXY=http://evil.test:1")
	env := run(t, s, sp)
	for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128"} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("the environment lacks %s: %q", want, env)
		}
	}
	if strings.Contains(env, "evil.test") {
		t.Errorf("the spec's own proxy is left: %q", env)
	}
	// A proxy credential travels in the URL, escaped.
	sp = self(t, "env")
	sp.ProxySocket = sock
	sp.ProxyUser = url.UserPassword("capgate", "cred/with:odd@chars")
	if env := run(t, s, sp); !strings.Contains(env, "HTTPS_PROXY=http://capgate:cred%2Fwith%3Aodd%40chars@127.0.0.1:3128\n") {
		t.Errorf("the proxy's credential in the environment: %q", env)
	}
	// The program is the init's child, and its status is the sandbox's.
	sp = self(t, "exit", "7")
	sp.ProxySocket = sock
	cmd, err := s.Command(sp)
	if err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Errorf("exit status through the forwarder: %v", err)
	}
	// Without ProxySocket nothing listens there.
	if got := run(t, s, self(t, "dial", "127.0.0.1:3128")); !strings.HasPrefix(got, "refused") {
		t.Errorf("without a proxy: %s", got)
	}
	// The forwarder's program is confined as any: the seccomp filter, Landlock (here, bwrap's
	// descriptors are out of its reach) and the limits hold. (It may read capgate's
	// executable, which the init's second stage executes: nothing secret is in it.)
	sp = shell("grep -E '^Seccomp:' /proc/self/status; head -c 1 /proc/1/fd/0 >/dev/null 2>&1 && echo pid1-readable; true")
	sp.ProxySocket = sock
	sp.Limits = sandbox.Limits{OpenFiles: 64}
	sp.Args[2] += "; ulimit -n"
	got := run(t, s, sp)
	if !strings.Contains(got, "Seccomp:\t2") || !strings.HasSuffix(got, "64\n") {
		t.Errorf("the program under the forwarder: %q", got)
	}
	if sandbox.LandlockABI() > 0 && strings.Contains(got, "pid1-readable") {
		t.Errorf("the program under the forwarder reads bwrap's descriptors: %q", got)
	}
}

// Many connections at once all cross, each with its own answer.
func TestProxyForwarderConcurrent(t *testing.T) {
	s := sandboxtest.Open(t)
	sp := self(t, "proxymany", "40")
	sp.ProxySocket = echoServer(t)
	if got := run(t, s, sp); got != "40 answered\n" {
		t.Errorf("40 connections at once: %q", got)
	}
}
