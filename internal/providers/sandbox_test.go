package providers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/providers/providertest"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// runSandboxed supervises the test provider, installed as a package in its own folder, in the
// real sandbox.
func runSandboxed(t *testing.T, args ...string) (*providers.Process, string, *syncBuffer) {
	t.Helper()
	box := sandboxtest.Open(t)
	pkg := t.TempDir()
	prog := filepath.Join(pkg, "provider")
	src, err := os.ReadFile(testProvider(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, src, 0o500); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "index.txt"), []byte("the package's own data"), 0o400); err != nil {
		t.Fatal(err)
	}
	digest, err := providers.ProgramDigest(prog)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := manifest.Load(providertest.Manifest(t))
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	p := providers.Start(providers.Config{Manifest: doc, Command: prog, Digest: digest, Args: args, Dir: pkg,
		Sandbox: box, Env: []string{"LANG=C"}, Logger: slog.New(slog.NewTextHandler(io.MultiWriter(log), nil))})
	t.Cleanup(func() { p.Close() })
	settled(t, p)
	return p, pkg, log
}

// A provider runs in a sandbox of its own: it reads its package and nothing else of the host,
// writes nowhere, dials nothing (not even loopback), and is held to its declaration as
// unconfined ones are.
func TestProviderSandboxed(t *testing.T) {
	p, pkg, log := runSandboxed(t)
	if up, why := p.State(); !up {
		t.Fatalf("not up in the sandbox: %v\n%s", why, log)
	}
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret")
	if err := os.WriteFile(secret, []byte("capgate's own"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	look := func(params map[string]string) map[string]any {
		t.Helper()
		raw, _ := json.Marshal(params)
		res, _, err := call(t, p, "tools.org.example.echo.echo", string(raw), false)
		if err != nil {
			t.Fatalf("echo %s: %v", raw, err)
		}
		var out map[string]any
		if err := json.Unmarshal(res.Data, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := look(map[string]string{"look": filepath.Join(pkg, "index.txt")}); out["seen"] != true {
		t.Errorf("the provider cannot read its own package: %v", out)
	}
	for _, path := range []string{secret, "/etc/shadow", "/root/.bash_history", fmt.Sprintf("/proc/%d/environ", os.Getpid())} {
		if out := look(map[string]string{"look": path}); out["seen"] == true {
			t.Errorf("the provider read %s", path)
		}
	}
	for _, path := range []string{filepath.Join(pkg, "new"), filepath.Join(secretDir, "new"), "/usr/new"} {
		if out := look(map[string]string{"write": path}); out["wrote"] == true {
			t.Errorf("the provider wrote %s", path)
		}
	}
	if _, err := os.Stat(filepath.Join(secretDir, "new")); err == nil {
		t.Error("a file the provider wrote is on the host")
	}
	if out := look(map[string]string{"dial": ln.Addr().String()}); out["dialed"] == true {
		t.Error("the provider dialed the host's loopback")
	}
	if out := look(nil); out["hostname"] != "sandbox" {
		t.Errorf("hostname %v: not the sandbox's own", out["hostname"])
	}
	// Held to its declaration inside the sandbox too.
	if _, _, err := call(t, p, "tools.org.example.echo.save", `{}`, true); err != nil {
		t.Errorf("a dry run of save: %v", err)
	}
}

// The program checked is the program run in the sandbox: one rewritten after registration is
// refused, whichever way it changed.
func TestSandboxedProgramDigest(t *testing.T) {
	box := sandboxtest.Open(t)
	pkg := t.TempDir()
	prog := filepath.Join(pkg, "provider")
	src, err := os.ReadFile(testProvider(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, src, 0o700); err != nil {
		t.Fatal(err)
	}
	digest, _ := providers.ProgramDigest(prog)
	if err := os.WriteFile(prog, append(src, 0), 0o700); err != nil {
		t.Fatal(err)
	}
	doc, _ := manifest.Load(providertest.Manifest(t))
	p := providers.Start(providers.Config{Manifest: doc, Command: prog, Digest: digest, Dir: pkg, Sandbox: box,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	if up, why := settled(t, p); up || !strings.Contains(why.Error(), "digest") {
		t.Fatalf("a changed program: up %v, why %v", up, why)
	}
}

// A provider's filesystem intents are shown in its sandbox at their paths, backed by its app's
// own folder: it writes a read_write one, not a read_only one nor any other path of the root
// (tried by a read capability: none of those writes lands, so none is observed).
func TestProviderFilesystemIntents(t *testing.T) {
	box := sandboxtest.Open(t)
	doc, err := manifest.Load(providertest.Manifest(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := testProvider(t)
	digest, _ := providers.ProgramDigest(bin)
	app := t.TempDir()
	p := providers.Start(providers.Config{Manifest: doc, Command: bin, Digest: digest, Sandbox: box, AppFolder: app,
		Intents: []manifest.FilesystemIntent{{Path: "/sandbox/notes", Mode: manifest.ModeReadWrite}, {Path: "/sandbox/shared", Mode: manifest.ModeReadOnly}},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	if up, why := settled(t, p); !up {
		t.Fatalf("not up: %v", why)
	}
	write := func(path string) bool {
		raw, _ := json.Marshal(map[string]string{"write": path})
		res, _, err := call(t, p, "tools.org.example.echo.echo", string(raw), false)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.Unmarshal(res.Data, &out)
		return out["wrote"] == true
	}
	// A write capability writes its read_write intent (save answers no "wrote": see the file).
	if _, _, err := call(t, p, "tools.org.example.echo.save", `{"write":"/sandbox/notes/a.txt"}`, false); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(app, "notes", "a.txt")); err != nil || string(b) != "from the provider" {
		t.Errorf("the write is not in the app's own folder: %q %v", b, err)
	}
	for _, path := range []string{"/sandbox/shared/a.txt", "/sandbox/other.txt", "/sandbox/notes/../x"} {
		if write(path) {
			t.Errorf("the provider wrote %s", path)
		}
	}
}

// capgate sees for itself a write into a read_write folder during a call that may not write
// (a read, or a dry run): the call fails and the provider is stopped, whatever it reports.
func TestObservedWrite(t *testing.T) {
	box := sandboxtest.Open(t)
	doc, err := manifest.Load(providertest.Manifest(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := testProvider(t)
	digest, _ := providers.ProgramDigest(bin)
	app := t.TempDir()
	p := providers.Start(providers.Config{Manifest: doc, Command: bin, Digest: digest, Sandbox: box, AppFolder: app,
		Intents: []manifest.FilesystemIntent{{Path: "/sandbox/notes", Mode: manifest.ModeReadWrite}},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	if up, why := settled(t, p); !up {
		t.Fatalf("not up: %v", why)
	}
	// A read that writes nothing is fine; the echo capability is a read.
	if _, _, err := call(t, p, "tools.org.example.echo.echo", `{"look":"/sandbox/notes/x"}`, false); err != nil {
		t.Fatalf("a read writing nothing: %v", err)
	}
	// A read that writes: the echo reports only a read, capgate sees the write.
	_, _, err = call(t, p, "tools.org.example.echo.echo", `{"write":"/sandbox/notes/x"}`, false)
	if err == nil || !strings.Contains(err.Error(), "capgate saw the provider write") {
		t.Fatalf("a read that wrote: %v", err)
	}
	if up, why := p.State(); up || !errors.Is(why, providers.ErrOverreach) {
		t.Errorf("after an observed write: up %v, why %v", up, why)
	}
}

// Calls that may write in the read_write folders never run beside calls that may not, so
// every write capgate sees is judged: a call that may write waits for the reads in flight
// (its write then blamed on none of them), and a read that writes beside another read is
// caught though it did not run alone.
func TestObservedWriteConcurrent(t *testing.T) {
	box := sandboxtest.Open(t)
	doc, err := manifest.Load(providertest.Manifest(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := testProvider(t)
	digest, _ := providers.ProgramDigest(bin)
	p := providers.Start(providers.Config{Manifest: doc, Command: bin, Digest: digest, Sandbox: box, AppFolder: t.TempDir(),
		Intents: []manifest.FilesystemIntent{{Path: "/sandbox/notes", Mode: manifest.ModeReadWrite}},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer p.Close()
	if up, why := settled(t, p); !up {
		t.Fatalf("not up: %v", why)
	}
	// wait (side effects none) runs until its deadline; invoke runs one in the background.
	waitFor := func(d time.Duration) <-chan time.Time {
		done := make(chan time.Time, 1)
		go func() {
			ctx, cancel := context.WithTimeout(sdk.WithReport(context.Background(), &sdk.Report{}), d)
			defer cancel()
			_, _ = p.Handler().Invoke(ctx, "tools.org.example.echo.wait", json.RawMessage(`{}`), sdk.InvocationContext{CallID: "w"})
			done <- time.Now()
		}()
		time.Sleep(300 * time.Millisecond) // in flight
		return done
	}

	waited := waitFor(1500 * time.Millisecond)
	if _, _, err := call(t, p, "tools.org.example.echo.save", `{"write":"/sandbox/notes/a.txt"}`, false); err != nil {
		t.Fatalf("a save beside a read: %v", err)
	}
	saved := time.Now()
	if w := <-waited; saved.Before(w) {
		t.Errorf("the save ran while the read was in flight (saved %v before the read ended)", w.Sub(saved))
	}
	if up, why := p.State(); !up {
		t.Fatalf("a save's write was blamed on a read: %v", why)
	}

	waited = waitFor(1500 * time.Millisecond)
	_, _, err = call(t, p, "tools.org.example.echo.echo", `{"write":"/sandbox/notes/b.txt"}`, false)
	if err == nil || !strings.Contains(err.Error(), "capgate saw the provider write") {
		t.Fatalf("a read that wrote beside another read: %v", err)
	}
	<-waited
	if up, why := p.State(); up || !errors.Is(why, providers.ErrOverreach) {
		t.Errorf("after an observed write beside another read: up %v, why %v", up, why)
	}
}
