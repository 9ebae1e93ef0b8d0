package intent

import (
	"net/netip"
	"strings"
)

// The rules a network intent can break. None contains any part of the value checked.
const (
	ruleHostEmpty        = "must not be empty"
	ruleHostLength       = "must be at most 253 bytes"
	ruleHostASCII        = "must be ASCII: an internationalized name is written in its xn-- (punycode) form"
	ruleHostSpace        = "must not contain whitespace or control characters"
	ruleHostScheme       = "must not have a scheme"
	ruleHostUserinfo     = "must not have userinfo"
	ruleHostPath         = "must not have a path, query or fragment"
	ruleHostWildcard     = "must not be a wildcard"
	ruleHostZone         = "must not contain a zone or percent-encoding"
	ruleHostBrackets     = "must not have brackets: an IPv6 literal is written bare"
	ruleHostTrailingDot  = "must not end with a dot"
	ruleHostPort         = "must not have a port: the port is its own field"
	ruleHostMalformed    = "must be an exact DNS name or a canonical IP literal"
	ruleIPv6Canonical    = "must be an IPv6 literal in RFC 5952 canonical form (lowercase hexadecimal, no leading zeros in a group, the longest run of two or more zero groups compressed)"
	ruleIPv4Numeric      = "must not be a numeric spelling of an IPv4 address: an IPv4 literal is canonical dotted-quad decimal without leading zeros"
	ruleHostUpper        = "must be lowercase"
	ruleHostChars        = "must consist of labels of letters a-z, digits and hyphens separated by dots"
	ruleHostEmptyLabel   = "must not have an empty label"
	ruleHostLabelLength  = "must have labels of at most 63 bytes"
	ruleHostLabelHyphen  = "must not have a label that starts or ends with a hyphen"
	ruleHostTwoLabels    = "must have at least two labels"
	ruleHostNumericLabel = "must not end in a numeric label (a URL parser reads it as an IPv4 address)"
	ruleHostSpecialName  = "must not be a special-use or private-use domain name (IANA Special-Use Domain Names, ICANN private use)"
	ruleHostMetadataName = "must not name a cloud instance endpoint or in-cluster service"
	ruleDenotes          = "; and the address it denotes "
	rulePort             = "must be an integer from 1 to 65535"
)

// HostRule returns "" when host may be the host of a network intent under h, or the rule it
// breaks. A host is an exact lowercase ASCII DNS name or a canonical IP literal:
//
//   - a name has at least two labels of [a-z0-9-], each 1 to 63 bytes and neither starting nor
//     ending with a hyphen, at most 253 bytes in all, no trailing dot, and a last label that is
//     not numeric; punycode (xn--) labels are ASCII and allowed; special-use and private-use
//     names (localhost, .internal, .local, .test, .arpa, ...) and cloud instance endpoints
//     are refused;
//   - an IPv4 literal is dotted-quad decimal without leading zeros, exactly as
//     netip.Addr.String writes it; every other spelling that inet_aton or a URL parser would
//     read as an IPv4 address (2852039166, 0xa9fea9fe, 0251.0376.0251.0376, 127.1) is
//     refused as a numeric spelling;
//   - an IPv6 literal is written bare (no brackets) in RFC 5952 canonical form, exactly as
//     netip.Addr.String writes it, with no zone;
//   - an address must not be in any special-purpose range, embed an IPv4 address, or be a
//     cloud instance endpoint, and may be private only where h.AllowPrivate contains it.
//
// When a value breaks a spelling rule and also denotes a refused address, the rule says both.
func HostRule(host string, h Host) string {
	if host == "" {
		return ruleHostEmpty
	}
	if len(host) > MaxHostBytes {
		return ruleHostLength
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if c >= 0x80 {
			return ruleHostASCII
		}
		if c <= ' ' || c == 0x7f {
			return ruleHostSpace
		}
	}
	switch {
	case strings.Contains(host, "://"):
		return ruleHostScheme
	case strings.Contains(host, "@"):
		return ruleHostUserinfo
	case strings.ContainsAny(host, `/\?#`):
		return ruleHostPath
	case strings.Contains(host, "*"):
		return ruleHostWildcard
	case strings.Contains(host, "%"):
		return ruleHostZone
	case strings.ContainsAny(host, "[]"):
		return ruleHostBrackets
	case strings.HasSuffix(host, "."):
		return ruleHostTrailingDot
	case strings.Contains(host, ":"):
		return ipv6Rule(host, h)
	}
	if a, ok := parseInetAton(host); ok {
		rule := addrRule(a, h)
		if a.String() != host {
			if rule != "" {
				return ruleIPv4Numeric + ruleDenotes + rule
			}
			return ruleIPv4Numeric
		}
		return rule
	}
	return nameRule(host)
}

// ipv6Rule checks a host that contains a colon: an IPv6 literal, or a name or address with a
// port.
func ipv6Rule(host string, h Host) string {
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Is6() || a.Zone() != "" {
		if i := strings.LastIndexByte(host, ':'); i > 0 && !strings.Contains(host[:i], ":") && allDigits(host[i+1:]) {
			return ruleHostPort
		}
		return ruleHostMalformed
	}
	rule := addrRule(a, h)
	if a.String() != host {
		if rule != "" {
			return ruleIPv6Canonical + ruleDenotes + rule
		}
		return ruleIPv6Canonical
	}
	return rule
}

// nameRule checks a host that is neither an IP literal nor a numeric spelling of one.
func nameRule(host string) string {
	for i := 0; i < len(host); i++ {
		c := host[i]
		if 'A' <= c && c <= 'Z' {
			return ruleHostUpper
		}
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return ruleHostChars
		}
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		switch {
		case l == "":
			return ruleHostEmptyLabel
		case len(l) > MaxLabelBytes:
			return ruleHostLabelLength
		case l[0] == '-' || l[len(l)-1] == '-':
			return ruleHostLabelHyphen
		}
	}
	if rule := nameSpecialRule(host); rule != "" {
		return rule
	}
	if numericLabel(labels[len(labels)-1]) {
		return ruleHostNumericLabel
	}
	if len(labels) < 2 {
		return ruleHostTwoLabels
	}
	return ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// PortRule returns "" when port may be the port of a network intent, or the rule it breaks.
func PortRule(port int) string {
	if port < 1 || port > 65535 {
		return rulePort
	}
	return ""
}
