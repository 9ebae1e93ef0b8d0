package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
	"github.com/capgate/capgate/sdk/provider"
)

// Limits of a provider run.
const (
	// MaxProviderCalls bounds the measured calls of each kind: at a few hundred microseconds
	// a call through a process, a run stays within minutes.
	MaxProviderCalls = 1_000_000
	// MaxProviderPause bounds the pause before each call.
	MaxProviderPause = time.Second
	// providerBlock is how many calls of one kind are made in a row before the next kind's:
	// the kinds take turns in blocks, so that each meets the machine in the same states over
	// the run, and within a block a process is called back to back, as a busy gateway calls
	// it (calling each in turn would leave every process idle between its calls).
	providerBlock = 100
	// providerWarmup calls of each kind are made and not measured before the measured ones:
	// the first calls through a new connection pay for its buffers and the processes' first
	// garbage collections.
	providerWarmup = 500
	// providerCallTimeout is the deadline of each call, as the broker gives one (the
	// capability's timeout_ms); a call never comes near it.
	providerCallTimeout = 30 * time.Second
	// providerRunTimeout bounds a whole run: the starts, every call and the stops.
	providerRunTimeout = 15 * time.Minute
)

// benchProviderManifest is the manifest of the bench's provider: one capability that answers
// with its params, having done nothing (unsigned: trust is checked at install, not per call).
const benchProviderManifest = `{"app_id":"org.capgate.bench","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"tools.org.capgate.bench.echo","name":"Echo","description":"Answers with its params, having done nothing.","category":"TEXT_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"none","timeout_ms":30000}
]}`

// benchCapability is the bench provider's one capability.
const benchCapability = "tools.org.capgate.bench.echo"

// echo is the bench's handler: the same code is called in the process (the floor) and served
// by the provider process, so the difference between the two is what the provider protocol
// and the process boundary add to a call. It does nothing but answer with its params.
type echo struct{ doc *manifest.Document }

var _ sdk.Handler = echo{}

func (h echo) Manifest() *manifest.Document { return h.doc }

func (h echo) Invoke(_ context.Context, id string, params json.RawMessage, _ sdk.InvocationContext) (sdk.Result, error) {
	if id != benchCapability {
		return sdk.Result{}, sdk.NotFound(id)
	}
	return sdk.Result{Success: true, Data: params}, nil
}

func newEcho() (echo, error) {
	doc, err := manifest.Load([]byte(benchProviderManifest))
	if err != nil {
		return echo{}, fmt.Errorf("bench: the provider's manifest: %w", err)
	}
	return echo{doc: doc}, nil
}

// exchangeEnv, in the environment of the program ProviderOptions names, asks ServeProvider
// for the empty exchange instead of the provider: Provider sets it for the floor's child.
const exchangeEnv = "CAPGATE_BENCH_EXCHANGE"

// exchangeFD is the descriptor of the floor child's end of its unix socket (the first of
// exec.Cmd.ExtraFiles).
const exchangeFD = 3

