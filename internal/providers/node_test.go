package providers_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
	"github.com/capgate/capgate/sdk/provider"
)

// The provider protocol is not Go-only: testdata/npm/provider/provider.js is a provider
// written in Node.js (@grpc/grpc-js, the .proto loaded at run time, yamux of its own), started
// by capgate's own supervision and held to its declaration like any other.

// npmDir is the folder of the npm test parts, from this package's folder.
const npmDir = "../../testdata/npm"

// nodeProvider returns the node binary and the Node provider's script. Without node or the
// npm parts the test is skipped, saying how to install them, except under CI=true, where it
// fails: CI must run it.
func nodeProvider(t *testing.T) (node, script string) {
	t.Helper()
	miss := func(what string) {
		t.Helper()
		msg := what + ": install the npm test parts with `npm ci --ignore-scripts --prefix testdata/npm` (Node and npm needed)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		miss("no node on PATH")
	}
	if node, err = filepath.Abs(node); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(npmDir, "node_modules", "@grpc", "grpc-js")); err != nil {
		miss("testdata/npm/node_modules/@grpc/grpc-js is absent")
	}
	if script, err = filepath.Abs(filepath.Join(npmDir, "provider", "provider.js")); err != nil {
		t.Fatal(err)
	}
	return node, script
}

// nodeManifest is the Node provider's manifest before it is signed.
const nodeManifest = `{"app_id":"org.example.nodeecho","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"tools.org.example.nodeecho.echo","name":"Echo","description":"Answers with its params, after delay_ms.","category":"TEXT_QUERY",
  "parameters":{"type":"object","properties":{"text":{"type":"string"},"delay_ms":{"type":"integer"}}},"returns":{"type":"object"},
  "side_effects":"read","evidence":["echo.v1"]}
]}`

const nodeEcho = "tools.org.example.nodeecho.echo"

