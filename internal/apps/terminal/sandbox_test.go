package terminal_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/terminal"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/sdk"
)

// A command is not a way out of the terminal: from a root inside a data folder, as the old
// default workspace was, the gateway's key, store and socket are not there to read, and no
// folder but the root can be written.
func TestCommandsCannotReachTheDataFolder(t *testing.T) {
	data := t.TempDir()
	for name, content := range map[string]string{"capgate.key": "gateway-secret", "apps.key": "apps-secret", "capgate.db": "store"} {
		if err := os.WriteFile(filepath.Join(data, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(data, "workspace")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	app, err := terminal.New(loadDoc(t), root, terminal.Options{Sandbox: sandboxtest.Open(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	for _, c := range []string{
		"base64 ../capgate.key", "cat ../apps.key", "cat " + filepath.Join(data, "capgate.key"),
		"sh -c 'cat ../*.key'", "find / -path /proc -prune -o -path /usr -prune -o -name capgate.key -print", "ls -a ..", "sh -c 'cat /proc/*/environ'",
		"grep -rs gateway-secret .. /etc /tmp /run /var",
	} {
		out := run(t, app, cmd(c))
		if s := out["stdout"].(string); strings.Contains(s, "secret") || strings.Contains(s, "capgate.db") || strings.Contains(s, "capgate.key") {
			t.Errorf("%s: %q", c, s)
		}
	}
	for _, c := range []string{"sh -c 'echo x > /etc/planted'", "mkdir /planted", "touch /usr/planted"} {
		if out := run(t, app, cmd(c)); out["status"] != "error" {
			t.Errorf("%s: %v", c, out)
		}
	}
	// Beside the root, which lies in the host's /tmp here, a write lands in the sandbox's own
	// /tmp, held in memory and gone with the command: never in the host's folder.
	for _, c := range []string{"touch ../planted", "cp /bin/sh ../sh", "sh -c 'echo x > ../capgate.key'"} {
		run(t, app, cmd(c))
	}
	for _, name := range []string{"planted", "sh"} {
		if _, err := os.Stat(filepath.Join(data, name)); err == nil {
			t.Errorf("a command wrote %s beside the root", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(data, "capgate.key")); string(b) != "gateway-secret" {
		t.Error("a command overwrote the gateway's key")
	}
	// The root itself is written, and the host sees it.
	run(t, app, cmd("touch made"))
	if _, err := os.Stat(filepath.Join(root, "made")); err != nil {
		t.Errorf("the root is not writable: %v", err)
	}
	// /tmp is the sandbox's own: the host's is neither seen nor written.
	mark := filepath.Join(os.TempDir(), "capgate-terminal-test-"+filepath.Base(data))
	if err := os.WriteFile(mark, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(mark)
	if out := run(t, app, cmd("cat "+mark)); out["status"] != "error" {
		t.Errorf("the host's /tmp is seen: %v", out)
	}
}

// Hidden paths inside the root (a data folder the operator put under the workspace) are not
// there either.
func TestHiddenInsideTheRoot(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, ".local", "capgate")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "capgate.key"), []byte("gateway-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	app, err := terminal.New(loadDoc(t), root, terminal.Options{Sandbox: sandboxtest.Open(t), Hidden: []string{data}})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	for _, c := range []string{"cat .local/capgate/capgate.key", "grep -r gateway-secret .", "rm -rf .local/capgate"} {
		out := run(t, app, cmd(c))
		if strings.Contains(out["stdout"].(string), "secret") {
			t.Errorf("%s: %q", c, out["stdout"])
		}
	}
	if _, err := os.Stat(filepath.Join(data, "capgate.key")); err != nil {
		t.Errorf("a hidden file was removed: %v", err)
	}
}

// No network: a server on the host's loopback is not reached.
func TestCommandsHaveNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	app, _ := newApp(t)
	for _, c := range []string{
		"bash -c 'echo hi > /dev/tcp/127.0.0.1/" + strconv.Itoa(port) + "'",
		"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", " + strconv.Itoa(port) + "), 2)'",
	} {
		if _, err := os.Stat(strings.Fields(c)[0]); err != nil && !strings.HasPrefix(c, "bash") {
			if _, err := os.Stat("/usr/bin/" + strings.Fields(c)[0]); err != nil {
				continue
			}
		}
		if out := run(t, app, cmd(c)); out["status"] != "error" {
			t.Errorf("%s: %v", c, out)
		}
	}
	select {
	case <-accepted:
		t.Error("a command reached the host's loopback")
	case <-time.After(100 * time.Millisecond):
	}
}

// The command sees only its own processes, never capgate's or the host's.
func TestCommandsSeeOnlyTheirOwnProcesses(t *testing.T) {
	app, _ := newApp(t)
	out := run(t, app, cmd("ls /proc/"+strconv.Itoa(os.Getpid())))
	if out["status"] != "error" {
		t.Errorf("capgate's own process is visible: %v", out)
	}
}

// A program outside what the sandbox shows is refused before anything runs, naming the
// command param.
func TestProgramOutsideTheSandbox(t *testing.T) {
	app, _ := newApp(t)
	outside := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(outside, []byte("#!/bin/sh\necho outside\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, app, terminal.ExecuteID, cmd(outside), alice)
	wantCode(t, err, sdk.CodeInvalidParams, "command")
}

// A revocation of the grant a command runs under ends it, in the background and in the
// foreground, and stops the watch when the command ends.
func TestRevocationEndsTheCommand(t *testing.T) {
	app, _ := newApp(t)
	var (
		revoked = make(chan struct{})
		watches atomic.Int32
		stopped = make(chan struct{}, 2)
	)
	ic := sdk.InvocationContext{Source: sdk.SourceAgent, ClientID: alice, WatchRevocation: func() (<-chan struct{}, func()) {
		watches.Add(1)
		return revoked, func() { stopped <- struct{}{} }
	}}
	m := sleeper()
	res, err := app.Invoke(context.Background(), terminal.ExecuteID, json.RawMessage(`{"command":"sh -c 'setsid -f sleep `+m+`; exec sleep `+m+`'","background":true}`), ic)
	if err != nil || !res.Success {
		t.Fatal(err)
	}
	waitSleepers(t, m, 2)
	fg := make(chan error, 1)
	m2 := sleeper()
	go func() {
		_, err := app.Invoke(context.Background(), terminal.ExecuteID, json.RawMessage(`{"command":"sleep `+m2+`"}`), ic)
		fg <- err
	}()
	waitSleepers(t, m2, 1)
	close(revoked)
	waitNoSleepers(t, m)
	waitNoSleepers(t, m2)
	select {
	case err := <-fg:
		wantCode(t, err, sdk.CodeExecutionFailed, "")
	case <-time.After(10 * time.Second):
		t.Fatal("the foreground call did not end at the revocation")
	}
	for i := 0; i < 2; i++ {
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of 2 watches stopped", i)
		}
	}
	if n := watches.Load(); n != 2 {
		t.Errorf("%d watches", n)
	}
	out, _ := call(t, app, terminal.ReadOutputID, `{"id":1}`, alice)
	if out["status"] != "cancelled" {
		t.Errorf("the revoked background command: %v", out)
	}
}
