package sandbox

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Tunnels: a program that knows nothing of proxies (Node's fetch, which ignores HTTP_PROXY,
// a C client, a database driver) still reaches the destinations it declared by name. The
// sandbox's /etc/hosts gives each declared name an address of the sandbox's own loopback, in
// TunnelNet; the init listens there on each declared port and carries every connection it
// accepts to the egress proxy as a CONNECT to the declared name and port, with the sandbox's
// proxy credential. The proxy decides it exactly as it decides the program's own requests
// (the destination held to what was declared, the name resolved once by the proxy, every
// address classified, the connection audited); the init decides nothing. Names the sandbox
// does not map resolve to nothing: the sandbox has no DNS server it can reach.

// Tunnel is a destination a sandboxed program reaches by name, without a proxy of its own.
type Tunnel struct {
	// Host is a DNS name, in any case (it is compared and mapped in lower case). An IP
	// literal or a wildcard is refused: there is no name to map, and such a destination is
	// reached through the proxy variables.
	Host string
	// Port is the destination's port, 1 to 65535.
	Port int
}

// String returns the tunnel as HOST:PORT.
func (t Tunnel) String() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) }

// TunnelNet is the part of the sandbox's loopback where tunnels' names are mapped: inside
// 127.0.0.0/8, which every network namespace routes to its own loopback, and clear of
// 127.0.0.1, where the program's own servers and the proxy's forwarder listen.
var TunnelNet = netip.MustParsePrefix("127.77.0.0/16")

// TunnelName reports whether host can be a Tunnel's Host: a DNS name of letters, digits and
// hyphens in dot-separated labels of at most 63 characters, at most 253 in all, not all
// digits at its end (so no spelling of an IPv4 address passes), and not localhost.
func TunnelName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || len(host) > 253 || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return false
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	// A last label of digits (or 0x...) is how an address is spelt: 127.1, 2130706433, 0x7f.1.
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") {
		return false
	}
	return true
}

// checkTunnels reports the first tunnel of spec that is not usable.
func checkTunnels(spec Spec) error {
	if len(spec.Tunnels) == 0 {
		return nil
	}
	if spec.ProxySocket == "" || spec.ProxyUser == nil {
		return errors.New("sandbox: Tunnels: need ProxySocket and ProxyUser (each tunnel is a CONNECT with the sandbox's credential)")
	}
	if len(spec.Tunnels) > MaxTunnels {
		return fmt.Errorf("sandbox: Tunnels: more than %d", MaxTunnels)
	}
	for i, t := range spec.Tunnels {
		if !TunnelName(t.Host) {
			return fmt.Errorf("sandbox: Tunnels[%d].Host: must be a DNS name (not an address, a wildcard or localhost)", i)
		}
		if t.Port < 1 || t.Port > 65535 {
			return fmt.Errorf("sandbox: Tunnels[%d].Port: must be 1 to 65535", i)
		}
	}
	return nil
}

// tunnelConf is one listener of the init: where it listens, and the CONNECT target.
type tunnelConf struct {
	Listen string `json:"listen"`
	Target string `json:"target"`
}

// planTunnels gives each distinct name of tunnels an address of TunnelNet, in the order they
// come, and returns the init's listeners and the sandbox's /etc/hosts.
func planTunnels(tunnels []Tunnel) ([]tunnelConf, []byte) {
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	addrOf := map[string]netip.Addr{}
	var out []tunnelConf
	seen := map[string]bool{}
	for _, t := range tunnels {
		name := strings.TrimSuffix(strings.ToLower(t.Host), ".")
		a, ok := addrOf[name]
		if !ok {
			n := len(addrOf) + 1
			base := TunnelNet.Addr().As4()
			base[2], base[3] = byte(n>>8), byte(n)
			a = netip.AddrFrom4(base)
			addrOf[name] = a
			hosts += a.String() + "\t" + name + "\n"
		}
		listen := netip.AddrPortFrom(a, uint16(t.Port)).String()
		if seen[listen] {
			continue
		}
		seen[listen] = true
		out = append(out, tunnelConf{Listen: listen, Target: net.JoinHostPort(name, strconv.Itoa(t.Port))})
	}
	return out, []byte(hosts)
}

// proxyAuthorization is the Proxy-Authorization value of user's credential (Basic).
func proxyAuthorization(user *url.Userinfo) string {
	pass, _ := user.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user.Username()+":"+pass))
}

// connectThrough dials the proxy's socket and asks it for a tunnel to target, returning the
// connection once the proxy has answered 200.
func connectThrough(socket, target, auth string) (net.Conn, error) {
	u, err := net.DialTimeout("unix", socket, TunnelHandshakeTimeout)
	if err != nil {
		return nil, err
	}
	_ = u.SetDeadline(time.Now().Add(TunnelHandshakeTimeout))
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\nProxy-Authorization: " + auth + "\r\n\r\n"
	if _, err := u.Write([]byte(req)); err != nil {
		u.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(&limitedConn{Conn: u, left: maxTunnelAnswerBytes}, 4096)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		u.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		u.Close()
		return nil, fmt.Errorf("the proxy answered %s", resp.Status)
	}
	_ = u.SetDeadline(time.Time{})
	if n := br.Buffered(); n > 0 {
		// Bytes of the destination's that came with the answer (a server that speaks first).
		early, _ := br.Peek(n)
		return &prefixedConn{Conn: u, early: append([]byte(nil), early...)}, nil
	}
	return u, nil
}

// limitedConn reads at most left bytes of Conn: the proxy's answer to a CONNECT is bounded.
type limitedConn struct {
	net.Conn
	left int
}

func (l *limitedConn) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errors.New("the proxy's answer is too long")
	}
	if len(p) > l.left {
		p = p[:l.left]
	}
	n, err := l.Conn.Read(p)
	l.left -= n
	return n, err
}

// prefixedConn reads early before the rest of Conn.
type prefixedConn struct {
	net.Conn
	early []byte
}

func (p *prefixedConn) Read(b []byte) (int, error) {
	if len(p.early) > 0 {
		n := copy(b, p.early)
		p.early = p.early[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// CloseWrite passes the half close on to the unix connection underneath.
func (p *prefixedConn) CloseWrite() error {
	if cw, ok := p.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return p.Conn.Close()
}
