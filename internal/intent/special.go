package intent

import (
	"net/netip"
	"strings"
)

// The address ranges and names no network intent may name. Each entry carries the registry it
// comes from and that registry's name for it, which is what a refusal shows: the bound broken,
// never the address written.
//
// Registries (as of 2025):
//   - IANA IPv4 Special-Purpose Address Registry and IANA IPv6 Special-Purpose Address
//     Registry (RFC 6890): every entry, including the few marked "globally reachable" (anycast
//     and AS112 service addresses), none of which is a destination a capability needs.
//   - IANA IPv4 Multicast Address Space and IANA IPv6 Address Space: multicast, and every
//     IPv6 block "Reserved by IETF" (all of the space outside 2000::/3, fc00::/7, fe80::/10
//     and ff00::/8), so that an accepted IPv6 literal is global unicast or, by policy, ULA.
//   - IPv6 forms that embed an IPv4 address (IPv4-mapped, IPv4-compatible, IPv4-translated,
//     NAT64, 6to4, Teredo): refused outright, whatever the IPv4 address inside, because a
//     translator or tunnel on the way would reach that IPv4 address.
//   - Cloud instance endpoints: the metadata and host-agent addresses of the large clouds;
//     most already lie in link-local or shared space, and are listed so a refusal says what
//     they are.

// rangeKind is why an address range is refused.
type rangeKind uint8

const (
	kindForbidden  rangeKind = iota // never, whatever the policy
	kindEmbedsIPv4                  // never: an IPv6 form that carries an IPv4 address
	kindMetadata                    // never: a cloud instance endpoint
	kindPrivate                     // only where Host.AllowPrivate contains the address
)

// specialRange is one entry of the table.
type specialRange struct {
	prefix   netip.Prefix
	kind     rangeKind
	registry string // where the entry comes from
	name     string // the registry's name for it
	ref      string // the defining document, for readers of this file
}

const (
	regV4       = "IANA IPv4 Special-Purpose Address Registry"
	regV6       = "IANA IPv6 Special-Purpose Address Registry"
	regV4Mcast  = "IANA IPv4 Multicast Address Space"
	regV6Space  = "IANA IPv6 Address Space"
	regCloud    = "cloud instance endpoint"
	regEmbedded = "IPv6 form embedding IPv4"
)

func r(prefix string, kind rangeKind, registry, name, ref string) specialRange {
	return specialRange{netip.MustParsePrefix(prefix), kind, registry, name, ref}
}

