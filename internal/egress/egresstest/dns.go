package egresstest

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// DNS is a DNS server of the test's own, on a UDP port of the loopback, whose answers
// the test writes per name and which counts the questions it is asked.
type DNS struct {
	addr string

	mu      sync.Mutex
	answers map[string]func(qtype uint16, n int) []netip.Addr
	counts  map[string]int
}

// NewDNS starts a DNS, stopped at the end of the test.
func NewDNS(t testing.TB) *DNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &DNS{addr: pc.LocalAddr().String(), answers: map[string]func(uint16, int) []netip.Addr{}, counts: map[string]int{}}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: d, NotifyStartedFunc: func() { close(started) }}
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { srv.Shutdown() })
	return d
}

// Set makes name answer f(qtype, n), where n counts the questions of that type for the name,
// from 1. A questions get the IPv4 addresses f returns, AAAA questions the IPv6 ones.
func (d *DNS) Set(name string, f func(qtype uint16, n int) []netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answers[dns.Fqdn(name)] = f
}

// Static makes name answer addrs every time.
func (d *DNS) Static(name string, addrs ...string) {
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	d.Set(name, func(uint16, int) []netip.Addr { return as })
}

// Queries returns how many questions of qtype name was asked.
func (d *DNS) Queries(name string, qtype uint16) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts[dns.Fqdn(name)+"/"+dns.TypeToString[qtype]]
}

// ServeDNS answers q from what Set and Static wrote.
func (d *DNS) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	if len(q.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		w.WriteMsg(m)
		return
	}
	qn := strings.ToLower(q.Question[0].Name)
	qt := q.Question[0].Qtype
	d.mu.Lock()
	d.counts[qn+"/"+dns.TypeToString[qt]]++
	n := d.counts[qn+"/"+dns.TypeToString[qt]]
	f := d.answers[qn]
	d.mu.Unlock()
	if f == nil {
		m.Rcode = dns.RcodeNameError
		w.WriteMsg(m)
		return
	}
	for _, a := range f(qt, n) {
		hdr := dns.RR_Header{Name: q.Question[0].Name, Class: dns.ClassINET, Ttl: 0}
		switch {
		case qt == dns.TypeA && a.Is4():
			hdr.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: a.AsSlice()})
		case qt == dns.TypeAAAA && a.Is6():
			hdr.Rrtype = dns.TypeAAAA
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
		}
	}
	w.WriteMsg(m)
}

// Addr is the server's address, 127.0.0.1:PORT (UDP), for egress.DNSResolver's Server.
func (d *DNS) Addr() string { return d.addr }
