package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/providers/providertest"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
	"github.com/capgate/capgate/sdk/provider"
)

func testProvider(t *testing.T) string { return providertest.Build(t) }

// syncBuffer is a log the provider's supervision writes from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// run supervises the test provider with args and waits until it is up, or has said why not.
func run(t *testing.T, args ...string) (*providers.Process, *syncBuffer) {
	t.Helper()
	doc, err := manifest.Load(providertest.Manifest(t))
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	p := providers.Start(providers.Config{Manifest: doc, Command: testProvider(t), Args: args, Env: []string{"LANG=C"},
		Logger: slog.New(slog.NewTextHandler(io.MultiWriter(log), nil))})
	t.Cleanup(func() { p.Close() })
	settled(t, p)
	return p, log
}

// settled waits until p's first start has come up or said why not (Process.WaitStarted), and
// ends the test when neither happens in time.
func settled(t *testing.T, p *providers.Process) (bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	p.WaitStarted(ctx)
	up, why := p.State()
	if !up && why == nil {
		t.Fatal("the provider neither came up nor said why")
	}
	return up, why
}

func call(t *testing.T, p *providers.Process, id, params string, dryRun bool) (sdk.Result, []sdk.Effect, error) {
	t.Helper()
	rep := &sdk.Report{DryRun: dryRun}
	ctx, cancel := context.WithTimeout(sdk.WithReport(context.Background(), rep), 10*time.Second)
	defer cancel()
	res, err := p.Handler().Invoke(ctx, id, json.RawMessage(params), sdk.InvocationContext{CallID: "c1"})
	return res, rep.Effects(), err
}

// A provider that keeps to its declaration is started, called and held to it; what it prints
// before the handshake, even a line that looks like one, is logged and breaks nothing.
func TestProviderRuns(t *testing.T) {
	t.Setenv("CAPGATE_TEST_SECRET", "capgate's own")
	p, log := run(t, "-print")
	if up, why := p.State(); !up {
		t.Fatalf("not up: %v\n%s", why, log)
	}
	res, effects, err := call(t, p, "tools.org.example.echo.echo", `{"text":"hi"}`, false)
	if err != nil || !res.Success || len(effects) != 1 || effects[0].Effect != "read" {
		t.Fatalf("echo: %+v %+v %v", res, effects, err)
	}
	// The scrubbed environment and /dev/null for standard input.
	if !bytes.Contains(res.Data, []byte(`"secret":""`)) || !bytes.Contains(res.Data, []byte(`"stdin":"/dev/null"`)) {
		t.Errorf("the provider saw %s", res.Data)
	}
	if !strings.Contains(log.String(), "hello from the provider") {
		t.Errorf("the provider's print is not in the log:\n%s", log)
	}
	if err := p.Handler().(sdk.ParamValidator).ValidateParams("tools.org.example.echo.echo", json.RawMessage(`{"text":"forbidden"}`)); err == nil {
		t.Error("the provider's own param rules were not asked")
	}
}

// A provider that reports a manifest other than the installed one is not started, says why,
// and is not started again.
func TestManifestMismatchRefused(t *testing.T) {
	p, _ := run(t, "-lie")
	up, why := p.State()
	if up || !errors.Is(why, providers.ErrManifestMismatch) {
		t.Fatalf("a lying provider: up %v, why %v", up, why)
	}
	time.Sleep(3 * providers.MinBackoff)
	if n := p.Starts(); n != 1 {
		t.Errorf("started %d times, want once", n)
	}
	_, _, err := call(t, p, "tools.org.example.echo.echo", `{}`, false)
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != sdk.CodeAppUnresponsive {
		t.Errorf("a call to it: %v", err)
	}
}

