package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
)

// testProviderEnv makes the test binary the bench's provider process (ServeProvider), as capgate
// bench provider makes capgate itself one: the process and the direct calls run the same
// handler code, and the test needs no program built for it.
const testProviderEnv = "CAPGATE_BENCH_TEST_PROVIDER"

func TestMain(m *testing.M) {
	if os.Getenv(testProviderEnv) == "1" {
		ServeProvider()
		return
	}
	os.Exit(m.Run())
}

// testProvider is the test binary as the bench's provider program.
func testProvider(tb testing.TB) ProviderOptions {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return ProviderOptions{Command: exe, Args: []string{"-test.run=^$"}, Env: []string{testProviderEnv + "=1"}}
}

// TestProvider runs a short provider run, sandboxed and unconfined, and checks the report is
// sane; it asserts no speed.
func TestProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("starts provider processes")
	}
	opts := testProvider(t)
	opts.Calls, opts.Unconfined = 50, true
	r, err := Provider(opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Calls != 50 || r.ParamsBytes != len(getSettingParams) || r.GoalUS != ProviderGoalUS {
		t.Errorf("report = %+v", r)
	}
	if r.Sandboxed == nil {
		sandboxtest.Open(t) // fails in CI, skips elsewhere: no sandbox here
		t.Fatalf("no sandboxed run where a sandbox can be made (%s)", r.SandboxUnavailable)
	}
	ordered := func(name string, l Latency) {
		if l.P50US <= 0 || l.P50US > l.P90US || l.P90US > l.P99US {
			t.Errorf("%s: figures out of order: %+v", name, l)
		}
	}
	ordered("direct", r.Direct)
	ordered("exchange", r.Exchange)
	for name, run := range map[string]*ProviderRun{"sandboxed": r.Sandboxed, "unconfined": r.Unconfined} {
		if run == nil {
			t.Fatalf("%s: not measured", name)
		}
		ordered(name, run.Latency)
		if run.StartMS <= 0 || run.AddedP50US != run.P50US-r.Direct.P50US {
			t.Errorf("%s: %+v against %+v", name, run, r.Direct)
		}
	}
}

// With a pause, every call waits it out first, and the report says so.
func TestProviderPause(t *testing.T) {
	if testing.Short() {
		t.Skip("starts provider processes")
	}
	opts := testProvider(t)
	opts.Calls, opts.Pause = 20, 200*time.Microsecond
	began := time.Now()
	r, err := Provider(opts)
	if err != nil {
		t.Fatal(err)
	}
	// At least the warm-up and measured calls of the direct kind, the exchange and one provider.
	if min := 3 * (providerWarmup + providerBlock) * opts.Pause; time.Since(began) < min {
		t.Errorf("the run took %s, less than its pauses (%s)", time.Since(began), min)
	}
	if r.PauseUS != 200 || r.Calls != 20 {
		t.Errorf("report = %+v", r)
	}
}

// A program that is not the bench's provider is not measured: the run fails saying why, and
// a run without a program is refused.
func TestProviderRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts provider processes")
	}
	if _, err := Provider(ProviderOptions{}); err == nil || !strings.Contains(err.Error(), "no command") {
		t.Errorf("no command: %v", err)
	}
	// The test binary without testProviderEnv runs its tests instead of serving (none: -test.run
	// matches nothing) and exits before any handshake.
	exe := testProvider(t).Command
	_, err := Provider(ProviderOptions{Command: exe, Args: []string{"-test.run=^$"}, Calls: 1, Unconfined: true})
	if err == nil || !strings.Contains(err.Error(), "provider not started") {
		t.Errorf("not a provider: %v", err)
	}
}

// The same call, made as the broker makes it, to the same handler: BenchmarkDirectCall in the
// process, BenchmarkProviderCall through a provider process (the test binary serving the
// handler) in the sandbox and unconfined. The difference in ns/op is what the provider
// protocol and the process boundary add; the goal is at most 0.1 ms at the median (capgate
// bench provider reports medians).
//
// Run: go test ./internal/bench -run '^$' -bench 'DirectCall|ProviderCall' -benchmem
func BenchmarkDirectCall(b *testing.B) {
	h, err := newEcho()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := echoCall(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProviderCall(b *testing.B) {
	h, err := newEcho()
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		box  func(b *testing.B) *sandbox.Sandbox
	}{
		{"sandboxed", func(b *testing.B) *sandbox.Sandbox { return sandboxtest.Open(b) }},
		{"unconfined", func(*testing.B) *sandbox.Sandbox { return nil }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			p, _, err := StartProvider(ctx, h.doc, mode.box(b), testProvider(b))
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ph := p.Handler()
			for b.Loop() {
				if _, err := echoCall(ctx, ph); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
