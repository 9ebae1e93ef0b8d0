package web_test

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/web"
)

// getHost sends GET path to the server at base over its own connection, with the Host
// header host exactly as given (none when host is ""), and returns the status, body and
// headers of the answer.
func getHost(t *testing.T, base, path, host string) (int, string, http.Header) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"
	if host == "" {
		req = "GET " + path + " HTTP/1.0\r\n\r\n" // HTTP/1.0 may leave Host out
	}
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s with Host %q: %v", path, host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// The page answers only under loopback names and addresses, and the hosts the operator
// allowed; every spelling a web site rebinding its name to the gateway's address would send
// is refused with 421 and a plain sentence that does not echo it, before any page runs (a
// login link sent with such a Host is not spent).
func TestDNSRebindingRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	port := e.srv.URL[strings.LastIndex(e.srv.URL, ":")+1:]
	for _, h := range []string{
		"127.0.0.1:" + port, "127.0.0.1", "127.0.0.2:" + port, "127.255.255.254", "localhost:" + port, "localhost",
		"LOCALHOST:" + port, "LocalHost", "[::1]:" + port, "[::1]", "[0:0:0:0:0:0:0:1]:" + port,
		"[::ffff:127.0.0.1]:" + port, // IPv4-mapped loopback: the same address
	} {
		if status, _, _ := getHost(t, e.srv.URL, "/ui/", h); status != http.StatusUnauthorized {
			t.Errorf("Host %q: HTTP %d, want the page (401 without a session)", h, status)
		}
	}
	link := e.g.LoginLink()
	refusal := "" // the same for every Host: it never echoes the attacker's text
	for _, h := range []string{
		"attacker.example", "attacker.example:" + port, "localhost.attacker.example", "localhost.attacker.example:" + port,
		"127.0.0.1.nip.io:" + port, "127.0.0.1.attacker.example", "evil.localhost:" + port, "localhost.:" + port,
		"localhost.", "127.0.0.1.:" + port, "::1", "::1:" + port, "[::1%25lo]:" + port, "[127.0.0.1]:" + port,
		"[::ffff:8.8.8.8]:" + port, "0.0.0.0:" + port, "127.1:" + port, "2130706433:" + port, "0x7f000001",
		"127.000.000.001", "localhost:http", "localhost:" + port + ":1", "localhost:99999999", "[::1]x",
		"[::1", "local host", "localhost/x", "user@localhost",
	} {
		status, body, hd := getHost(t, e.srv.URL, link, h)
		if status == http.StatusBadRequest && strings.Contains(body, "malformed Host header") {
			continue // Go's server refused it before the page saw it
		}
		if status != http.StatusMisdirectedRequest {
			t.Errorf("Host %q: HTTP %d, want 421", h, status)
			continue
		}
		if refusal == "" {
			refusal = body
		}
		if !strings.Contains(body, "loopback address") || body != refusal {
			t.Errorf("Host %q: the refusal says %q, not the same sentence as for every other host", h, body)
		}
		if hd.Get("Content-Security-Policy") == "" || hd.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("Host %q: the refusal's headers %v", h, hd)
		}
	}
	// None of the refused requests spent the link.
	if status, _, hd := getHost(t, e.srv.URL, link, "127.0.0.1:"+port); status != http.StatusSeeOther || hd.Get("Location") != "/ui/" {
		t.Errorf("the login link after refused requests: HTTP %d", status)
	}

	// No Host at all (HTTP/1.0) is refused too.
	if status, _, _ := getHost(t, e.srv.URL, "/ui/", ""); status != http.StatusMisdirectedRequest {
		t.Errorf("no Host: HTTP %d, want 421", status)
	}

	// The API is not the page's: its own authentication guards it, whatever the Host.
	if status, _, _ := getHost(t, e.srv.URL, "/v1/capabilities", "attacker.example"); status == http.StatusMisdirectedRequest {
		t.Errorf("the API answers 421 for another Host")
	}
}

// Options.AllowedHosts adds names and addresses, any case and port, nothing under them; an
// entry that is not a host is ignored.
func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	s := web.New(web.Options{Consent: e.g.Consent, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AllowedHosts: []string{"capgate.home.arpa", "192.168.1.5", "[fd00::5]", "bad host:80", "localhost:7766"}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for h, want := range map[string]int{
		"capgate.home.arpa": 401, "CAPGATE.Home.Arpa:7766": 401, "192.168.1.5:80": 401, "[fd00::5]:7766": 401, "127.0.0.1": 401,
		"x.capgate.home.arpa": 421, "capgate.home.arpa.": 421, "capgate.home.arpa.attacker.example": 421, "192.168.1.6": 421,
		"fd00::5": 421, "[::ffff:192.168.1.5]": 421, "bad": 421, "evil.example": 421,
	} {
		if status, _, _ := getHost(t, srv.URL, "/ui/requests", h); status != want {
			t.Errorf("Host %q: HTTP %d, want %d", h, status, want)
		}
	}
}