// An effect above the declaration fails the call, as does a write in a dry run, and an
// effect that is no side_effects value; the provider is then stopped, and not started again.
func TestHeldToDeclaration(t *testing.T) {
	p, _ := run(t, "-overreach")
	_, _, err := call(t, p, "tools.org.example.echo.save", `{}`, false)
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != sdk.CodeExecutionFailed || !strings.Contains(se.Reason, "system effect, above") {
		t.Errorf("an effect above the declaration: %v", err)
	}
	q, _ := run(t, "-dry-write")
	if _, _, err := call(t, q, "tools.org.example.echo.save", `{}`, false); err != nil {
		t.Errorf("a declared write: %v", err)
	}
	_, _, err = call(t, q, "tools.org.example.echo.save", `{}`, true)
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "in a dry run") {
		t.Errorf("a write in a dry run: %v", err)
	}
	// Each has shown it does not keep to its declaration: stopped for good, and says why.
	for _, x := range []*providers.Process{p, q} {
		var up bool
		var why error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if up, why = x.State(); !up && errors.Is(why, providers.ErrOverreach) {
				break
			}
		}
		if up || !errors.Is(why, providers.ErrOverreach) {
			t.Errorf("a provider that overreached: up %v, why %v", up, why)
		}
		if _, _, err := call(t, x, "tools.org.example.echo.echo", `{}`, false); !errors.As(err, &se) || se.Code != sdk.CodeAppUnresponsive {
			t.Errorf("a call to a stopped provider: %v", err)
		}
	}
	time.Sleep(3 * providers.MinBackoff)
	if p.Starts() != 1 || q.Starts() != 1 {
		t.Errorf("a provider stopped for overreaching was started again: %d, %d starts", p.Starts(), q.Starts())
	}
}

// A provider that crashes mid-call fails that call as unresponsive and is started again;
// while it is down its calls fail, and once it is up they work again.
func TestCrashRestarts(t *testing.T) {
	p, _ := run(t, "-crash")
	_, _, err := call(t, p, "tools.org.example.echo.wait", `{}`, false)
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != sdk.CodeAppUnresponsive {
		t.Errorf("a call it crashed in: %v", err)
	}
	for deadline := time.Now().Add(15 * time.Second); p.Starts() < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if up, _ := p.State(); up && p.Starts() >= 2 {
			break
		}
	}
	if up, why := p.State(); !up || p.Starts() < 2 {
		t.Fatalf("not started again: up %v (%v), %d starts", up, why, p.Starts())
	}
	if _, _, err := call(t, p, "tools.org.example.echo.echo", `{}`, false); err != nil {
		t.Errorf("a call after the restart: %v", err)
	}
}

// Close stops the provider: its process is gone when Close returns.
func TestCloseKillsTheProcess(t *testing.T) {
	p, _ := run(t)
	pids := providerPIDs(t)
	if len(pids) == 0 {
		t.Fatal("no provider process found")
	}
	p.Close()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !strings.Contains(string(b), ") Z ") {
				t.Errorf("the provider process %d outlived Close", pid)
			}
		}
	}
}

// providerPIDs are the test provider processes now running.
func providerPIDs(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err != nil {
			continue
		}
		// Unconfined, the program itself; in the sandbox, its sealed copy, run as -hold.
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if exe == testProvider(t) || (strings.HasPrefix(exe, "/memfd:capgate-provider") && bytes.Contains(cmdline, []byte("\x00-hold"))) {
			out = append(out, pid)
		}
	}
	return out
}

// parentEnv makes the test binary a capgate stand-in that starts the test provider, prints
// its pid and waits to be killed.
const parentEnv = "PROVIDERS_TEST_PARENT"

// parentSandboxEnv has the stand-in run its provider in the sandbox.
const parentSandboxEnv = "PROVIDERS_TEST_PARENT_SANDBOX"

func TestMain(m *testing.M) {
	if bin := os.Getenv(parentEnv); bin != "" {
		raw, err := exec.Command(bin, "-manifest").Output()
		if err != nil {
			panic(err)
		}
		doc, err := manifest.Load(raw)
		if err != nil {
			panic(err)
		}
		cfg := providers.Config{Manifest: doc, Command: bin, Args: []string{"-hold"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if os.Getenv(parentSandboxEnv) != "" {
			// As the gateway runs it: its sealed copy, in the sandbox.
			box, err := sandbox.Open(context.Background(), sandbox.ModeOn)
			if err != nil {
				panic(err)
			}
			if cfg.Digest, err = providers.ProgramDigest(bin); err != nil {
				panic(err)
			}
			cfg.Sandbox = box
		}
		p := providers.Start(cfg)
		for {
			if up, why := p.State(); up {
				break
			} else if why != nil {
				panic(why)
			}
			time.Sleep(10 * time.Millisecond)
		}
		os.Stdout.WriteString("up\n")
		select {}
	}
	os.Exit(m.Run())
}

// kill -9 of capgate leaves no provider process behind, even one that would outlive it
// (-hold: it ignores SIGPIPE and the signals of a terminal going away).
func TestNoOrphanAfterKill9(t *testing.T) {
	t.Run("unconfined", func(t *testing.T) { noOrphanAfterKill9(t, false) })
	t.Run("sandboxed", func(t *testing.T) {
		sandboxtest.Open(t)
		noOrphanAfterKill9(t, true)
	})
}

func noOrphanAfterKill9(t *testing.T, sandboxed bool) {
	bin := testProvider(t)
	before := map[int]bool{}
	for _, pid := range providerPIDs(t) {
		before[pid] = true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe, "-test.run=^$")
	parent.Env = append(os.Environ(), parentEnv+"="+bin)
	if sandboxed {
		parent.Env = append(parent.Env, parentSandboxEnv+"=1")
	}
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 3)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "up\n" {
		parent.Process.Kill()
		t.Fatalf("the stand-in did not start its provider: %q %v", line, err)
	}
	var mine []int
	for _, pid := range providerPIDs(t) {
		if !before[pid] {
			mine = append(mine, pid)
		}
	}
	if len(mine) == 0 {
		t.Fatal("no provider process of the stand-in")
	}
	parent.Process.Signal(syscall.SIGKILL)
	parent.Wait()
	for _, pid := range mine {
		gone := false
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil || strings.Contains(string(b), ") Z ") {
				gone = true
				break
			}
		}
		if !gone {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the provider %d outlived kill -9 of its capgate", pid)
		}
	}
}