// ServeProvider serves the bench's handler as a provider process, for the program that
// ProviderOptions.Command starts (capgate's internal `capgate bench provider-serve`, or a test
// binary). It does not return; started by hand, not by capgate, it says so and exits.
//
// Started by Provider as the floor's child (exchangeEnv set), it answers what it reads on the
// unix socket at descriptor 3 with the same bytes instead, until the socket closes: the empty
// exchange, nothing decoded.
func ServeProvider() {
	if os.Getenv(exchangeEnv) == "1" {
		if err := serveExchange(os.NewFile(exchangeFD, "exchange")); err != nil {
			fmt.Fprintln(os.Stderr, "capgate bench: the exchange floor:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	h, err := newEcho()
	if err != nil {
		panic(err) // the manifest is a constant of this file
	}
	provider.Serve(h)
}

func serveExchange(f *os.File) error {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return err
		}
	}
}

// ProviderOptions configures Provider. Command is required.
type ProviderOptions struct {
	// Command and Args start a program that calls ServeProvider (capgate itself, with its
	// internal `bench provider-serve`); Env is added to the environment the gateway gives its
	// providers. The program is run as the gateway runs a registered one: from a sealed copy
	// whose digest was checked.
	Command string
	Args    []string
	Env     []string
	// Calls is how many calls of each kind are measured; 0 means 5,000, at most
	// MaxProviderCalls.
	Calls int
	// Pause, when set, is waited before every call (and not measured): calls that come one
	// at a time, with each process idle in between, instead of back to back. At most
	// MaxProviderPause.
	Pause time.Duration
	// Unconfined also measures the provider started without a sandbox (as --sandbox=off-unsafe
	// runs it). When no sandbox can be made on this machine, only the unconfined provider is
	// measured, and ProviderReport.SandboxUnavailable says why.
	Unconfined bool
}

// ProviderReport is what a provider run measured: the same call (the bench handler's echo of
// the gateway bench's params) made directly in the process, and made through a provider
// process as the broker makes it (Process.Handler, over the provider protocol on a unix
// socket), beside the least any call to another process costs here. The kinds of call take
// turns in blocks of providerBlock.
type ProviderReport struct {
	Calls       int     `json:"calls"`
	ParamsBytes int     `json:"params_bytes"`
	PauseUS     float64 `json:"pause_us"`
	// Direct is the floor the goal is measured from: the handler called in the process.
	Direct Latency `json:"direct"`
	// Exchange is the floor of any call to another process: the params' bytes written to a
	// child process over a unix socket and read back, nothing encoded or decoded.
	Exchange Latency `json:"exchange"`
	// Sandboxed is the provider in the sandbox, as the gateway runs it; nil when none can be
	// made here (SandboxUnavailable says why).
	Sandboxed          *ProviderRun `json:"sandboxed,omitempty"`
	SandboxUnavailable string       `json:"sandbox_unavailable,omitempty"`
	// Unconfined is the provider run without a sandbox, when asked for.
	Unconfined *ProviderRun `json:"unconfined,omitempty"`
	// GoalUS is the provider issue's goal for AddedP50US.
	GoalUS float64 `json:"goal_added_p50_us"`
}

// ProviderGoalUS is the goal: a call through a provider process adds at most 0.1 ms at the
// median to the same call made directly.
const ProviderGoalUS = 100

// Latency is the distribution of one kind of call, in microseconds.
type Latency struct {
	P50US float64 `json:"p50_us"`
	P90US float64 `json:"p90_us"`
	P99US float64 `json:"p99_us"`
}

// ProviderRun is the calls through one provider process.
type ProviderRun struct {
	Latency
	// AddedP50US (P90, P99) is the difference from the direct call's.
	AddedP50US float64 `json:"added_p50_us"`
	AddedP90US float64 `json:"added_p90_us"`
	AddedP99US float64 `json:"added_p99_us"`
	// StartMS is how long the provider took to come up: its start, the handshake and the
	// check of its manifest.
	StartMS float64 `json:"start_ms"`
}

// kind is one kind of call Provider times: call makes one and says how long it took.
type kind struct {
	call func(context.Context) (time.Duration, error)
	lat  []time.Duration
}

// Provider starts the program opts names as a provider, in the sandbox (and without one, when
// asked), and times the bench handler's echo through it against the same call made directly
// and against the empty exchange with a child process. The processes are stopped at the end.
func Provider(opts ProviderOptions) (ProviderReport, error) {
	if opts.Command == "" {
		return ProviderReport{}, errors.New("bench: provider: no command")
	}
	if opts.Calls <= 0 {
		opts.Calls = 5_000
	}
	opts.Calls = min(opts.Calls, MaxProviderCalls)
	opts.Pause = min(max(opts.Pause, 0), MaxProviderPause)
	ctx, cancel := context.WithTimeout(context.Background(), providerRunTimeout)
	defer cancel()
	h, err := newEcho()
	if err != nil {
		return ProviderReport{}, err
	}
	r := ProviderReport{Calls: opts.Calls, ParamsBytes: len(getSettingParams), PauseUS: float64(opts.Pause.Microseconds()),
		GoalUS: ProviderGoalUS}

	direct := &kind{call: func(ctx context.Context) (time.Duration, error) { return echoCall(ctx, h) }}
	ex, err := startExchange(opts)
	if err != nil {
		return ProviderReport{}, err
	}
	defer ex.close()
	exchange := &kind{call: ex.roundTrip}
	kinds := []*kind{direct, exchange}
	runs := map[*kind]*ProviderRun{}
	var stops []*providers.Process
	defer func() {
		for _, p := range stops {
			p.Close()
		}
	}()
	start := func(box *sandbox.Sandbox) (*ProviderRun, error) {
		p, took, err := StartProvider(ctx, h.doc, box, opts)
		if err != nil {
			return nil, err
		}
		ph := p.Handler()
		k := &kind{call: func(ctx context.Context) (time.Duration, error) { return echoCall(ctx, ph) }}
		kinds = append(kinds, k)
		runs[k] = &ProviderRun{StartMS: float64(took.Microseconds()) / 1e3}
		stops = append(stops, p)
		return runs[k], nil
	}
	box, err := sandbox.Open(ctx, sandbox.ModeOn)
	switch {
	case errors.Is(err, sandbox.ErrUnavailable):
		r.SandboxUnavailable = err.Error()
		opts.Unconfined = true
	case err != nil:
		return ProviderReport{}, err
	default:
		if r.Sandboxed, err = start(box); err != nil {
			return ProviderReport{}, err
		}
	}
	if opts.Unconfined {
		if r.Unconfined, err = start(nil); err != nil {
			return ProviderReport{}, err
		}
	}

	for _, k := range kinds {
		k.lat = make([]time.Duration, 0, opts.Calls)
	}
	for done := -providerWarmup; done < opts.Calls; done += providerBlock {
		for _, k := range kinds {
			for range providerBlock {
				if opts.Pause > 0 {
					time.Sleep(opts.Pause)
				}
				el, err := k.call(ctx)
				if err != nil {
					return ProviderReport{}, fmt.Errorf("bench: provider: %w", err)
				}
				if done >= 0 && len(k.lat) < opts.Calls {
					k.lat = append(k.lat, el)
				}
			}
		}
	}
	r.Direct, r.Exchange = latency(direct.lat), latency(exchange.lat)
	for k, run := range runs {
		run.Latency = latency(k.lat)
		run.AddedP50US = run.P50US - r.Direct.P50US
		run.AddedP90US = run.P90US - r.Direct.P90US
		run.AddedP99US = run.P99US - r.Direct.P99US
	}
	return r, nil
}

// echoIC is the invocation context of the bench's calls: an agent's call.
var echoIC = sdk.InvocationContext{Source: sdk.SourceAgent, AppID: "org.capgate.bench", ClientID: "bench", CallID: "bench"}

// echoCall makes the bench's call of h as the broker makes a call (a report in its context, a
// deadline, an agent's invocation context), checks its answer is the echo of its params, and
// says how long Invoke took.
func echoCall(ctx context.Context, h sdk.Handler) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(sdk.WithReport(ctx, &sdk.Report{}), providerCallTimeout)
	defer cancel()
	t0 := time.Now()
	res, err := h.Invoke(cctx, benchCapability, getSettingParams, echoIC)
	el := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if !res.Success || !bytes.Equal(res.Data, getSettingParams) {
		return 0, errors.New("the answer is not the echo of the params")
	}
	return el, nil
}

