package web

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// hosts is the set of Host header values the page answers under, besides loopback ones: the
// names lowercased, the addresses in netip's form. It is never changed after New.
type hosts struct {
	names map[string]bool
	addrs map[netip.Addr]bool
}

// newHosts builds the set from Options.AllowedHosts. An entry is a host name or an address,
// without port; an IPv6 address may be in brackets. An entry that is neither (holds a port, a
// path, spaces, a zone) is left out and reported in bad, by index.
func newHosts(allowed []string) (h hosts, bad []int) {
	h = hosts{names: map[string]bool{}, addrs: map[netip.Addr]bool{}}
	for i, e := range allowed {
		e = strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")
		if a, err := netip.ParseAddr(e); err == nil && a.Zone() == "" {
			h.addrs[a] = true
			continue
		}
		if !hostName(e) {
			bad = append(bad, i)
			continue
		}
		h.names[strings.ToLower(e)] = true
	}
	return h, bad
}

// ValidAllowedHost reports whether s can be an entry of Options.AllowedHosts: a host name or
// an address (IPv6 in brackets or not), without port, path or zone. Callers that take entries
// from an operator check them with it, to refuse a mistyped one rather than ignore it.
func ValidAllowedHost(s string) bool {
	_, bad := newHosts([]string{s})
	return len(bad) == 0
}

// hostName reports whether s has the form of a DNS host name: labels of letters, digits and
// hyphens (underscores too, as some local names use them), separated by single dots, with no
// trailing dot.
func hostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// allows reports whether the page answers a request whose Host header is hostport: a
// loopback name or address, or one of the allowed hosts, with any port or none.
//
// This is the defence against DNS rebinding: a web site whose name the attacker rebinds to
// 127.0.0.1 reaches this server from the person's browser, but with its own name in Host.
// So the rules are strict rather than lenient, and a spelling the browser never sends is
// refused: "localhost" in any case, but not "localhost." (a trailing dot is another origin)
// nor any name under it ("localhost.attacker.example"); an IPv4 address only in dotted
// decimal (127.0.0.0/8); an IPv6 address only in brackets (::1, or ::ffff:127.x.y.z, the
// same loopback mapped); no zone; an empty Host never.
func (h hosts) allows(hostport string) bool {
	host, ok := splitHost(hostport)
	if !ok || host == "" {
		return false
	}
	bracketed := strings.HasPrefix(host, "[")
	if bracketed {
		host = host[1 : len(host)-1]
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" || a.Is6() != bracketed {
			return false
		}
		return a.Unmap().IsLoopback() || h.addrs[a]
	}
	if bracketed || !hostName(host) {
		return false
	}
	name := strings.ToLower(host)
	return name == "localhost" || h.names[name]
}

// splitHost returns the host of a Host header value, brackets kept, checking that a port,
// when there is one, is decimal digits.
func splitHost(hostport string) (string, bool) {
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", false
		}
		host, rest := hostport[:end+1], hostport[end+1:]
		if rest == "" {
			return host, true
		}
		port, ok := strings.CutPrefix(rest, ":")
		return host, ok && digits(port)
	}
	if strings.Count(hostport, ":") > 1 {
		return "", false // an IPv6 address without brackets
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport, !strings.Contains(hostport, ":")
	}
	return host, digits(port)
}

// digits reports whether s is 1 to 5 decimal digits.
func digits(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkHost refuses, with 421 and a plain sentence, every request whose Host is not one the
// page answers under, before anything else looks at it.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.allows(r.Host) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusMisdirectedRequest)
			// The refused Host is not echoed: it is the attacker's text.
			w.Write([]byte("capgate's approval page answers only at a loopback address (localhost, 127.0.0.1, [::1]) " +
				"or a host the operator allowed; this request named another host, as a web site rebinding its name to this " +
				"address would. Open the login link capgate serve printed.\n"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CheckHost is the page's Host check for another handler on the same listener (the metrics):
// a request under any Host but loopback and the operator's is refused with 421.
func (s *Server) CheckHost(next http.Handler) http.Handler { return s.checkHost(next) }
