package opsock

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// dialEnv names the socket a re-run of this test binary dials as another user.
const dialEnv = "OPSOCK_TEST_DIAL"

// TestMain lets the test binary, run again as another user, be the peer of a socket: it
// asks the socket to add a client and prints the HTTP status, or "refused" when it cannot
// connect at all.
func TestMain(m *testing.M) {
	if path := os.Getenv(dialEnv); path != "" {
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
		resp, err := hc.Post("http://operator"+pathAddClient, "application/json",
			strings.NewReader(`{"by":{"id":"cli:evil","who":"the operator","where":"here"},"name":"evil","trust":"privileged"}`))
		if err != nil {
			fmt.Println("refused")
			os.Exit(0)
		}
		io.Copy(io.Discard, resp.Body)
		fmt.Println(resp.StatusCode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Another user cannot reach the socket: its mode keeps them from connecting, and where the
// mode would let them (a socket someone made world-writable), the server refuses a peer whose
// uid is neither its own nor root's.
func TestAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a peer as another user needs root")
	}
	s := serve(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(s.path), "peer.test")
	raw, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(s.path), 0o755); err != nil {
		t.Fatal(err)
	}
	asNobody := func() string {
		t.Helper()
		cmd := exec.Command(bin)
		cmd.Env = []string{dialEnv + "=" + s.path}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the peer: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := asNobody(); got != "refused" {
		t.Errorf("another user through the 0600 socket: %s, want refused", got)
	}
	if err := os.Chmod(s.path, 0o666); err != nil {
		t.Fatal(err)
	}
	if got := asNobody(); got != "403" {
		t.Errorf("another user through a world-writable socket: %s, want 403", got)
	}
	if cs, _ := s.st.ListClients(t.Context()); len(cs) != 0 {
		t.Errorf("a client was added: %+v", cs)
	}
}
