package web

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzHostAllows feeds the Host check every spelling the fuzzer finds. Whatever it lets
// through names loopback or the one allowed host: as an address, a loopback or the allowed
// one; as a name, "localhost" or "capgate.home.arpa" in some case, never a name under them.
func FuzzHostAllows(f *testing.F) {
	for _, s := range []string{"localhost", "localhost:7766", "LOCALHOST", "localhost.", "127.0.0.1", "127.1",
		"0x7f.0.0.1", "[::1]:80", "::1", "[::ffff:127.0.0.1]", "[fe80::1%25lo]", "capgate.home.arpa:1",
		"localhost.attacker.example", "127.0.0.1.nip.io", "", ":80", "[", "[]", "localhost:", "localhost:99999"} {
		f.Add(s)
	}
	h, _ := newHosts([]string{"capgate.home.arpa", "192.168.1.5"})
	f.Fuzz(func(t *testing.T, hostport string) {
		if !h.allows(hostport) {
			return
		}
		host, ok := splitHost(hostport)
		if !ok {
			t.Fatalf("allowed %q, whose port is not a port", hostport)
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if a, err := netip.ParseAddr(host); err == nil {
			if !a.Unmap().IsLoopback() && a != netip.MustParseAddr("192.168.1.5") {
				t.Fatalf("allowed %q, an address neither loopback nor allowed", hostport)
			}
			return
		}
		if n := strings.ToLower(host); n != "localhost" && n != "capgate.home.arpa" {
			t.Fatalf("allowed %q, a name neither localhost nor allowed", hostport)
		}
	})
}
