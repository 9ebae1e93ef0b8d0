package egress

import (
	"context"
	"net"
	"net/netip"
	"strings"
)

// Resolver answers the addresses of a DNS name. The proxy asks it once per connection it
// makes to a named destination, classifies every address of the answer, and connects only to
// those addresses: it never resolves the name again for that connection, and never hands the
// name to anything that would.
//
// LookupNetIP returns every address the name has (A and AAAA), in the order to try them, or an
// error when the name cannot be resolved; an empty answer is treated as an error. Addresses
// are classified exactly as returned: an IPv4-mapped IPv6 address is refused as an IPv6 form
// that embeds IPv4, so a Resolver that speaks of IPv4 answers returns them unmapped.
// Implementations must be safe for concurrent use.
type Resolver interface {
	LookupNetIP(ctx context.Context, host string) ([]netip.Addr, error)
}

var _ Resolver = DNSResolver{}

// DNSResolver is the default Resolver: Go's own DNS client (never the C library's, so no
// nsswitch module and no cache sits between the answer and the check), asking Server. The
// name is looked up as a fully qualified name, so the search domains of /etc/resolv.conf are
// never appended; Go's resolver still reads /etc/hosts first, which is the host's own
// configuration. Answers are not cached: each connection asks again, so a name whose
// answer changes (DNS rebinding) is checked again at its next connection.
//
// The zero DNSResolver asks the servers of /etc/resolv.conf.
type DNSResolver struct {
	// Server is the DNS server to ask, as an IP literal and port ("192.0.2.53:53"); ""
	// means the servers of /etc/resolv.conf.
	Server string
}

// LookupNetIP implements Resolver. A and AAAA answers are both asked for, and an error in
// either fails the whole look-up (StrictErrors), so that a partial answer is never taken for
// every address of the name. An IPv4 address Go's resolver returns in its 16-byte form (as it
// does for /etc/hosts entries, and for an AAAA record holding an IPv4-mapped address, which
// Go reads as the IPv4 address it maps) is unmapped: a connection to it reaches that IPv4
// address, which is what must be classified.
func (r DNSResolver) LookupNetIP(ctx context.Context, host string) ([]netip.Addr, error) {
	res := &net.Resolver{PreferGo: true, StrictErrors: true}
	if r.Server != "" {
		server := r.Server
		res.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		}
	}
	if !strings.HasSuffix(host, ".") {
		host += "."
	}
	addrs, err := res.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}
