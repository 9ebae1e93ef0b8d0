// Package egresstest makes the real network parts of the egress proxy's tests: a network
// namespace of the test's own, joined to the test's by a veth pair, with servers listening
// inside it on addresses that are neither loopback nor the host's. It needs root and
// iproute2; without them a test skips saying why, and fails under CI=true.
package egresstest

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Net is a network namespace of the test's own joined to the test's namespace by a veth
// pair: the test's side has .1 of a 10.200.N.0/24 (and fd00:200:N::1/64), the namespace's
// side .2 (and ::2). Servers listen inside it, on addresses that are neither loopback nor the
// host's, so the proxy reaches them the way it reaches any destination: by routing.
type Net struct {
	Name   string
	Prefix netip.Prefix // the IPv4 /24
	V6     netip.Prefix // the IPv6 /64
	Host   netip.Addr   // the test's side
	NS     netip.Addr   // the namespace's side
	NS6    netip.Addr
}

var netSeq atomic.Int32

// Need skips the test when it cannot make network namespaces (not root, no iproute2),
// and fails it instead under CI=true, where the real parts must be there.
func Need(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "these tests make network namespaces and veth pairs, which needs root"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "these tests need iproute2's ip to make network namespaces"
	} else if err := probeNetns(); err != nil {
		why = "ip netns does not work here: " + err.Error()
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

var probe struct {
	once sync.Once
	err  error
}

// probeNetns makes and removes a namespace once, to learn whether this machine lets the tests
// make them at all.
func probeNetns() error {
	probe.once.Do(func() {
		name := fmt.Sprintf("cgegress-probe-%d", os.Getpid())
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			probe.err = fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
			return
		}
		exec.Command("ip", "netns", "del", name).Run()
	})
	return probe.err
}

func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// New makes a namespace and its veth pair, removed at the end of the test.
func New(t testing.TB) *Net {
	t.Helper()
	Need(t)
	seq := netSeq.Add(1)
	pid := os.Getpid()
	n := &Net{Name: fmt.Sprintf("cgegress-%d-%d", pid, seq)}
	// A /24 of 10.200.0.0/16 that no interface of this machine uses yet.
	out, err := exec.Command("ip", "-o", "addr").CombinedOutput()
	if err != nil {
		t.Fatalf("ip -o addr: %v", err)
	}
	third := -1
	for i := 0; i < 256; i++ {
		c := (pid + int(seq)*7 + i) % 256
		if !strings.Contains(string(out), fmt.Sprintf(" 10.200.%d.", c)) {
			third = c
			break
		}
	}
	if third < 0 {
		t.Fatal("no free /24 in 10.200.0.0/16")
	}
	n.Prefix = netip.MustParsePrefix(fmt.Sprintf("10.200.%d.0/24", third))
	n.Host = netip.MustParseAddr(fmt.Sprintf("10.200.%d.1", third))
	n.NS = netip.MustParseAddr(fmt.Sprintf("10.200.%d.2", third))
	n.V6 = netip.MustParsePrefix(fmt.Sprintf("fd00:200:%x::/64", third))
	n.NS6 = netip.MustParseAddr(fmt.Sprintf("fd00:200:%x::2", third))
	va, vb := fmt.Sprintf("cge%da%d", pid%100000, seq), fmt.Sprintf("cge%db%d", pid%100000, seq)

	ipCmd(t, "netns", "add", n.Name)
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", va).Run()
		exec.Command("ip", "netns", "del", n.Name).Run()
	})
	ipCmd(t, "link", "add", va, "type", "veth", "peer", "name", vb)
	ipCmd(t, "link", "set", vb, "netns", n.Name)
	ipCmd(t, "addr", "add", n.Host.String()+"/24", "dev", va)
	ipCmd(t, "addr", "add", fmt.Sprintf("fd00:200:%x::1/64", third), "dev", va, "nodad")
	ipCmd(t, "link", "set", va, "up")
	ipCmd(t, "-n", n.Name, "addr", "add", n.NS.String()+"/24", "dev", vb)
	ipCmd(t, "-n", n.Name, "addr", "add", n.NS6.String()+"/64", "dev", vb, "nodad")
	ipCmd(t, "-n", n.Name, "link", "set", vb, "up")
	ipCmd(t, "-n", n.Name, "link", "set", "lo", "up")
	return n
}

// Listen opens a TCP listener on addr inside the namespace: a thread of its own enters the
// namespace, opens the socket, and leaves; the socket stays in the namespace wherever it is
// used from. A thread that cannot leave is not given back to the Go runtime (it exits with
// its goroutine).
func (n *Net) Listen(t testing.TB, addr netip.AddrPort) net.Listener {
	t.Helper()
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer unix.Close(self)
		target, err := unix.Open("/run/netns/"+n.Name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			ch <- result{err: err}
			return
		}
		l, lerr := net.Listen("tcp", addr.String())
		if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
			if l != nil {
				l.Close()
			}
			ch <- result{err: fmt.Errorf("leaving the namespace: %w", err)}
			return // the thread stays locked and dies with this goroutine
		}
		runtime.UnlockOSThread()
		ch <- result{l, lerr}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("listening in the namespace: %v", r.err)
	}
	t.Cleanup(func() { r.l.Close() })
	return r.l
}
