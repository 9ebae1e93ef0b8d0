package intent

import (
	"math/big"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzHostRule: HostRule never panics; every refusal is one of the package's fixed rules; and
// whatever it accepts is accepted again, is lowercase ASCII of [a-z0-9.:-], is not read as an
// IPv4 address by inet_aton unless written canonically, and, if netip parses it, is exactly
// netip's canonical spelling of an address that no table entry refuses.
func FuzzHostRule(f *testing.F) {
	for _, s := range []string{
		"api.github.com", "2852039166", "0xA9FEA9FE", "0251.0376.0251.0376", "169.254.43518",
		"127.1", "::1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::", "fe80::1%eth0",
		"[::1]", "2001:DB8::1", "2606:4700::6810:84e5", "xn--80ak6aa92e.com", "10.0.0.5",
		"1.1.1.1", "01.1.1.1", "0x7f.1", "0xdead.com", "github.0x1f", "a.b", "::", "1.1.1.1:80",
	} {
		f.Add(s)
	}
	known := knownHostRules()
	private := Host{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fc00::/7")}}
	f.Fuzz(func(t *testing.T, host string) {
		for _, h := range []Host{{}, private} {
			rule := HostRule(host, h)
			if rule != "" {
				if !known[rule] {
					t.Fatalf("HostRule(%q) = %q, not a fixed rule", host, rule)
				}
				continue
			}
			if again := HostRule(host, h); again != "" {
				t.Fatalf("HostRule(%q) accepted, then refused: %s", host, again)
			}
			for i := 0; i < len(host); i++ {
				c := host[i]
				if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == ':' || c == '-') {
					t.Fatalf("accepted %q with byte %q", host, c)
				}
			}
			if a, ok := parseInetAton(host); ok && a.String() != host {
				t.Fatalf("accepted %q, a numeric spelling of %s", host, a)
			}
			if a, err := netip.ParseAddr(host); err == nil {
				if a.String() != host {
					t.Fatalf("accepted %q, but its canonical form is %q", host, a.String())
				}
				if e, ok := lookupRange(a); ok && e.kind != kindPrivate {
					t.Fatalf("accepted %q in %s", host, e.prefix)
				}
				if a.Is6() && !globalUnicast6.Contains(a) && !netip.MustParsePrefix("fc00::/7").Contains(a) {
					t.Fatalf("accepted %q outside global unicast", host)
				}
			}
		}
	})
}

// FuzzPathRule: PathRule never panics; every refusal is one of the package's fixed rules; and
// whatever it accepts is valid UTF-8 in NFC, absolute, clean (path.Clean leaves it unchanged),
// inside the root and outside the protected mount.
func FuzzPathRule(f *testing.F) {
	for _, s := range []string{
		"/sandbox/data", "/sandbox", "/sandbox/../etc", "/sandbox/./x", "/sandbox//x", "/sandbox/x/",
		"/sandboxed/x", "/etc/passwd", "relative/x", "/sandbox/e\u0301", "/sandbox/\u00e9",
		"/sandbox/a\u202eb", "/sandbox/a\x00b", "/sandbox/.capgate/x", "/sandbox/.capgate-x", "/",
		"/sandbox/..", "/sandbox/a\\..\\b",
	} {
		f.Add(s)
	}
	known := knownPathRules()
	hosts := []Host{
		{Protected: []string{"/sandbox/.capgate"}},
		{SandboxRoot: "/srv/box", Protected: []string{"/srv/box/.capgate"}},
	}
	f.Fuzz(func(t *testing.T, p string) {
		for _, h := range hosts {
			rule := PathRule(p, h)
			if rule != "" {
				if !known[rule] {
					t.Fatalf("PathRule(%q) = %q, not a fixed rule", p, rule)
				}
				continue
			}
			root, _ := h.root()
			switch {
			case !utf8.ValidString(p) || !norm.NFC.IsNormalString(p):
				t.Fatalf("accepted %q: not NFC UTF-8", p)
			case !strings.HasPrefix(p, "/"):
				t.Fatalf("accepted %q: not absolute", p)
			case path.Clean(p) != p:
				t.Fatalf("accepted %q: not clean", p)
			case p != root && !strings.HasPrefix(p, root+"/"):
				t.Fatalf("accepted %q: outside %s", p, root)
			case p == root+"/.capgate" || strings.HasPrefix(p, root+"/.capgate/"):
				t.Fatalf("accepted %q: inside the protected mount", p)
			case strings.ContainsAny(p, "\x00\\"):
				t.Fatalf("accepted %q: NUL or backslash", p)
			}
		}
	})
}

// FuzzInetAton: parseInetAton never panics and agrees with a reference that reads every part
// with math/big, both on the fuzzed string and on a string built from up to four fuzzed
// numbers, each written in decimal, octal, or hexadecimal (either case of x and digits) with
// extra leading zeros.
func FuzzInetAton(f *testing.F) {
	f.Add("169.254.169.254", uint64(169), uint64(254), uint64(169), uint64(254), uint8(4), uint16(0), uint8(0))
	f.Add("2852039166", uint64(2852039166), uint64(0), uint64(0), uint64(0), uint8(1), uint16(0), uint8(0))
	f.Add("0xA9FEA9FE", uint64(0xa9fea9fe), uint64(0), uint64(0), uint64(0), uint8(1), uint16(2), uint8(3))
	f.Add("0251.0376.0251.0376", uint64(0251), uint64(0376), uint64(0251), uint64(0376), uint8(4), uint16(0x55), uint8(1))
	f.Add("169.254.43518", uint64(169), uint64(254), uint64(43518), uint64(0), uint8(3), uint16(0x1b), uint8(0))
	f.Add("127.1", uint64(127), uint64(1), uint64(0), uint64(0), uint8(2), uint16(0xff), uint8(9))
	f.Add("4294967296", uint64(1<<32), uint64(256), uint64(1<<63), uint64(0), uint8(1), uint16(0), uint8(0))
	f.Add("0x", uint64(0), uint64(0), uint64(0), uint64(0), uint8(0), uint16(0), uint8(0))
	f.Add("08", uint64(255), uint64(255), uint64(65536), uint64(0), uint8(3), uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, s string, p0, p1, p2, p3 uint64, n uint8, forms uint16, zeros uint8) {
		// The fuzzed string.
		got, ok := parseInetAton(s)
		want, wantOK := referenceInetAton(s)
		if ok != wantOK || (ok && got != want) {
			t.Fatalf("parseInetAton(%q) = %v, %v; reference %v, %v", s, got, ok, want, wantOK)
		}

		// A string built from numbers, and the address those numbers make, computed without
		// parsing.
		parts := []uint64{p0, p1, p2, p3}[:1+int(n)%4]
		var b strings.Builder
		for i, v := range parts {
			if i > 0 {
				b.WriteByte('.')
			}
			form := (forms >> (4 * i)) & 0xf
			pad := strings.Repeat("0", int(zeros>>(2*i))&3)
			switch form % 5 {
			case 0:
				b.WriteString(strconv.FormatUint(v, 10)) // decimal has no leading zeros
			case 1:
				b.WriteString("0" + pad + strconv.FormatUint(v, 8))
			case 2:
				b.WriteString("0x" + pad + strconv.FormatUint(v, 16))
			case 3:
				b.WriteString("0X" + pad + strings.ToUpper(strconv.FormatUint(v, 16)))
			case 4:
				if v == 0 {
					b.WriteString("0x") // WHATWG: 0x alone is zero
				} else {
					b.WriteString("0x" + strings.ToUpper(strconv.FormatUint(v, 16)))
				}
			}
		}
		built := b.String()
		got, ok = parseInetAton(built)
		want, wantOK = addrFromParts(parts)
		if ok != wantOK || (ok && got != want) {
			t.Fatalf("parseInetAton(%q) from %v = %v, %v; want %v, %v", built, parts, got, ok, want, wantOK)
		}
	})
}

