package intent

import (
	"net/netip"
	"strings"
	"testing"
)

const (
	wantLoopback  = "must not be a special-purpose address (" + regV4 + ": Loopback)"
	wantLoopback6 = "must not be a special-purpose address (" + regV6 + ": Loopback Address)"
	wantCloud     = "must not be a cloud instance endpoint"
	wantSpecial   = "must not be a special-purpose address"
	wantPrivate   = "must not be a private address"
	wantEmbeds    = "must not embed an IPv4 address"
)

func TestHostRuleAccepted(t *testing.T) {
	allow := Host{AllowPrivate: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/24"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("fd12::/16"),
	}}
	for _, tc := range []struct {
		host string
		h    Host
	}{
		{"api.github.com", Host{}},
		{"xn--80ak6aa92e.com", Host{}}, // punycode is ASCII; the proxy sees exactly this name
		{"2606:4700::6810:84e5", Host{}},
		{"2a00:1450:4001:82a::200e", Host{}},
		{"2606:4700:0:1::1", Host{}}, // a single zero group is not compressed
		{"2606::1:0:0:1:1", Host{}},  // ties: the leftmost run is compressed
		{"1.1.1.1", Host{}},
		{"8.8.8.8", Host{}},
		{"172.32.0.1", Host{}},  // just outside 172.16.0.0/12
		{"100.128.0.1", Host{}}, // just outside 100.64.0.0/10
		{"0xdead.com", Host{}},  // a DNS label may start with 0x
		{"example.com", Host{}}, // special-use by registry, but an ordinary public name
		{"a.b", Host{}},         // the shortest two-label name
		{"a-b.c0", Host{}},      // a last label with a digit is not numeric
		{"github.com.internalx", Host{}},
		{"www.localhost-x.com", Host{}},
		{strings.Repeat("a", 63) + ".com", Host{}},
		{strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61), Host{}}, // 253 bytes
		{"10.0.0.5", allow},
		{"192.168.1.1", allow},
		{"fd12:3456::1", allow},
	} {
		t.Run(tc.host, func(t *testing.T) {
			if rule := HostRule(tc.host, tc.h); rule != "" {
				t.Fatalf("refused: %s", rule)
			}
		})
	}
}