// signedFile signs text with a test key and writes it to a file of its own.
func signedFile(t *testing.T, text string) string {
	t.Helper()
	doc, err := manifest.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := manifest.Sign(doc, ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(path, signed, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runNode supervises the Node provider, installed with nodeManifest and serving the manifest
// file served (nodeManifest's when empty), and waits until it is up or has said why not.
func runNode(t *testing.T, served string, flags ...string) (*providers.Process, *syncBuffer, string) {
	t.Helper()
	node, script := nodeProvider(t)
	installed := signedFile(t, nodeManifest)
	raw, err := os.ReadFile(installed)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := manifest.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	if served == "" {
		served = installed
	}
	log := &syncBuffer{}
	p := providers.Start(providers.Config{Manifest: doc, Command: node, Args: append(append([]string{script}, flags...), served),
		Env: []string{"LANG=C"}, Logger: slog.New(slog.NewTextHandler(io.MultiWriter(log), nil))})
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*providers.StartTimeout)
	defer cancel()
	p.WaitStarted(ctx)
	if up, why := p.State(); !up && why == nil {
		t.Fatalf("the Node provider neither came up nor said why\n%s", log)
	}
	return p, log, served
}

// nodeCall is one call as the broker makes it, with what the call reported.
type nodeCall struct {
	res      sdk.Result
	err      error
	effects  []sdk.Effect
	evidence []sdk.Evidence
	progress []string
}

func callNode(p *providers.Process, params string, timeout time.Duration) nodeCall {
	var c nodeCall
	rep := &sdk.Report{Progress: func(m string, f float64) { c.progress = append(c.progress, m+" "+strconv.FormatFloat(f, 'g', -1, 64)) }}
	ctx, cancel := context.WithTimeout(sdk.WithReport(context.Background(), rep), timeout)
	defer cancel()
	c.res, c.err = p.Handler().Invoke(ctx, nodeEcho, json.RawMessage(params), sdk.InvocationContext{CallID: "c1", Source: sdk.SourceAgent})
	c.effects, c.evidence = rep.Effects(), rep.Evidence()
	return c
}

// A Node provider comes up under capgate's supervision, whatever it prints before its
// handshake; its calls carry progress, effects and evidence; its own param rules are asked;
// it keeps the call's deadline; and Close ends its process.
func TestNodeProvider(t *testing.T) {
	p, log, served := runNode(t, "", "--print")
	if up, why := p.State(); !up {
		t.Fatalf("not up: %v\n%s", why, log)
	}
	if !strings.Contains(log.String(), "hello from the Node provider") {
		t.Errorf("the provider's print is not in the log:\n%s", log)
	}

	c := callNode(p, `{"text":"hi"}`, 10*time.Second)
	if c.err != nil || !c.res.Success {
		t.Fatalf("echo: %+v %v\n%s", c.res, c.err, log)
	}
	var data map[string]any
	if err := json.Unmarshal(c.res.Data, &data); err != nil || !equalJSON(data["echo"], map[string]any{"text": "hi"}) {
		t.Errorf("echo answered %s", c.res.Data)
	}
	if len(c.effects) != 1 || c.effects[0] != (sdk.Effect{Effect: "read", Target: "the params"}) {
		t.Errorf("effects %+v", c.effects)
	}
	if len(c.evidence) != 1 || c.evidence[0].Type != "echo.v1" || string(c.evidence[0].Body) != `{"call":"c1"}` {
		t.Errorf("evidence %+v", c.evidence)
	}
	if len(c.progress) != 1 || c.progress[0] != "echoing 0.5" {
		t.Errorf("progress %q", c.progress)
	}

	// A call larger than a yamux stream's window, both ways: flow control works.
	big := strings.Repeat("x", 1<<20)
	if c := callNode(p, `{"text":"`+big+`"}`, 10*time.Second); c.err != nil || !bytes.Contains(c.res.Data, []byte(big)) {
		t.Errorf("a call of a megabyte: %d bytes back, %v", len(c.res.Data), c.err)
	}

	v := p.Handler().(sdk.ParamValidator)
	if err := v.ValidateParams(nodeEcho, json.RawMessage(`{"text":"fine"}`)); err != nil {
		t.Errorf("params that pass: %v", err)
	}
	var se *sdk.Error
	err := v.ValidateParams(nodeEcho, json.RawMessage(`{"text":"forbidden"}`))
	if !errors.As(err, &se) || se.Code != sdk.CodeInvalidParams || len(se.Problems) != 1 || se.Problems[0].Path != "text" {
		t.Errorf("params its own rules refuse: %v", err)
	}

	// A call whose deadline comes before its answer: the provider says timeout at the
	// deadline, within the grace, and is not killed for it.
	c = callNode(p, `{"delay_ms":60000}`, 300*time.Millisecond)
	if !errors.As(c.err, &se) || se.Code != sdk.CodeTimeout {
		t.Errorf("a call past its deadline: %v", c.err)
	}
	if c = callNode(p, `{"text":"again"}`, 10*time.Second); c.err != nil {
		t.Errorf("a call after the timeout: %v", c.err)
	}
	if n := p.Starts(); n != 1 {
		t.Errorf("started %d times, want once\n%s", n, log)
	}

	pids := processesWith(t, served)
	if len(pids) != 1 {
		t.Fatalf("%d Node provider processes, want 1", len(pids))
	}
	p.Close()
	if alive := processesWith(t, served); len(alive) != 0 {
		t.Errorf("the Node provider outlived Close: %v", alive)
	}
}

// A Node provider that reports a manifest other than the installed one (signed by the same
// key, one side effect wider) is not started, and not again.
func TestNodeProviderManifestMismatch(t *testing.T) {
	wider := signedFile(t, strings.Replace(nodeManifest, `"side_effects":"read"`, `"side_effects":"system"`, 1))
	p, log, _ := runNode(t, wider)
	if up, why := p.State(); up || !errors.Is(why, providers.ErrManifestMismatch) {
		t.Fatalf("up %v, why %v\n%s", up, why, log)
	}
	time.Sleep(3 * providers.MinBackoff)
	if n := p.Starts(); n != 1 {
		t.Errorf("started %d times, want once", n)
	}
}

// A Node provider that reports an effect above its capability's declaration fails the call,
// with the effects named; the effect is still recorded as reported.
func TestNodeProviderHeldToDeclaration(t *testing.T) {
	p, log, _ := runNode(t, "", "--overreach")
	if up, why := p.State(); !up {
		t.Fatalf("not up: %v\n%s", why, log)
	}
	c := callNode(p, `{"text":"hi"}`, 10*time.Second)
	var se *sdk.Error
	if !errors.As(c.err, &se) || se.Code != sdk.CodeExecutionFailed ||
		!strings.Contains(se.Reason, "write effect, above its declared side_effects read") {
		t.Errorf("an effect above the declaration: %v", c.err)
	}
	if len(c.effects) != 1 || c.effects[0].Effect != "write" {
		t.Errorf("effects %+v", c.effects)
	}
}

// A Node provider that works on past a call's deadline is answered TIMEOUT within the grace,
// killed, and started again.
func TestNodeProviderIgnoresDeadline(t *testing.T) {
	p, log, _ := runNode(t, "", "--ignore-deadline")
	c := callNode(p, `{"delay_ms":60000}`, 300*time.Millisecond)
	var se *sdk.Error
	if !errors.As(c.err, &se) || se.Code != sdk.CodeTimeout {
		t.Errorf("a call it works on past its deadline: %v", c.err)
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if up, _ := p.State(); up && p.Starts() >= 2 {
			break
		}
	}
	if up, why := p.State(); !up || p.Starts() < 2 {
		t.Fatalf("not killed and started again: up %v (%v), %d starts\n%s", up, why, p.Starts(), log)
	}
	if c := callNode(p, `{"text":"again"}`, 10*time.Second); c.err != nil {
		t.Errorf("a call after the restart: %v", c.err)
	}
}

// A provider that never answers go-plugin's Shutdown (its event loop alive, so its yamux
// pings answered) must not hold up the call that kills it, nor Close. Each waits a bounded
// time here (go-plugin's Kill asks Shutdown with no deadline; capgate kills the process group
// KillGrace after asking); past it the test kills the provider itself, so that it fails
// rather than hangs.
func TestNodeProviderIgnoresShutdown(t *testing.T) {
	p, log, served := runNode(t, "", "--ignore-deadline", "--ignore-shutdown")
	if up, why := p.State(); !up {
		t.Fatalf("not up: %v\n%s", why, log)
	}
	bounded := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(300*time.Millisecond + provider.CancelGrace + 5*time.Second):
			t.Errorf("%s waits on the provider's Shutdown", what)
			for _, pid := range processesWith(t, served) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			<-done
		}
	}
	bounded("the call that kills it", func() { callNode(p, `{"delay_ms":60000}`, 300*time.Millisecond) })
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if up, _ := p.State(); up && p.Starts() >= 2 {
			break
		}
	}
	bounded("Close", func() { p.Close() })
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// processesWith are the live processes (zombies aside) one of whose arguments is arg.
func processesWith(t *testing.T, arg string) []int {
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
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(append([]byte{0}, cmdline...), []byte("\x00"+arg+"\x00")) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
			out = append(out, pid)
		}
	}
	return out
}
