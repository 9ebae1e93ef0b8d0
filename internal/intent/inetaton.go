package intent

import (
	"net/netip"
	"strings"
)

// parseInetAton reads s the way BSD inet_aton and the WHATWG URL standard's IPv4 parser read a
// host: one to four parts separated by dots, each decimal, 0x-prefixed hexadecimal (x in
// either case, digits in either case) or 0-prefixed octal. With n parts, the first n-1 are
// bytes and the last fills the remaining 5-n bytes, so "127.1" is 127.0.0.1 and "2852039166" is
// 169.254.169.254. It accepts the union of what the two read: "0x" with no digits is 0
// (WHATWG; glibc refuses it). It does not accept what only one of them tolerates around the
// address — a trailing dot (WHATWG) or trailing whitespace (glibc) — because the host rules
// refuse those before asking.
//
// Every part is read in a uint64 that stops at the first digit taking it past 2^32-1, so a
// part of any length, leading zeros included, is read in linear time without overflow.
func parseInetAton(s string) (netip.Addr, bool) {
	var parts [4]uint64
	n := 0
	for {
		if n == len(parts) {
			return netip.Addr{}, false
		}
		part, rest, more := strings.Cut(s, ".")
		v, ok := parseInetPart(part)
		if !ok {
			return netip.Addr{}, false
		}
		parts[n] = v
		n++
		if !more {
			break
		}
		s = rest
	}
	for i := 0; i < n-1; i++ {
		if parts[i] > 0xff {
			return netip.Addr{}, false
		}
	}
	last := parts[n-1]
	if last >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	var v uint32
	for i := 0; i < n-1; i++ {
		v |= uint32(parts[i]) << (24 - 8*i)
	}
	v |= uint32(last)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseInetPart reads one part: decimal, 0x hexadecimal or 0 octal. It fails on an empty
// part, a digit outside the base, or a value above 2^32-1.
func parseInetPart(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
	case p[0] == '0':
		base, p = 8, p[1:]
	}
	var v uint64
	for i := 0; i < len(p); i++ {
		d, ok := digitValue(p[i])
		if !ok || d >= base {
			return 0, false
		}
		v = v*base + d // v <= 2^32-1 here, so this cannot overflow
		if v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}

func digitValue(c byte) (uint64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0'), true
	case 'a' <= c && c <= 'f':
		return uint64(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return uint64(c-'A') + 10, true
	}
	return 0, false
}

// numericLabel reports whether a label is a number in the WHATWG sense ("ends in a number"):
// all decimal digits, or "0x" followed by hexadecimal digits. A URL parser reads a host whose
// last label is numeric as an IPv4 address (and fails on it), so no name may end in one.
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			if _, ok := digitValue(l[i]); !ok {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}
