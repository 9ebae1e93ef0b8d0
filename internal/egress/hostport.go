package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/capgate/capgate/internal/intent"
)

// ErrMalformed is the error of every parser of this package: a destination or a header the
// proxy cannot read. Its text names the part and the rule, never the value.
var ErrMalformed = errors.New("malformed")

// HostPort is one destination: a host and a TCP port, in the one spelling the proxy compares.
// The zero HostPort is invalid and equals no destination a call declares.
//
// The host is normalised the way DNS and the URL standard read it, and nothing else: ASCII
// letters are lowercased (DNS names are case-insensitive), one trailing dot is removed (the
// fully qualified form of the same name), and an IPv6 literal is written bare in RFC 5952
// canonical form (netip.Addr.String), so "[2001:DB8:0::1]" and "2001:db8::1" are one host.
// Numeric spellings of IPv4 addresses ("2130706433", "0x7f.1", "127.1", leading zeros) are
// not rewritten into dotted quads, since parsers disagree on them (octal or decimal); they
// stay as written, equal no declared destination, and are refused by the proxy's host rule
// with the address they denote.
type HostPort struct {
	host string
	port uint16
}

// NewHostPort returns the destination host:port. host is a DNS name, an IPv4 literal, or an
// IPv6 literal bare or in brackets (no zone); port is 1 to 65535.
func NewHostPort(host string, port int) (HostPort, error) {
	if port < 1 || port > 65535 {
		return HostPort{}, fmt.Errorf("%w: port: must be an integer from 1 to 65535", ErrMalformed)
	}
	h, rule := normHost(host)
	if rule != "" {
		return HostPort{}, fmt.Errorf("%w: host: %s", ErrMalformed, rule)
	}
	return HostPort{h, uint16(port)}, nil
}

// ParseHostPort reads a CONNECT target in authority form, "host:port" or "[ipv6]:port": the
// port is required and written in decimal without a sign or leading zeros.
func ParseHostPort(s string) (HostPort, error) {
	return parseAuthority(s, 0)
}

// MustParseHostPort is ParseHostPort for literals in code and tests; it panics on an error.
func MustParseHostPort(s string) HostPort {
	hp, err := ParseHostPort(s)
	if err != nil {
		panic(err)
	}
	return hp
}

// parseAuthority reads host[:port] as a URL's authority carries it (userinfo already
// refused). With defaultPort 0 the port is required; otherwise an absent port is defaultPort.
// An empty port after a colon is refused, although URL parsers read it as absent.
func parseAuthority(s string, defaultPort int) (HostPort, error) {
	if len(s) > intent.MaxHostBytes+len("[]:65535")+1 {
		return HostPort{}, fmt.Errorf("%w: host: must be at most %d bytes", ErrMalformed, intent.MaxHostBytes)
	}
	var host, port string
	hasPort := false
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return HostPort{}, fmt.Errorf("%w: host: an opening bracket must be closed", ErrMalformed)
		}
		host = s[:end+1]
		rest := s[end+1:]
		switch {
		case rest == "":
		case rest[0] == ':':
			port, hasPort = rest[1:], true
		default:
			return HostPort{}, fmt.Errorf("%w: host: only a port may follow a bracketed IPv6 literal", ErrMalformed)
		}
	} else {
		i := strings.IndexByte(s, ':')
		if i < 0 {
			host = s
		} else {
			host, port, hasPort = s[:i], s[i+1:], true
			if strings.IndexByte(port, ':') >= 0 {
				return HostPort{}, fmt.Errorf("%w: host: an IPv6 literal must be in brackets", ErrMalformed)
			}
		}
	}
	p := defaultPort
	if hasPort {
		n, ok := parsePort(port)
		if !ok {
			return HostPort{}, fmt.Errorf("%w: port: must be an integer from 1 to 65535 in decimal without leading zeros", ErrMalformed)
		}
		p = n
	} else if defaultPort == 0 {
		return HostPort{}, fmt.Errorf("%w: port: is required", ErrMalformed)
	}
	return NewHostPort(host, p)
}

// parsePort reads 1 to 65535 in decimal, without sign or leading zeros.
func parsePort(s string) (int, bool) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n <= 65535
}

// normHost normalises a host as HostPort says, or returns the rule it breaks. The rules
// never contain the value.
func normHost(s string) (string, string) {
	if s == "" {
		return "", "must not be empty"
	}
	bracketed := strings.HasPrefix(s, "[") || strings.HasSuffix(s, "]")
	if bracketed {
		if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
			return "", "must close the bracket it opens"
		}
		s = s[1 : len(s)-1]
	}
	if bracketed || strings.IndexByte(s, ':') >= 0 {
		if strings.IndexByte(s, '%') >= 0 {
			return "", "must not carry a zone"
		}
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() {
			return "", "must be an IPv6 literal where it has brackets or colons"
		}
		return a.String(), ""
	}
	s = strings.TrimSuffix(s, ".")
	if len(s) == 0 || len(s) > intent.MaxHostBytes {
		return "", "must be 1 to 253 bytes without the trailing dot"
	}
	b := []byte(s)
	label := 0
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			b[i] = c + ('a' - 'A')
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
		case c == '.':
			if label == 0 {
				return "", "must not have an empty label"
			}
			label = -1
		default:
			return "", "must consist of ASCII letters, digits, hyphens and dots"
		}
		label++
		if label > intent.MaxLabelBytes {
			return "", "must have labels of at most 63 bytes"
		}
	}
	if label == 0 {
		return "", "must not have an empty label"
	}
	return string(b), ""
}

// Host returns the normalised host: a DNS name, a dotted-quad IPv4 literal, an IPv6 literal
// without brackets, or, for the zero HostPort, "".
func (hp HostPort) Host() string { return hp.host }

// Port returns the port, or 0 for the zero HostPort.
func (hp HostPort) Port() int { return int(hp.port) }

// IsValid reports whether hp is not the zero HostPort.
func (hp HostPort) IsValid() bool { return hp.port != 0 }

// String returns host:port, with an IPv6 literal in brackets, or "" for the zero HostPort.
// ParseHostPort reads it back to hp.
func (hp HostPort) String() string {
	if !hp.IsValid() {
		return ""
	}
	return hostForURL(hp.host) + ":" + strconv.Itoa(int(hp.port))
}

// MarshalText returns String's form; the zero HostPort marshals as empty text.
func (hp HostPort) MarshalText() ([]byte, error) { return []byte(hp.String()), nil }

// UnmarshalText reads ParseHostPort's form; empty text is the zero HostPort.
func (hp *HostPort) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*hp = HostPort{}
		return nil
	}
	v, err := ParseHostPort(string(b))
	if err != nil {
		return err
	}
	*hp = v
	return nil
}

// addr returns the host as an IP address when it is a literal: an IPv6 literal, or an IPv4
// literal in dotted-quad form (netip reads nothing else as IPv4).
func (hp HostPort) addr() (netip.Addr, bool) {
	a, err := netip.ParseAddr(hp.host)
	return a, err == nil
}

// hostForURL writes a host as a URL's authority does: an IPv6 literal in brackets.
func hostForURL(h string) string {
	if strings.IndexByte(h, ':') >= 0 {
		return "[" + h + "]"
	}
	return h
}

// urlHost is the authority of a URL for hp with the given scheme: the port is left out where
// it is the scheme's default, as a browser writes the Host header.
func urlHost(hp HostPort, scheme string) string {
	if (scheme == "http" && hp.port == 80) || (scheme == "https" && hp.port == 443) {
		return hostForURL(hp.host)
	}
	return hp.String()
}