// specialRanges is the table. Lookup takes the longest matching prefix, so the order here is
// for readers only.
var specialRanges = []specialRange{
	// IANA IPv4 Special-Purpose Address Registry.
	r("0.0.0.0/8", kindForbidden, regV4, "This network", "RFC 791"),
	r("0.0.0.0/32", kindForbidden, regV4, "This host on this network", "RFC 1122"),
	r("10.0.0.0/8", kindPrivate, regV4, "Private-Use", "RFC 1918"),
	r("100.64.0.0/10", kindForbidden, regV4, "Shared Address Space", "RFC 6598"),
	r("127.0.0.0/8", kindForbidden, regV4, "Loopback", "RFC 1122"),
	r("169.254.0.0/16", kindForbidden, regV4, "Link Local", "RFC 3927"),
	r("172.16.0.0/12", kindPrivate, regV4, "Private-Use", "RFC 1918"),
	r("192.0.0.0/24", kindForbidden, regV4, "IETF Protocol Assignments", "RFC 6890"),
	r("192.0.0.0/29", kindForbidden, regV4, "IPv4 Service Continuity Prefix", "RFC 7335"),
	r("192.0.0.8/32", kindForbidden, regV4, "IPv4 dummy address", "RFC 7600"),
	r("192.0.0.9/32", kindForbidden, regV4, "Port Control Protocol Anycast", "RFC 7723"),
	r("192.0.0.10/32", kindForbidden, regV4, "Traversal Using Relays around NAT Anycast", "RFC 8155"),
	r("192.0.0.170/32", kindForbidden, regV4, "NAT64/DNS64 Discovery", "RFC 8880"),
	r("192.0.0.171/32", kindForbidden, regV4, "NAT64/DNS64 Discovery", "RFC 8880"),
	r("192.0.2.0/24", kindForbidden, regV4, "Documentation (TEST-NET-1)", "RFC 5737"),
	r("192.31.196.0/24", kindForbidden, regV4, "AS112-v4", "RFC 7535"),
	r("192.52.193.0/24", kindForbidden, regV4, "AMT", "RFC 7450"),
	r("192.88.99.0/24", kindForbidden, regV4, "Deprecated (6to4 Relay Anycast)", "RFC 7526"),
	r("192.88.99.2/32", kindForbidden, regV4, "6a44-relay anycast address", "RFC 6751"),
	r("192.168.0.0/16", kindPrivate, regV4, "Private-Use", "RFC 1918"),
	r("192.175.48.0/24", kindForbidden, regV4, "Direct Delegation AS112 Service", "RFC 7534"),
	r("198.18.0.0/15", kindForbidden, regV4, "Benchmarking", "RFC 2544"),
	r("198.51.100.0/24", kindForbidden, regV4, "Documentation (TEST-NET-2)", "RFC 5737"),
	r("203.0.113.0/24", kindForbidden, regV4, "Documentation (TEST-NET-3)", "RFC 5737"),
	r("240.0.0.0/4", kindForbidden, regV4, "Reserved", "RFC 1112"),
	r("255.255.255.255/32", kindForbidden, regV4, "Limited Broadcast", "RFC 8190"),

	// IANA IPv4 Multicast Address Space.
	r("224.0.0.0/4", kindForbidden, regV4Mcast, "Multicast", "RFC 5771"),

	// IANA IPv6 Special-Purpose Address Registry.
	r("::1/128", kindForbidden, regV6, "Loopback Address", "RFC 4291"),
	r("::/128", kindForbidden, regV6, "Unspecified Address", "RFC 4291"),
	r("::ffff:0:0/96", kindEmbedsIPv4, regV6, "IPv4-mapped Address", "RFC 4291"),
	r("64:ff9b::/96", kindEmbedsIPv4, regV6, "IPv4-IPv6 Translat.", "RFC 6052"),
	r("64:ff9b:1::/48", kindEmbedsIPv4, regV6, "IPv4-IPv6 Translat.", "RFC 8215"),
	r("100::/64", kindForbidden, regV6, "Discard-Only Address Block", "RFC 6666"),
	r("100:0:0:1::/64", kindForbidden, regV6, "Dummy IPv6 Prefix", "RFC 9780"),
	r("2001::/23", kindForbidden, regV6, "IETF Protocol Assignments", "RFC 2928"),
	r("2001::/32", kindEmbedsIPv4, regV6, "TEREDO", "RFC 4380"),
	r("2001:1::1/128", kindForbidden, regV6, "Port Control Protocol Anycast", "RFC 7723"),
	r("2001:1::2/128", kindForbidden, regV6, "Traversal Using Relays around NAT Anycast", "RFC 8155"),
	r("2001:1::3/128", kindForbidden, regV6, "DNS-SD Service Registration Protocol Anycast", "RFC 9665"),
	r("2001:2::/48", kindForbidden, regV6, "Benchmarking", "RFC 5180"),
	r("2001:3::/32", kindForbidden, regV6, "AMT", "RFC 7450"),
	r("2001:4:112::/48", kindForbidden, regV6, "AS112-v6", "RFC 7535"),
	r("2001:10::/28", kindForbidden, regV6, "Deprecated (previously ORCHID)", "RFC 4843"),
	r("2001:20::/28", kindForbidden, regV6, "ORCHIDv2", "RFC 7343"),
	r("2001:30::/28", kindForbidden, regV6, "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374"),
	r("2001:db8::/32", kindForbidden, regV6, "Documentation", "RFC 3849"),
	r("2002::/16", kindEmbedsIPv4, regV6, "6to4", "RFC 3056"),
	r("2620:4f:8000::/48", kindForbidden, regV6, "Direct Delegation AS112 Service", "RFC 7534"),
	r("3fff::/20", kindForbidden, regV6, "Documentation", "RFC 9637"),
	r("5f00::/16", kindForbidden, regV6, "Segment Routing (SRv6) SIDs", "RFC 9602"),
	r("fc00::/7", kindPrivate, regV6, "Unique-Local", "RFC 4193"),
	r("fe80::/10", kindForbidden, regV6, "Link-Local Unicast", "RFC 4291"),

	// IPv6 forms embedding IPv4 that the special-purpose registry does not list.
	r("::/96", kindEmbedsIPv4, regEmbedded, "IPv4-compatible Address (deprecated)", "RFC 4291 2.5.5.1"),
	r("::ffff:0:0:0/96", kindEmbedsIPv4, regEmbedded, "IPv4-translated Address", "RFC 2765"),

	// IANA IPv6 Address Space: everything outside global unicast 2000::/3 that no entry
	// above covers more specifically.
	r("::/8", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("100::/8", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("200::/7", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4048"),
	r("400::/6", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("800::/5", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("1000::/4", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("4000::/3", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("6000::/3", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("8000::/3", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("a000::/3", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("c000::/3", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("e000::/4", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("f000::/5", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("f800::/6", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("fe00::/9", kindForbidden, regV6Space, "Reserved by IETF", "RFC 4291"),
	r("fec0::/10", kindForbidden, regV6Space, "Reserved by IETF (deprecated site-local)", "RFC 3879"),
	r("ff00::/8", kindForbidden, regV6Space, "Multicast", "RFC 4291"),

	// Cloud instance endpoints. Most lie in ranges refused above; the entries make the
	// refusal say what they are, and keep them refused if a policy allows their range.
	r("169.254.169.254/32", kindMetadata, regCloud, "instance metadata service (AWS, GCP, Azure, and others)", "vendor documentation"),
	r("169.254.170.2/32", kindMetadata, regCloud, "AWS ECS task metadata and credentials", "vendor documentation"),
	r("169.254.170.23/32", kindMetadata, regCloud, "AWS EKS Pod Identity agent", "vendor documentation"),
	r("fd00:ec2::254/128", kindMetadata, regCloud, "AWS instance metadata service over IPv6", "vendor documentation"),
	r("fd00:ec2::23/128", kindMetadata, regCloud, "AWS EKS Pod Identity agent over IPv6", "vendor documentation"),
	r("100.100.100.200/32", kindMetadata, regCloud, "Alibaba Cloud instance metadata service", "vendor documentation"),
	r("168.63.129.16/32", kindMetadata, regCloud, "Azure WireServer host agent", "vendor documentation"),
	r("192.0.0.192/32", kindMetadata, regCloud, "Oracle Cloud instance metadata service", "vendor documentation"),
}

// lookupRange returns the most specific table entry that contains a, if any. a carries no zone.
func lookupRange(a netip.Addr) (specialRange, bool) {
	var best specialRange
	found := false
	for _, e := range specialRanges {
		if e.prefix.Contains(a) && (!found || e.prefix.Bits() > best.prefix.Bits()) {
			best, found = e, true
		}
	}
	return best, found
}

// AddrRule returns "" when a may be connected to under h, or the rule it breaks, by the table
// above: the IANA special-purpose ranges, multicast, reserved IPv6 space, every IPv6 form that
// embeds an IPv4 address (a is not unmapped first) and cloud instance endpoints are refused
// whatever h says, and a private address passes only where h.AllowPrivate contains it. An
// address with a zone, or the zero Addr, is refused. It is the check the egress proxy applies
// to every address a name resolves to; the rule never contains the address.
func AddrRule(a netip.Addr, h Host) string { return addrRule(a, h) }

// addrRule returns "" when a may be named by a network intent under h, or the rule it breaks.
// a must carry no zone.
func addrRule(a netip.Addr, h Host) string {
	if !a.IsValid() || a.Zone() != "" {
		return ruleHostZone
	}
	e, ok := lookupRange(a)
	if !ok {
		if a.Is6() && !globalUnicast6.Contains(a) {
			// Unreachable while the table covers all of the IPv6 space outside 2000::/3;
			// kept so that a gap in the table fails closed.
			return ruleOutsideGlobal6
		}
		return ""
	}
	if e.kind == kindPrivate {
		for _, p := range h.AllowPrivate {
			if p.IsValid() && p.Contains(a) {
				return ""
			}
		}
	}
	return e.rule()
}

// rule is what a refusal by e says: the registry and its name for the range.
func (e specialRange) rule() string {
	switch e.kind {
	case kindPrivate:
		return "must not be a private address (" + e.registry + ": " + e.name + ") unless the host's policy allows it"
	case kindEmbedsIPv4:
		return "must not embed an IPv4 address (" + e.registry + ": " + e.name + ")"
	case kindMetadata:
		return "must not be a cloud instance endpoint (" + e.name + ")"
	default:
		return "must not be a special-purpose address (" + e.registry + ": " + e.name + ")"
	}
}

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

const ruleOutsideGlobal6 = "must not be outside IPv6 global unicast (" + regV6Space + ")"

// Special names. Names are compared exactly (they are lowercase ASCII by then), and a zone
// matches itself and every name under it.

// specialZones are the special-use and private-use domains: nothing under them is a public
// destination. example.com, example.net and example.org are in the special-use registry too,
// but they resolve publicly and are ordinary test names, so they are not refused.
var specialZones = []string{
	"localhost",            // RFC 6761 (IANA Special-Use Domain Names)
	"test",                 // RFC 6761
	"invalid",              // RFC 6761
	"example",              // RFC 6761
	"local",                // RFC 6762, multicast DNS
	"onion",                // RFC 7686
	"alt",                  // RFC 9476
	"internal",             // ICANN private-use TLD (2024); also every cloud's internal DNS
	"arpa",                 // infrastructure: home.arpa (RFC 8375), in-addr.arpa, ip6.arpa, ipv4only.arpa (RFC 8880), resolver.arpa (RFC 9462), service.arpa
	"localdomain",          // the conventional /etc/hosts alias of loopback (localhost.localdomain); never delegated
	"svc",                  // Kubernetes in-cluster service names (kubernetes.default.svc); never a delegated TLD
	"home", "corp", "mail", // name-collision TLDs ICANN will not delegate (board resolution 2018.02.04.12)
}

// metadataNames are cloud instance endpoints and in-cluster API names, exactly.
var metadataNames = []string{
	"metadata",                     // GCP short name
	"metadata.google.internal",     // GCP (also under .internal)
	"metadata.goog",                // GCP
	"metadata.azure.com",           // listed defensively; Azure's endpoint is an address
	"metadata.azure.internal",      // listed defensively
	"instance-data",                // AWS short name
	"instance-data.ec2.internal",   // AWS (also under .internal)
	"metadata.tencentyun.com",      // Tencent Cloud
	"metadata.packet.net",          // Equinix Metal (legacy)
	"metadata.platformequinix.com", // Equinix Metal
	"kubernetes",                   // Kubernetes API in-cluster
	"kubernetes.default",
	"kubernetes.default.svc",
	"kubernetes.default.svc.cluster.local",
}

// nameSpecialRule returns the rule a lowercase DNS name breaks by being special, or "".
func nameSpecialRule(name string) string {
	for _, m := range metadataNames {
		if name == m {
			return ruleHostMetadataName
		}
	}
	for _, z := range specialZones {
		if name == z || strings.HasSuffix(name, "."+z) {
			return ruleHostSpecialName
		}
	}
	return ""
}
