package egress

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

// testNet is a network namespace of the test's own joined to the test's namespace by a veth
// pair: the test's side has .1 of a 10.200.N.0/24 (and fd00:200:N::1/64), the namespace's
// side .2 (and ::2). Servers listen inside it, on addresses that are neither loopback nor the
// host's, so the proxy reaches them the way it reaches any destination: by routing.
type testNet struct {
	name   string
	prefix netip.Prefix // the IPv4 /24
	v6     netip.Prefix // the IPv6 /64
	host   netip.Addr   // the test's side
	ns     netip.Addr   // the namespace's side
	ns6    netip.Addr
}

var netSeq atomic.Int32

// needNetns skips the test when it cannot make network namespaces (not root, no iproute2),
// and fails it instead under CI=true, where the real parts must be there.
func needNetns(t testing.TB) {
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

// newTestNet makes a namespace and its veth pair, removed at the end of the test.
func newTestNet(t testing.TB) *testNet {
	t.Helper()
	needNetns(t)
	seq := netSeq.Add(1)
	pid := os.Getpid()
	n := &testNet{name: fmt.Sprintf("cgegress-%d-%d", pid, seq)}
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
	n.prefix = netip.MustParsePrefix(fmt.Sprintf("10.200.%d.0/24", third))
	n.host = netip.MustParseAddr(fmt.Sprintf("10.200.%d.1", third))
	n.ns = netip.MustParseAddr(fmt.Sprintf("10.200.%d.2", third))
	n.v6 = netip.MustParsePrefix(fmt.Sprintf("fd00:200:%x::/64", third))
	n.ns6 = netip.MustParseAddr(fmt.Sprintf("fd00:200:%x::2", third))
	va, vb := fmt.Sprintf("cge%da%d", pid%100000, seq), fmt.Sprintf("cge%db%d", pid%100000, seq)

	ipCmd(t, "netns", "add", n.name)
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", va).Run()
		exec.Command("ip", "netns", "del", n.name).Run()
	})
	ipCmd(t, "link", "add", va, "type", "veth", "peer", "name", vb)
	ipCmd(t, "link", "set", vb, "netns", n.name)
	ipCmd(t, "addr", "add", n.host.String()+"/24", "dev", va)
	ipCmd(t, "addr", "add", fmt.Sprintf("fd00:200:%x::1/64", third), "dev", va, "nodad")
	ipCmd(t, "link", "set", va, "up")
	ipCmd(t, "-n", n.name, "addr", "add", n.ns.String()+"/24", "dev", vb)
	ipCmd(t, "-n", n.name, "addr", "add", n.ns6.String()+"/64", "dev", vb, "nodad")
	ipCmd(t, "-n", n.name, "link", "set", vb, "up")
	ipCmd(t, "-n", n.name, "link", "set", "lo", "up")
	return n
}

// listen opens a TCP listener on addr inside the namespace: a thread of its own enters the
// namespace, opens the socket, and leaves; the socket stays in the namespace wherever it is
// used from. A thread that cannot leave is not given back to the Go runtime (it exits with
// its goroutine).
func (n *testNet) listen(t testing.TB, addr netip.AddrPort) net.Listener {
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
		target, err := unix.Open("/run/netns/"+n.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
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
