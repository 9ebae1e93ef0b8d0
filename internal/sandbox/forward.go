package sandbox

import (
	"io"
	"net"
	"strconv"
)

// The proxy forwarder: in a sandbox with Spec.ProxySocket the init listens on the sandbox's
// own loopback and carries each connection, byte for byte, to the unix socket capgate bound
// into the sandbox (the egress proxy's). The program finds it through HTTP_PROXY and
// HTTPS_PROXY; the forwarder reads nothing of what crosses it, so the proxy, outside, sees
// exactly what the program sent and decides alone.

// listenProxy listens where the program is told the proxy is.
func listenProxy() (net.Listener, error) {
	return net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(ProxyPort))
}

// carry accepts connections on ln until it fails, and carries each, byte for byte, to the
// connection dial opens for it; at most MaxProxyConns at once with the other listeners
// sharing slots, the next waits. A connection dial cannot open is closed at once: the
// program sees its peer refuse (a proxy that refused a tunnel has audited why).
func carry(ln net.Listener, slots chan struct{}, dial func() (net.Conn, error)) {
	for {
		slots <- struct{}{}
		c, err := ln.Accept()
		if err != nil {
			<-slots
			return
		}
		go func() {
			defer func() { <-slots }()
			defer c.Close()
			u, err := dial()
			if err != nil {
				return
			}
			defer u.Close()
			splice(c, u)
		}()
	}
}

// splice copies both ways between a and b until both directions end, passing on each
// side's end of writing as a half close, so that a request body's end reaches the proxy while
// its answer still comes back.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	half := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go half(a, b)
	go half(b, a)
	<-done
	<-done
}