// With a digest, the program run is a sealed copy of the one checked: the provider runs
// from memory, not from the path; a program whose content is not the digest is not run, and
// not tried again.
func TestProgramDigest(t *testing.T) {
	bin := testProvider(t)
	digest, err := providers.ProgramDigest(bin)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := manifest.Load(providertest.Manifest(t))
	if err != nil {
		t.Fatal(err)
	}
	start := func(path, digest string) *providers.Process {
		p := providers.Start(providers.Config{Manifest: doc, Command: path, Digest: digest, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		t.Cleanup(func() { p.Close() })
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if up, why := p.State(); up || why != nil {
				break
			}
		}
		return p
	}
	before := map[int]bool{}
	for _, pid := range providerPIDs(t) {
		before[pid] = true
	}
	p := start(bin, digest)
	if up, why := p.State(); !up {
		t.Fatalf("the program with its digest: %v", why)
	}
	if _, _, err := call(t, p, "tools.org.example.echo.echo", `{}`, false); err != nil {
		t.Errorf("a call: %v", err)
	}
	ran := false
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		exe, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err == nil && strings.HasPrefix(exe, "/memfd:capgate-provider") {
			ran = true
		}
	}
	if !ran {
		t.Error("the provider does not run from its sealed copy")
	}

	// The same path, other content: refused, once.
	other := filepath.Join(t.TempDir(), "provider")
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, append(raw, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	q := start(other, digest)
	if up, why := q.State(); up || !errors.Is(why, providers.ErrDigest) {
		t.Fatalf("a program with other content: up %v, %v", up, why)
	}
	time.Sleep(3 * providers.MinBackoff)
	if n := q.Starts(); n != 1 {
		t.Errorf("tried %d times, want once", n)
	}
	for _, bad := range []string{filepath.Join(t.TempDir(), "missing"), t.TempDir()} {
		r := start(bad, digest)
		if up, why := r.State(); up || why == nil {
			t.Errorf("%s: up %v, %v", bad, up, why)
		}
	}
}

// The provider is told the call's deadline; one that stops at it answers TIMEOUT and keeps
// running, one that ignores it answers TIMEOUT within the grace and is killed and started
// again.
func TestDeadline(t *testing.T) {
	wait := func(p *providers.Process, d time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		begin := time.Now()
		_, err := p.Handler().Invoke(ctx, "tools.org.example.echo.wait", json.RawMessage(`{}`), sdk.InvocationContext{})
		return time.Since(begin), err
	}
	var se *sdk.Error
	p, _ := run(t)
	took, err := wait(p, 300*time.Millisecond)
	if err == nil || took > 2*time.Second {
		t.Errorf("a provider that keeps the deadline: %v after %s", err, took)
	}
	time.Sleep(3 * providers.MinBackoff)
	if n := p.Starts(); n != 1 {
		t.Errorf("a provider that keeps the deadline was started %d times", n)
	}

	q, _ := run(t, "-ignore-cancel")
	took, err = wait(q, 300*time.Millisecond)
	if !errors.As(err, &se) || se.Code != sdk.CodeTimeout || took > 300*time.Millisecond+provider.CancelGrace+2*time.Second {
		t.Errorf("a provider that ignores the deadline: %v after %s", err, took)
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if up, _ := q.State(); up && q.Starts() >= 2 {
			break
		}
	}
	if up, why := q.State(); !up || q.Starts() < 2 {
		t.Errorf("not killed and started again: up %v (%v), %d starts", up, why, q.Starts())
	}
}
