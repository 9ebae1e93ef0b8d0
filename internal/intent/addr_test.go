package intent

import (
	"net/netip"
	"strings"
	"testing"
)

// TestAddrRule holds the exported check the egress proxy applies to resolved addresses to the
// table, including the ranges Go's IsPrivate and IsGlobalUnicast call public.
func TestAddrRule(t *testing.T) {
	allow := Host{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}}
	for _, tc := range []struct {
		addr string
		h    Host
		want string // "" or a fragment of the rule
	}{
		{"93.184.215.14", Host{}, ""},
		{"2606:4700::1111", Host{}, ""},
		{"10.200.1.2", allow, ""},
		{"10.200.1.2", Host{}, "private"},
		{"10.201.1.2", allow, "private"},
		{"127.0.0.1", allow, "Loopback"},
		{"169.254.169.254", allow, "cloud instance endpoint"},
		{"192.0.0.100", Host{}, "IETF Protocol Assignments"},
		{"198.18.0.1", Host{}, "Benchmarking"},
		{"240.0.0.1", Host{}, "Reserved"},
		{"2001:db8::1", Host{}, "Documentation"},
		{"::ffff:93.184.215.14", Host{}, "embed an IPv4"},
		{"::ffff:10.200.1.2", allow, "embed an IPv4"},
		{"::1", Host{}, "Loopback"},
		{"fe80::1%eth0", Host{}, "zone"},
		{"", Host{}, "zone"},
	} {
		var a netip.Addr
		if tc.addr != "" {
			a = netip.MustParseAddr(tc.addr)
		}
		got := AddrRule(a, tc.h)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("AddrRule(%q) = %q, want %q", tc.addr, got, tc.want)
		}
		if tc.addr != "" && strings.Contains(got, tc.addr) {
			t.Errorf("AddrRule(%q) = %q: the rule echoes the address", tc.addr, got)
		}
	}
}