func TestHostRuleRefused(t *testing.T) {
	known := knownHostRules()
	everything := Host{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}
	for _, tc := range []struct {
		name, host string
		h          Host
		want, also string
	}{
		// Cloud metadata in every spelling.
		{"metadata v4", "169.254.169.254", Host{}, wantCloud, ""},
		{"metadata decimal", "2852039166", Host{}, ruleIPv4Numeric, wantCloud},
		{"metadata hex upper", "0xA9FEA9FE", Host{}, ruleIPv4Numeric, wantCloud},
		{"metadata hex", "0xa9fea9fe", Host{}, ruleIPv4Numeric, wantCloud},
		{"metadata hex 0X", "0XA9FEA9FE", Host{}, ruleIPv4Numeric, wantCloud},
		{"metadata octal", "0251.0376.0251.0376", Host{}, ruleIPv4Numeric, wantCloud},
		{"metadata three parts", "169.254.43518", Host{}, ruleIPv4Numeric, wantCloud},
		{"metadata two parts", "169.16689662", Host{}, ruleIPv4Numeric, wantCloud},
		{"metadata padded octal", "0000000251.0376.0251.0376", Host{}, ruleIPv4Numeric, wantCloud},
		{"metadata under allow-all", "169.254.169.254", everything, wantCloud, ""},
		{"ecs", "169.254.170.2", Host{}, wantCloud, ""},
		{"alibaba", "100.100.100.200", Host{}, wantCloud, ""},
		{"aws v6", "fd00:ec2::254", Host{}, wantCloud, ""},
		{"aws v6 under allow-all", "fd00:ec2::254", everything, wantCloud, ""},
		{"aws v6 uncompressed", "fd00:ec2:0:0:0:0:0:254", Host{}, ruleIPv6Canonical, wantCloud},
		{"azure wireserver", "168.63.129.16", Host{}, wantCloud, ""},
		{"oracle", "192.0.0.192", Host{}, wantCloud, ""},
		{"gcp name", "metadata.google.internal", Host{}, ruleHostMetadataName, ""},
		{"gcp short name", "metadata", Host{}, ruleHostMetadataName, ""},
		{"aws name", "instance-data", Host{}, ruleHostMetadataName, ""},
		{"aws name long", "instance-data.ec2.internal", Host{}, ruleHostMetadataName, ""},
		{"tencent", "metadata.tencentyun.com", Host{}, ruleHostMetadataName, ""},
		{"kubernetes", "kubernetes.default.svc", Host{}, ruleHostMetadataName, ""},

		// Loopback.
		{"loopback", "127.0.0.1", Host{}, wantLoopback, ""},
		{"loopback short", "127.1", Host{}, ruleIPv4Numeric, wantLoopback},
		{"loopback hex mixed", "0x7f.1", Host{}, ruleIPv4Numeric, wantLoopback},
		{"loopback octal", "0177.0.0.1", Host{}, ruleIPv4Numeric, wantLoopback},
		{"loopback decimal", "2130706433", Host{}, ruleIPv4Numeric, wantLoopback},
		{"loopback leading zero", "127.0.0.01", Host{}, ruleIPv4Numeric, wantLoopback},
		{"loopback other", "127.254.3.4", Host{}, wantLoopback, ""},
		{"loopback under allow-all", "127.0.0.1", everything, wantLoopback, ""},
		{"localhost", "localhost", Host{}, ruleHostSpecialName, ""},
		{"localhost upper", "LOCALHOST", Host{}, ruleHostUpper, ""},
		{"under localhost", "api.localhost", Host{}, ruleHostSpecialName, ""},
		{"localdomain", "localhost.localdomain", Host{}, ruleHostSpecialName, ""},
		{"v6 loopback", "::1", Host{}, wantLoopback6, ""},
		{"v6 loopback long", "0:0:0:0:0:0:0:1", Host{}, ruleIPv6Canonical, wantLoopback6},
		{"v6 loopback under allow-all", "::1", everything, wantLoopback6, ""},

		// IPv6 forms that embed IPv4.
		{"mapped dotted", "::ffff:127.0.0.1", Host{}, wantEmbeds, "IPv4-mapped"},
		{"mapped hex", "::ffff:7f00:1", Host{}, ruleIPv6Canonical, "IPv4-mapped"},
		{"mapped public", "::ffff:1.1.1.1", Host{}, wantEmbeds, "IPv4-mapped"},
		{"compatible", "::127.0.0.1", Host{}, ruleIPv6Canonical, "IPv4-compatible"},
		{"compatible canonical", "::7f00:1", Host{}, wantEmbeds, "IPv4-compatible"},
		{"translated", "::ffff:0:7f00:1", Host{}, wantEmbeds, "IPv4-translated"},
		{"nat64", "64:ff9b::7f00:1", Host{}, wantEmbeds, "Translat."},
		{"nat64 dotted", "64:ff9b::127.0.0.1", Host{}, ruleIPv6Canonical, "Translat."},
		{"nat64 local", "64:ff9b:1::a9fe:a9fe", Host{}, wantEmbeds, "Translat."},
		{"6to4", "2002:7f00:1::", Host{}, wantEmbeds, "6to4"},
		{"teredo", "2001:0:4136:e378:8000:63bf:3fff:fdd2", Host{}, wantEmbeds, "TEREDO"},

		// IPv6 spelling.
		{"zone", "fe80::1%eth0", Host{}, ruleHostZone, ""},
		{"brackets", "[::1]", Host{}, ruleHostBrackets, ""},
		{"brackets global", "[2606:4700::6810:84e5]", Host{}, ruleHostBrackets, ""},
		{"brackets port", "[2606:4700::6810:84e5]:443", Host{}, ruleHostBrackets, ""},
		{"v6 upper", "2001:DB8::1", Host{}, ruleIPv6Canonical, "Documentation"},
		{"v6 leading zero", "2001:0db8::1", Host{}, ruleIPv6Canonical, "Documentation"},
		{"v6 not compressed", "2001:db8:0:0:1:0:0:1", Host{}, ruleIPv6Canonical, "Documentation"},
		{"global upper", "2606:4700::6810:84E5", Host{}, ruleIPv6Canonical, ""},
		{"global leading zero", "2606:4700::0810:84e5", Host{}, ruleIPv6Canonical, ""},
		{"global not compressed", "2606:4700:0:0:0:0:6810:84e5", Host{}, ruleIPv6Canonical, ""},
		{"global single group compressed", "2606:4700:1:1:1:1::1", Host{}, ruleIPv6Canonical, ""},
		{"global rightmost tie", "2606:0:0:1::1:1", Host{}, ruleIPv6Canonical, ""},
		{"global dotted tail", "2606:4700::1.1.1.1", Host{}, ruleIPv6Canonical, ""},
		{"double compression", "2606::1::1", Host{}, ruleHostMalformed, ""},
		{"five digit group", "2606:47000::1", Host{}, ruleHostMalformed, ""},

		// IPv6 special-purpose.
		{"v6 unspecified", "::", Host{}, wantSpecial, "Unspecified"},
		{"v6 link-local", "fe80::1", Host{}, wantSpecial, "Link-Local"},
		{"v6 multicast", "ff02::1", Host{}, wantSpecial, "Multicast"},
		{"v6 site-local", "fec0::1", Host{}, wantSpecial, "site-local"},
		{"v6 discard", "100::1", Host{}, wantSpecial, "Discard"},
		{"v6 documentation 3fff", "3fff::1", Host{}, wantSpecial, "Documentation"},
		{"v6 srv6", "5f00::1", Host{}, wantSpecial, "SRv6"},
		{"v6 reserved", "4000::1", Host{}, wantSpecial, "Reserved by IETF"},
		{"v6 ula", "fd12:3456::1", Host{}, wantPrivate, "Unique-Local"},
		{"v6 ula outside allowed", "fd99::1", Host{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("fd12::/16")}}, wantPrivate, ""},

		// IPv4 special-purpose and private.
		{"this host", "0.0.0.0", Host{}, wantSpecial, "This host"},
		{"this network", "0.1.2.3", Host{}, wantSpecial, "This network"},
		{"broadcast", "255.255.255.255", Host{}, wantSpecial, "Limited Broadcast"},
		{"multicast", "224.0.0.1", Host{}, wantSpecial, "Multicast"},
		{"reserved", "240.0.0.1", Host{}, wantSpecial, "Reserved"},
		{"link-local", "169.254.1.1", Host{}, wantSpecial, "Link Local"},
		{"shared", "100.64.0.1", Host{}, wantSpecial, "Shared Address Space"},
		{"shared under allow-all", "100.64.0.1", everything, wantSpecial, "Shared Address Space"},
		{"test-net-1", "192.0.2.1", Host{}, wantSpecial, "TEST-NET-1"},
		{"test-net-2", "198.51.100.1", Host{}, wantSpecial, "TEST-NET-2"},
		{"test-net-3", "203.0.113.1", Host{}, wantSpecial, "TEST-NET-3"},
		{"benchmarking", "198.18.0.1", Host{}, wantSpecial, "Benchmarking"},
		{"ietf", "192.0.0.1", Host{}, wantSpecial, "IPv4 Service Continuity"},
		{"private 10", "10.0.0.5", Host{}, wantPrivate, ""},
		{"private 10 outside allowed", "10.0.1.5", Host{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}}, wantPrivate, ""},
		{"private 172", "172.16.0.1", Host{}, wantPrivate, ""},
		{"private 192", "192.168.77.77", Host{}, wantPrivate, ""},
		{"private allowed by v6 prefix only", "10.0.0.5", Host{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("::/0")}}, wantPrivate, ""},
		{"private allowed by zero prefix", "10.0.0.5", Host{AllowPrivate: []netip.Prefix{{}}}, wantPrivate, ""},
		{"private numeric", "167772165", Host{}, ruleIPv4Numeric, wantPrivate},

		// Numeric spellings of public addresses and numeric last labels.
		{"leading zero", "01.1.1.1", Host{}, ruleIPv4Numeric, ""},
		{"decimal public", "16843009", Host{}, ruleIPv4Numeric, ""},
		{"hex alone", "0x", Host{}, ruleIPv4Numeric, "This host"},
		{"zero", "0", Host{}, ruleIPv4Numeric, "This host"},
		{"five parts", "1.2.3.4.5", Host{}, ruleHostNumericLabel, ""},
		{"byte overflow", "256.1.1.1", Host{}, ruleHostNumericLabel, ""},
		{"overflow", "4294967296", Host{}, ruleHostNumericLabel, ""},
		{"long overflow", "99999999999999999999999999999", Host{}, ruleHostNumericLabel, ""},
		{"hex overflow", "0x100000000", Host{}, ruleHostNumericLabel, ""},
		{"bad octal", "08.1.1.1", Host{}, ruleHostNumericLabel, ""},
		{"numeric tld", "github.123", Host{}, ruleHostNumericLabel, ""},
		{"hex tld", "github.0x1f", Host{}, ruleHostNumericLabel, ""},
		{"hex tld empty", "github.0x", Host{}, ruleHostNumericLabel, ""},

		// Not a bare host.
		{"trailing dot", "api.github.com.", Host{}, ruleHostTrailingDot, ""},
		{"trailing dot ip", "1.1.1.1.", Host{}, ruleHostTrailingDot, ""},
		{"wildcard", "*.github.com", Host{}, ruleHostWildcard, ""},
		{"scheme", "https://api.github.com", Host{}, ruleHostScheme, ""},
		{"port", "api.github.com:443", Host{}, ruleHostPort, ""},
		{"ip port", "1.1.1.1:443", Host{}, ruleHostPort, ""},
		{"colon", "api.github.com:https", Host{}, ruleHostMalformed, ""},
		{"userinfo", "user@api.github.com", Host{}, ruleHostUserinfo, ""},
		{"path", "api.github.com/x", Host{}, ruleHostPath, ""},
		{"query", "api.github.com?x=1", Host{}, ruleHostPath, ""},
		{"fragment", "api.github.com#x", Host{}, ruleHostPath, ""},
		{"backslash", `api.github.com\x`, Host{}, ruleHostPath, ""},
		{"percent", "api%2egithub.com", Host{}, ruleHostZone, ""},
		{"percent ip", "%31%32%37.0.0.1", Host{}, ruleHostZone, ""},
		{"trailing space", "1.1.1.1 ", Host{}, ruleHostSpace, ""},
		{"inner space", "api. github.com", Host{}, ruleHostSpace, ""},
		{"tab", "api.github.com\t", Host{}, ruleHostSpace, ""},
		{"nul", "api.github.com\x00.evil.com", Host{}, ruleHostSpace, ""},
		{"del", "api.github\x7f.com", Host{}, ruleHostSpace, ""},
		{"cyrillic", "\u0430pi.github.com", Host{}, ruleHostASCII, ""},
		{"fullwidth dot", "api\uff0egithub.com", Host{}, ruleHostASCII, ""},
		{"invalid utf8", "api.github\xff.com", Host{}, ruleHostASCII, ""},
		{"upper", "Api.GitHub.com", Host{}, ruleHostUpper, ""},
		{"underscore", "api_x.github.com", Host{}, ruleHostChars, ""},
		{"comma", "api,github.com", Host{}, ruleHostChars, ""},
		{"empty", "", Host{}, ruleHostEmpty, ""},
		{"too long", strings.Repeat("a", 60) + "." + strings.Repeat("b", 60) + "." + strings.Repeat("c", 60) + "." + strings.Repeat("d", 60) + "." + strings.Repeat("e", 60) + ".com", Host{}, ruleHostLength, ""},
		{"empty label", "api..github.com", Host{}, ruleHostEmptyLabel, ""},
		{"leading dot", ".github.com", Host{}, ruleHostEmptyLabel, ""},
		{"long label", strings.Repeat("q", 64) + ".com", Host{}, ruleHostLabelLength, ""},
		{"leading hyphen", "-api.github.com", Host{}, ruleHostLabelHyphen, ""},
		{"trailing hyphen", "api-.github.com", Host{}, ruleHostLabelHyphen, ""},
		{"one label", "github", Host{}, ruleHostTwoLabels, ""},

		// Special-use and private-use names.
		{"internal", "vault.corp.internal", Host{}, ruleHostSpecialName, ""},
		{"local", "printer.local", Host{}, ruleHostSpecialName, ""},
		{"home arpa", "router.home.arpa", Host{}, ruleHostSpecialName, ""},
		{"reverse v4", "1.0.0.127.in-addr.arpa", Host{}, ruleHostSpecialName, ""},
		{"reverse v6", "1.0.ip6.arpa", Host{}, ruleHostSpecialName, ""},
		{"onion", "duckduckgogg42xjoc72x3sjasowoarfbgcmvfimaftt6twagswzczad.onion", Host{}, ruleHostSpecialName, ""},
		{"test", "api.test", Host{}, ruleHostSpecialName, ""},
		{"invalid", "api.invalid", Host{}, ruleHostSpecialName, ""},
		{"example tld", "api.example", Host{}, ruleHostSpecialName, ""},
		{"alt", "api.alt", Host{}, ruleHostSpecialName, ""},
		{"k8s service", "vault.security.svc", Host{}, ruleHostSpecialName, ""},
		{"k8s cluster", "vault.security.svc.cluster.local", Host{}, ruleHostSpecialName, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertRefusal(t, tc.host, HostRule(tc.host, tc.h), tc.want, tc.also, known)
		})
	}
}