// referenceInetAton is inet_aton written the slow, obvious way: math/big for every part, and
// a check of each part's bound against the number of parts.
func referenceInetAton(s string) (netip.Addr, bool) {
	fields := strings.Split(s, ".")
	if len(fields) < 1 || len(fields) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]*big.Int, len(fields))
	for i, p := range fields {
		base, digits := 10, p
		switch {
		case p == "":
			return netip.Addr{}, false
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, digits = 16, p[2:]
		case strings.HasPrefix(p, "0"):
			base, digits = 8, p[1:]
		}
		if digits == "" {
			vals[i] = new(big.Int)
			continue
		}
		if strings.ContainsAny(digits, "+-_") { // SetString would accept a sign
			return netip.Addr{}, false
		}
		v, ok := new(big.Int).SetString(digits, base)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	total := new(big.Int)
	for i, v := range vals {
		limit := big.NewInt(256)
		if i == len(vals)-1 {
			limit = new(big.Int).Lsh(big.NewInt(1), uint(8*(5-len(vals))))
		}
		if v.Cmp(limit) >= 0 {
			return netip.Addr{}, false
		}
		if i < len(vals)-1 {
			total.Add(total, new(big.Int).Lsh(v, uint(24-8*i)))
		} else {
			total.Add(total, v)
		}
	}
	var b [4]byte
	total.FillBytes(b[:])
	return netip.AddrFrom4(b), true
}

// addrFromParts is the address inet_aton makes of numeric parts, or false if a part is out of
// bounds.
func addrFromParts(parts []uint64) (netip.Addr, bool) {
	n := len(parts)
	var v uint64
	for i, p := range parts[:n-1] {
		if p > 255 {
			return netip.Addr{}, false
		}
		v |= p << (24 - 8*i)
	}
	last := parts[n-1]
	if last >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