// StartProvider starts the program opts names as the bench's provider in box (nil:
// unconfined), as the gateway starts a registered app's (its digest checked, the gateway's
// provider environment), and waits until it is up: how long that took is the second result.
// The caller closes the process.
func StartProvider(ctx context.Context, doc *manifest.Document, box *sandbox.Sandbox, opts ProviderOptions) (*providers.Process, time.Duration, error) {
	digest, err := providers.ProgramDigest(opts.Command)
	if err != nil {
		return nil, 0, fmt.Errorf("bench: provider: %w", err)
	}
	began := time.Now()
	p := providers.Start(providers.Config{Manifest: doc, Command: opts.Command, Args: opts.Args, Digest: digest,
		Env: append(slices.Clone(providers.DefaultEnv), opts.Env...), Sandbox: box, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	wctx, cancel := context.WithTimeout(ctx, providers.StartTimeout+5*time.Second)
	defer cancel()
	p.WaitStarted(wctx)
	took := time.Since(began)
	if up, why := p.State(); !up {
		p.Close()
		if why == nil {
			why = errors.New("it did not come up in time")
		}
		return nil, 0, fmt.Errorf("bench: provider not started: %w", why)
	}
	return p, took, nil
}

// exchange is the floor's child process and the parent's end of their unix socket.
type exchange struct {
	cmd  *exec.Cmd
	conn net.Conn
	buf  []byte
}

// startExchange starts the program opts names as the floor's child (unconfined: a sandbox
// changes nothing of a call to a running process), its end of a unix socket pair at
// descriptor 3.
func startExchange(opts ProviderOptions) (*exchange, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("bench: exchange: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "exchange"), os.NewFile(uintptr(fds[1]), "exchange")
	defer theirs.Close()
	conn, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, fmt.Errorf("bench: exchange: %w", err)
	}
	cmd := exec.Command(opts.Command, opts.Args...)
	cmd.Env = append(append(slices.Clone(providers.DefaultEnv), opts.Env...), exchangeEnv+"=1")
	cmd.ExtraFiles = []*os.File{theirs} // descriptor 3 (exchangeFD)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("bench: exchange: %w", err)
	}
	return &exchange{cmd: cmd, conn: conn, buf: make([]byte, len(getSettingParams))}, nil
}

// roundTrip writes the params' bytes to the child and reads them back.
func (e *exchange) roundTrip(context.Context) (time.Duration, error) {
	if err := e.conn.SetDeadline(time.Now().Add(providerCallTimeout)); err != nil {
		return 0, err
	}
	t0 := time.Now()
	if _, err := e.conn.Write(getSettingParams); err != nil {
		return 0, fmt.Errorf("exchange: %w", err)
	}
	if _, err := io.ReadFull(e.conn, e.buf); err != nil {
		return 0, fmt.Errorf("exchange: %w", err)
	}
	el := time.Since(t0)
	if !bytes.Equal(e.buf, getSettingParams) {
		return 0, errors.New("exchange: the answer is not the bytes sent")
	}
	return el, nil
}

// close ends the child: its socket closes, and it exits.
func (e *exchange) close() {
	e.conn.Close()
	done := make(chan struct{})
	go func() {
		e.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		e.cmd.Process.Kill()
		<-done
	}
}

func latency(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	us := func(q int) float64 { return float64(s[min(len(s)-1, len(s)*q/100)].Nanoseconds()) / 1e3 }
	return Latency{P50US: us(50), P90US: us(90), P99US: us(99)}
}