func TestPortRule(t *testing.T) {
	for _, port := range []int{1, 80, 443, 65535} {
		if rule := PortRule(port); rule != "" {
			t.Errorf("PortRule(%d) = %q, want accepted", port, rule)
		}
	}
	for _, port := range []int{0, -1, -443, 65536, 1 << 31, -1 << 63} {
		if rule := PortRule(port); rule != rulePort {
			t.Errorf("PortRule(%d) = %q, want %q", port, rule, rulePort)
		}
	}
}

// Every IPv6 address outside global unicast 2000::/3 must meet an entry of the table, so the
// fail-closed fallback in addrRule is never what refuses it.
func TestSpecialRangesCoverIPv6Space(t *testing.T) {
	for first := 0; first < 1<<16; first += 1 << 4 {
		var b [16]byte
		b[0], b[1], b[15] = byte(first>>8), byte(first), 1
		a := netip.AddrFrom16(b)
		if globalUnicast6.Contains(a) {
			continue
		}
		if _, ok := lookupRange(a); !ok {
			t.Errorf("%s is outside 2000::/3 and matches no table entry", a)
		}
	}
}

// Every entry must be masked (its address is the start of its range), name its registry and
// give its reference, and the lookup must pick the most specific of overlapping entries.
func TestSpecialRangesWellFormed(t *testing.T) {
	for _, e := range specialRanges {
		if e.prefix.Masked() != e.prefix {
			t.Errorf("%s is not masked", e.prefix)
		}
		if e.registry == "" || e.name == "" || e.ref == "" {
			t.Errorf("%s lacks a registry, name or reference", e.prefix)
		}
		got, ok := lookupRange(e.prefix.Addr())
		if !ok || got.prefix.Bits() < e.prefix.Bits() {
			t.Errorf("lookup of %s found %v", e.prefix, got.prefix)
		}
	}
	for _, tc := range []struct{ addr, name string }{
		{"169.254.169.254", "instance metadata service (AWS, GCP, Azure, and others)"},
		{"0.0.0.0", "This host on this network"},
		{"192.0.0.170", "NAT64/DNS64 Discovery"},
		{"2001:1::1", "Port Control Protocol Anycast"},
		{"2001::1", "TEREDO"},
		{"::1", "Loopback Address"},
		{"::", "Unspecified Address"},
	} {
		if got, _ := lookupRange(netip.MustParseAddr(tc.addr)); got.name != tc.name {
			t.Errorf("lookup of %s = %q, want %q", tc.addr, got.name, tc.name)
		}
	}
}
