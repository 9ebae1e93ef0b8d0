//go:build linux

package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/store"
)

// envSocketPeer tells the test binary, run as another user by TestUnixSocketPeerUID, to call
// the gateway's socket at that path (TestSocketPeerHelper).
const envSocketPeer = "CAPGATE_TEST_SOCKET_PEER"

// socketClient is an HTTP client that reaches the gateway over its unix socket.
func socketClient(path string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
}

// socketCall makes one settings get_setting call over the socket, with key as a bearer key
// when it is not empty, and returns the HTTP status and the answer's error code ("" for a
// success).
func socketCall(c *http.Client, key string) (int, string, error) {
	body := `{"header":{"msg_type":"llm_request","version":"1.0","request_id":"sock"},"body":{"action":"query","app":"settings",` +
		`"method":"get_setting","params":{"category":"sound","key":"master_volume"}}}`
	req, _ := http.NewRequest("POST", "http://capgate/v1/ipc", strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var out struct {
		Body struct {
			ErrorCode string `json:"error_code"`
		} `json:"body"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Body.ErrorCode, err
}

// TestSocketPeerHelper is not a test of its own: TestUnixSocketPeerUID runs the test binary
// as another user with this test selected, to call the gateway's socket as that user.
func TestSocketPeerHelper(t *testing.T) {
	path := os.Getenv(envSocketPeer)
	if path == "" {
		t.Skip("run by TestUnixSocketPeerUID as another user")
	}
	status, code, err := socketCall(socketClient(path), "")
	fmt.Printf("RESULT %d %q %v\n", status, code, err)
}

// Over the unix socket, a peer whose uid is bound to a client (capgate client add --uid) is
// that client without a key, as SO_PEERCRED reports the uid of the process at the other end:
// its calls run and are recorded as that client's; a bearer key still names its own client;
// a disabled client's uid is refused at once; MCP, which needs a bearer key, is not served by
// uid. Run as root, the test binary also calls as two other users: one bound to a client,
// which is that client, and one bound to none, which is refused.
func TestUnixSocketPeerUID(t *testing.T) {
	t.Parallel()
	// The socket is in a folder every user may search, so that another user's process can
	// reach it when the test runs as root.
	sockDir, err := os.MkdirTemp("", "capgate-sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "capgate.sock")
	g, err := gateway.Open(context.Background(), gateway.Config{DataDir: t.TempDir(), Listen: "-", Socket: sock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DelayedCommit: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ready, served := make(chan struct{}), make(chan error, 1)
	go func() { served <- g.Serve(ctx, func(string, string) { close(ready) }) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		g.Close()
	})
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}

	me, other, unbound := os.Getuid(), 65534, 65533
	put := func(id string, uid *int, key string) {
		t.Helper()
		c := store.Client{ID: id, Name: id, Trust: "user", UnixUID: uid, Created: time.Now()}
		if key != "" {
			c.KeyHash = ipc.KeyHash(key)
		}
		if err := g.Store.PutClient(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	put("cl_me", &me, "")
	put("cl_other", &other, "")
	put("cl_keyed", nil, "cgk_socket-test-key")
	c := socketClient(sock)

	// lastClient is the client of the last get_setting outcome in the audit log.
	lastClient := func() string {
		t.Helper()
		rs := gatewaytest.AuditRecords(t, g.Store)
		for i := len(rs) - 1; i >= 0; i-- {
			if rs[i].Kind == "outcome" && rs[i].Capability == "settings.org.capgate.settings.get_setting" {
				return rs[i].ClientID
			}
		}
		return ""
	}
	if status, code, err := socketCall(c, ""); err != nil || status != http.StatusOK || code != "" {
		t.Fatalf("a call by uid: HTTP %d %q %v", status, code, err)
	}
	if got := lastClient(); got != "cl_me" {
		t.Errorf("a call by uid %d is recorded as %q, want cl_me", me, got)
	}
	if status, code, err := socketCall(c, "cgk_socket-test-key"); err != nil || status != http.StatusOK || code != "" {
		t.Fatalf("a call with a key over the socket: HTTP %d %q %v", status, code, err)
	}
	if got := lastClient(); got != "cl_keyed" {
		t.Errorf("a call with a key over the socket is recorded as %q, want cl_keyed", got)
	}
	resp, err := c.Post("http://capgate/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("MCP by uid alone: HTTP %d, want 401", resp.StatusCode)
	}

	if os.Geteuid() == 0 {
		if err := os.Chmod(sock, 0o666); err != nil {
			t.Fatal(err)
		}
		bin := peerBinary(t)
		for uid, want := range map[int]string{other: "RESULT 200 \"\" <nil>", unbound: "RESULT 401 \"PERMISSION_DENIED\" <nil>"} {
			var out []byte
			var err error
			// A process another test forks while peerBinary still has the copy open for
			// writing holds that descriptor until it execs, and exec then fails with "text
			// file busy" (golang.org/issue/22315): try again, briefly.
			for attempt := 0; ; attempt++ {
				cmd := exec.Command(bin, "-test.run=^TestSocketPeerHelper$", "-test.v")
				cmd.Env = []string{envSocketPeer + "=" + sock, "PATH=/usr/bin:/bin"}
				cmd.Dir = "/"
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
				out, err = cmd.CombinedOutput()
				if !errors.Is(err, syscall.ETXTBSY) || attempt == 20 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			got := ""
			for sc := bufio.NewScanner(strings.NewReader(string(out))); sc.Scan(); {
				if strings.HasPrefix(sc.Text(), "RESULT ") {
					got = sc.Text()
				}
			}
			if err != nil || got != want {
				t.Errorf("a call as uid %d: %q (%v), want %q; output:\n%s", uid, got, err, want, out)
			}
			if uid == other {
				if got := lastClient(); got != "cl_other" {
					t.Errorf("a call as uid %d is recorded as %q, want cl_other", uid, got)
				}
			}
		}
	} else {
		t.Log("not root: the calls as other users are not made")
	}

	if err := g.Store.SetClientDisabled(context.Background(), "cl_me", true); err != nil {
		t.Fatal(err)
	}
	if status, code, err := socketCall(c, ""); err != nil || status != http.StatusUnauthorized || code != "PERMISSION_DENIED" {
		t.Errorf("a disabled client's uid: HTTP %d %q %v", status, code, err)
	}
	if err := g.Store.DeleteClient(context.Background(), "cl_me", time.Now()); err != nil {
		t.Fatal(err)
	}
	if status, _, err := socketCall(c, ""); err != nil || status != http.StatusUnauthorized {
		t.Errorf("a removed client's uid: HTTP %d %v", status, err)
	}
}

// peerBinary copies the running test binary where every user may run it.
func peerBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "capgate-peer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	bin := filepath.Join(dir, "peer.test")
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}
