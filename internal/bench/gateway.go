package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/internal/apps/settings"
	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// Limits of a gateway run: it stops by itself, whatever it is asked.
const (
	// MaxGatewayDuration bounds the load phase.
	MaxGatewayDuration = 5 * time.Minute
	// MaxGatewayWorkers bounds the concurrent HTTP clients; each holds one keep-alive
	// connection.
	MaxGatewayWorkers = 1024
	// gatewayCallTimeout bounds one HTTP call, so a stuck gateway cannot hold the run.
	gatewayCallTimeout = 10 * time.Second
	// MaxGatewayReplicas bounds the gateways served on one store in a run.
	MaxGatewayReplicas = 16
	// decisionRuns is how many Broker.Explain calls the decision median is taken over.
	decisionRuns = 5000
	// MaxLiveTokens bounds GatewayOptions.LiveTokens, and MaxPriorRecords PriorRecords: each
	// is made before the load phase, a token a store write, a record a share of a batch.
	MaxLiveTokens   = 1_000_000
	MaxPriorRecords = 10_000_000
	// MaxCapabilities bounds GatewayOptions.Capabilities, registered as apps of at most
	// capsPerApp capabilities each (a manifest holds at most manifest.MaxCapabilities).
	MaxCapabilities = 100_000
	capsPerApp      = 1000
	// priorWriters is how many goroutines append the prior records, so that the audit
	// writer's batches fill.
	priorWriters = 256
)

// GatewayOptions configures Gateway. The zero value runs 32 workers for 5 seconds.
type GatewayOptions struct {
	Duration time.Duration // the load phase; 0 means 5 s, at most MaxGatewayDuration
	Workers  int           // concurrent keep-alive HTTP clients; 0 means 32, at most MaxGatewayWorkers
	// WithoutDelayedCommitUnsafe serves the gateway with a broker that gives no allowed
	// irreversible call a delayed-commit window, to measure the rest of the path. The Settings
	// app's get_setting declares no reversibility, so as shipped every call of it waits the
	// broker's default window (3 s). Everything else is the gateway's own: store, registry,
	// audit writer, consent service, keys and the Settings app on the same state.
	WithoutDelayedCommitUnsafe bool
	// Store names the store as --store does: "" for SQLite in the temporary data folder, or a
	// postgres:// URL, in which the run makes its own schema and drops it at the end.
	Store string
	// Replicas is how many gateways serve on the one store, each on its own port, the workers
	// spread over them; 0 means 1. More than one needs a PostgreSQL store.
	Replicas int
	// CPUProfile, when set, names a file to write a CPU profile of the load phase to (for
	// go tool pprof): the gateway and the load generator together, as they share the machine.
	// With Floor, the empty exchange's profile goes beside it, in CPUProfile+".floor", so
	// that a call's CPU can be held against the exchange's, function by function.
	CPUProfile string
	// Trace, when set, names a file to write an execution trace of the load phase to (for go
	// tool trace, whose -pprof=sync, net, syscall and sched views show where calls wait); with
	// Floor, the empty exchange's goes beside it, in Trace+".floor".
	Trace string
	// Floor, when set, also measures the floors the run is compared with (Floors): the empty
	// HTTP exchange with the same workers for the same duration, before the load phase, and
	// a synchronous 4 KiB write in the data folder.
	Floor bool
	// LiveTokens more live tokens are issued, to other clients, before the load phase: the
	// scale of the tokens table and of what a revocation sync reads. At most MaxLiveTokens.
	LiveTokens int
	// PriorRecords audit records are appended before the load phase: the scale of the log a
	// call's records join. At most MaxPriorRecords.
	PriorRecords int
	// Capabilities more capabilities are registered before the load phase, in apps of their
	// own (unsigned, so Tier 2): the scale of the registry a call's capability is found in.
	// At most MaxCapabilities.
	Capabilities int
}

// GatewayReport is what a gateway run measured: real calls of the Settings app's get_setting
// with a capability token, through the IPC API over loopback HTTP, each with its durable audit
// records, and the decision alone (Broker.Explain with the token in the verifier's cache).
type GatewayReport struct {
	Store    string `json:"store"` // "sqlite" or "postgres"
	Replicas int    `json:"replicas"`
	// LiveTokens and PriorRecords are the scale the run was asked for (GatewayOptions).
	LiveTokens   int `json:"live_tokens,omitempty"`
	PriorRecords int `json:"prior_records,omitempty"`
	Capabilities int `json:"capabilities,omitempty"`
	// Registered is how many capabilities the registry held in the load phase, the built-in
	// apps' with the Capabilities more.
	Registered  int     `json:"registered_capabilities"`
	Workers     int     `json:"workers"`
	DurationS   float64 `json:"duration_s"` // the load phase as measured
	Calls       int64   `json:"calls"`      // calls answered with success
	Errors      int64   `json:"errors"`     // transport failures and error answers
	CallsPerSec float64 `json:"calls_per_sec"`
	P50MS       float64 `json:"p50_ms"`
	P99MS       float64 `json:"p99_ms"`
	MaxMS       float64 `json:"max_ms"`
	// CPUPerCallUS is the process's CPU time (user and system, the load generator's
	// included, as in the floor) per successful call of the load phase, and CoresUsed that
	// time over the phase's length: what the calls cost, apart from what the machine's other
	// work takes from the run's wall time.
	CPUPerCallUS float64 `json:"cpu_us_per_call"`
	CoresUsed    float64 `json:"cores_used"`
	// SwitchesPerCall is the process's context switches (every thread's, voluntary and not)
	// per successful call of the load phase: a thread put to sleep when its core ran out of
	// work, woken again, or set aside for another. Zero where the system does not count them.
	SwitchesPerCall float64 `json:"context_switches_per_call"`
	// CPUBound is, with Floor, the empty exchange's CPU per exchange over the call's CPU per
	// call: once both use every core, calls/s against the empty exchange's cannot pass it, so
	// a throughput goal above it takes less CPU per call, not less waiting.
	CPUBound float64 `json:"cpu_bound,omitempty"`
	// AuditRecords is how many audit records the gateway made durable in the run (two a call:
	// the decision and the outcome, plus the token's issue); RecordsPerBatch is how many shared
	// one store transaction (group commit).
	AuditRecords    int64   `json:"audit_records"`
	RecordsPerBatch float64 `json:"audit_records_per_batch"`
	// DecisionUS is the median of Broker.Explain with the cached token, measured after the
	// load phase on the same gateway.
	// RoundTripsPerCall is the database round trips of the load phase (every replica's) per
	// successful call, for a store that counts them (PostgreSQL); 0 for SQLite, which runs in
	// the process.
	RoundTripsPerCall float64 `json:"db_round_trips_per_call,omitempty"`
	// AppRoundTripsPerCall is the part of RoundTripsPerCall that is the Settings app reading
	// its own value from the store (one round trip per read or write of app state): the app's
	// data model, not the gateway's decision and audit.
	AppRoundTripsPerCall float64 `json:"app_round_trips_per_call,omitempty"`
	DecisionUS           float64 `json:"decision_us"`
	DecisionRuns         int     `json:"decision_runs"`
	// DelayedCommitMS is the delayed-commit window the decision gives each call; every call
	// waits it out before it runs.
	DelayedCommitMS int64  `json:"delayed_commit_ms"`
	FirstError      string `json:"first_error,omitempty"`
	// Floor is what the same machine does with nothing decided or recorded, when asked for.
	Floor *Floors `json:"floor,omitempty"`
	// Sequential is one client's call at a time beside the empty exchange and one fsync, in
	// one loop, after the load phase; with Floor.
	Sequential *Sequential `json:"sequential,omitempty"`
	// Goals are the ratios to the floors and their goals; with Floor.
	Goals []Goal `json:"goals,omitempty"`
}

// The goals of a gateway run, as ratios to floors measured in the same run.
const (
	// GoalThroughput: calls a second end to end, durable audit and all, at least this share
	// of the empty exchange's with the same workers and client.
	GoalThroughput = 0.6
	// GoalP99: the p99 at most this many times the empty exchange's.
	GoalP99 = 1.5
	// GoalSequential: one client's added latency over the empty exchange at most this many
	// synchronous 4 KiB appends.
	GoalSequential = 1.3
)

// Goal is one ratio of a run to its floor, beside its goal.
type Goal struct {
	Name   string  `json:"name"`
	Figure float64 `json:"figure"`
	Floor  float64 `json:"floor"`
	Unit   string  `json:"unit"`
	Ratio  float64 `json:"ratio"`
	// AtLeast says the ratio must be at least Goal (a rate); else at most (a time).
	AtLeast bool    `json:"at_least"`
	Goal    float64 `json:"goal"`
	Met     bool    `json:"met"`
}

// goals compares r with its floors.
func goals(r GatewayReport) []Goal {
	if r.Floor == nil {
		return nil
	}
	mk := func(name, unit string, figure, floor, ratio, goal float64, atLeast bool) Goal {
		met := ratio <= goal
		if atLeast {
			met = ratio >= goal
		}
		return Goal{Name: name, Figure: figure, Floor: floor, Unit: unit, Ratio: ratio, AtLeast: atLeast, Goal: goal, Met: met}
	}
	f := r.Floor
	gs := []Goal{
		mk("calls/s against the empty exchange", "calls/s", r.CallsPerSec, f.CallsPerSec, r.CallsPerSec/f.CallsPerSec, GoalThroughput, true),
		mk("p99 against the empty exchange's", "ms", r.P99MS, f.P99MS, r.P99MS/f.P99MS, GoalP99, false),
	}
	if q := r.Sequential; q != nil {
		gs = append(gs, mk("one client: added latency against one 4 KiB fsync", "µs", q.AddedUS, q.SyncWriteUS, q.AddedPerSyncWrite, GoalSequential, false))
	}
	return gs
}

// Gateway opens a gateway in a temporary data folder, serves it on 127.0.0.1 (an ephemeral
// port), adds a user client with a random key, issues it a token for system.settings.read with
// no use limit, and drives POST /v1/ipc get_setting calls from opts.Workers keep-alive HTTP
// clients (the public client, package client) for opts.Duration. Then it times the decision alone. The data folder is removed.
func Gateway(opts GatewayOptions) (GatewayReport, error) {
	if opts.Duration <= 0 {
		opts.Duration = 5 * time.Second
	}
	opts.Duration = min(opts.Duration, MaxGatewayDuration)
	if opts.Workers <= 0 {
		opts.Workers = 32
	}
	opts.Workers = min(opts.Workers, MaxGatewayWorkers)

	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	kind, _, err := gateway.ParseStore("", opts.Store)
	if err != nil {
		return GatewayReport{}, err
	}
	if opts.Replicas > 1 && kind != gateway.Postgres {
		return GatewayReport{}, errors.New("bench: several replicas need a postgres:// store")
	}
	opts.Replicas = min(opts.Replicas, MaxGatewayReplicas)

	dir, err := os.MkdirTemp("", "capgate-bench-")
	if err != nil {
		return GatewayReport{}, err
	}
	defer os.RemoveAll(dir)
	opts.LiveTokens = min(max(opts.LiveTokens, 0), MaxLiveTokens)
	opts.PriorRecords = min(max(opts.PriorRecords, 0), MaxPriorRecords)
	opts.Capabilities = min(max(opts.Capabilities, 0), MaxCapabilities)
	// The whole run is bounded: setup (the scale it is asked for too), the load phase, the
	// decision runs and shutdown.
	ctx, cancel := context.WithTimeout(context.Background(), opts.Duration+2*time.Minute+
		time.Duration(opts.LiveTokens)*time.Millisecond+time.Duration(opts.PriorRecords)*100*time.Microsecond+
		time.Duration(opts.Capabilities)*time.Millisecond)
	defer cancel()
	storeURL := opts.Store
	if kind == gateway.Postgres {
		u, drop, err := benchSchema(ctx, opts.Store)
		if err != nil {
			return GatewayReport{}, err
		}
		defer drop()
		storeURL = u
	}
	// unsafeAppOps counts the Settings app's state reads in the brokers withoutDelayedCommit makes.
	var unsafeAppOps atomic.Int64
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	gs := make([]*gateway.Gateway, opts.Replicas)
	for i := range gs {
		g, err := gateway.Open(ctx, gateway.Config{DataDir: dir, Store: storeURL, Listen: "127.0.0.1:0", Socket: "-", Logger: quiet})
		if err != nil {
			return GatewayReport{}, err
		}
		defer g.Close()
		if opts.WithoutDelayedCommitUnsafe {
			if err := withoutDelayedCommit(g, &unsafeAppOps); err != nil {
				return GatewayReport{}, err
			}
		}
		gs[i] = g
	}
	g := gs[0]

	key, caller, err := addClient(ctx, g.Store)
	if err != nil {
		return GatewayReport{}, err
	}
	issued, err := g.Broker.RequestCapability(ctx, caller, broker.CapabilityRequest{
		Capabilities: []string{"system.settings.read"}, Duration: 3600, Reason: "capgate bench gateway",
	})
	if err != nil {
		return GatewayReport{}, fmt.Errorf("bench: issue the token: %w", err)
	}

	if err := scaleUp(ctx, g, opts); err != nil {
		return GatewayReport{}, err
	}
	// Every gateway's registry takes in what was registered before the load phase starts:
	// else its background sync does it in the first second of the load, parsing and
	// compiling thousands of capabilities beside the calls.
	for _, rg := range gs {
		rev, err := rg.Store.Revision(ctx)
		if err == nil {
			_, err = rg.Registry.ReloadAt(ctx, rev)
		}
		if err != nil {
			return GatewayReport{}, fmt.Errorf("bench: the registry before the load: %w", err)
		}
	}
	registered := 0
	for _, a := range g.Registry.List() {
		registered += len(a.Doc.Manifest().Capabilities)
	}

	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, len(gs))
	var urls []string
	for _, rg := range gs {
		addrc := make(chan string, 1)
		go func() { served <- rg.Serve(serveCtx, func(tcp, _ string) { addrc <- tcp }) }()
		select {
		case addr := <-addrc:
			urls = append(urls, "http://"+addr)
		case err := <-served:
			return GatewayReport{}, fmt.Errorf("bench: serve: %w", err)
		}
	}
	var floor *Floors
	if opts.Floor {
		stopProfiles, err := startProfiles(opts, ".floor")
		if err != nil {
			return GatewayReport{}, err
		}
		f, err := measureFloors(ctx, dir, opts.Duration, key, issued.Wire, opts)
		stopProfiles()
		if err != nil {
			return GatewayReport{}, err
		}
		floor = &f
	}
	stopProfiles, err := startProfiles(opts, "")
	if err != nil {
		return GatewayReport{}, err
	}
	rt0, app0 := roundTrips(gs), appStateOps(gs)+unsafeAppOps.Load()
	r, err := drive(ctx, urls, key, issued.Wire, opts)
	rt, app := roundTrips(gs)-rt0, appStateOps(gs)+unsafeAppOps.Load()-app0
	stopProfiles()
	var seq *Sequential
	if err == nil && opts.Floor {
		// One client at a time, on the gateway the load phase warmed.
		q, serr := measureSequential(ctx, dir, urls[0], key, issued.Wire, sequentialRuns)
		if serr != nil {
			err = serr
		}
		seq = &q
	}
	stop()
	for range gs {
		if serr := <-served; err == nil && serr != nil {
			err = fmt.Errorf("bench: serve: %w", serr)
		}
	}
	if err != nil {
		return GatewayReport{}, err
	}
	r.Store, r.Replicas, r.Floor, r.Sequential = "sqlite", len(gs), floor, seq
	r.LiveTokens, r.PriorRecords, r.Capabilities = opts.LiveTokens, opts.PriorRecords, opts.Capabilities
	r.Registered = registered
	if kind == gateway.Postgres {
		r.Store = "postgres"
		r.RoundTripsPerCall = float64(rt) / float64(r.Calls)
		r.AppRoundTripsPerCall = float64(app) / float64(r.Calls)
	}
	var records, batches int64
	for _, rg := range gs {
		st := rg.Audit.Stats()
		records += st.Records
		batches += st.Batches
	}
	r.AuditRecords = records
	if batches > 0 {
		r.RecordsPerBatch = float64(records) / float64(batches)
	}

	req := broker.Request{RequestID: "bench", Action: ipc.ActionQuery, App: "settings", Method: "get_setting",
		Params: json.RawMessage(`{"category":"display","key":"brightness"}`), Token: issued.Wire}
	ds := make([]time.Duration, 0, decisionRuns)
	for range decisionRuns {
		start := time.Now()
		d := g.Broker.Explain(ctx, caller, req)
		ds = append(ds, time.Since(start))
		if !d.Allowed() {
			return GatewayReport{}, fmt.Errorf("bench: the decision was %s %s: %s", d.Outcome, d.Code, d.Explanation)
		}
	}
	r.DecisionUS, r.DecisionRuns = median(ds), len(ds)
	r.DelayedCommitMS = g.Broker.Explain(ctx, caller, req).DelayedCommit.Milliseconds()
	r.Goals = goals(r)
	if r.Floor != nil && r.CPUPerCallUS > 0 {
		r.CPUBound = r.Floor.CPUPerCallUS / r.CPUPerCallUS
	}
	return r, nil
}

// startProfiles starts the CPU profile and the execution trace opts asks for, into their
// files with suffix added, and returns what stops them.
func startProfiles(opts GatewayOptions, suffix string) (stop func(), err error) {
	var files []*os.File
	stop = func() {
		if opts.CPUProfile != "" {
			pprof.StopCPUProfile()
		}
		if opts.Trace != "" {
			trace.Stop()
		}
		for _, f := range files {
			f.Close()
		}
	}
	if opts.CPUProfile != "" {
		f, err := os.Create(opts.CPUProfile + suffix)
		if err != nil {
			return nil, fmt.Errorf("bench: cpu profile: %w", err)
		}
		files = append(files, f)
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("bench: cpu profile: %w", err)
		}
	}
	if opts.Trace != "" {
		f, err := os.Create(opts.Trace + suffix)
		if err == nil {
			files = append(files, f)
			err = trace.Start(f)
		}
		if err != nil {
			if opts.CPUProfile != "" {
				pprof.StopCPUProfile()
			}
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("bench: trace: %w", err)
		}
	}
	return stop, nil
}

// roundTrips sums the database round trips of the gateways' stores, for stores that count them.
func roundTrips(gs []*gateway.Gateway) int64 {
	var n int64
	for _, g := range gs {
		if c, ok := g.Store.(interface{ RoundTrips() int64 }); ok {
			n += c.RoundTrips()
		}
	}
	return n
}

// appStateOps sums the built-in apps' reads and writes of their state.
func appStateOps(gs []*gateway.Gateway) int64 {
	var n int64
	for _, g := range gs {
		n += g.AppStateOps()
	}
	return n
}

// withoutDelayedCommit replaces the gateway's broker with one of the same parts that gives no
// call a delayed-commit window. Serve builds its handler on g.Broker.
// ops counts the Settings app's reads and writes of its state, as Gateway.AppStateOps does.
func withoutDelayedCommit(g *gateway.Gateway, ops *atomic.Int64) error {
	app, ok := g.Registry.App(settings.AppID)
	if !ok {
		return errors.New("bench: the Settings app is not registered")
	}
	b, err := broker.New(broker.Options{Store: g.Store, Registry: g.Registry, Tokens: token.NewVerifier(g.PublicKey(), 4096),
		Audit: g.Audit, Consent: g.Consent, TokenKey: g.Key, DelayedCommit: -1,
		Handlers: map[string]sdk.Handler{settings.AppID: settings.New(app.Doc, settingsState{g.Store, ops})}})
	if err != nil {
		return err
	}
	g.Broker = b
	return nil
}

// settingsState keeps the Settings app's values in the store, as the gateway does.
type settingsState struct {
	s   store.State
	ops *atomic.Int64
}

func (st settingsState) Get(ctx context.Context, key string) ([]byte, error) {
	st.ops.Add(1)
	v, err := st.s.GetState(ctx, settings.AppID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, settings.ErrUnset
	}
	return v, err
}

func (st settingsState) Put(ctx context.Context, key string, value []byte) error {
	st.ops.Add(1)
	return st.s.PutState(ctx, settings.AppID, key, value)
}

// addClient adds a user client with a random key, as `capgate client add` does.
func addClient(ctx context.Context, st store.Clients) (string, broker.Caller, error) {
	key, hash, err := operator.NewClientKey()
	if err != nil {
		return "", broker.Caller{}, err
	}
	id, err := operator.NewClientID()
	if err != nil {
		return "", broker.Caller{}, err
	}
	c := store.Client{ID: id, Name: "bench", KeyHash: hash, Trust: manifest.AuthUser, Created: time.Now()}
	if err := st.PutClient(ctx, c); err != nil {
		return "", broker.Caller{}, fmt.Errorf("bench: add the client: %w", err)
	}
	return key, broker.Caller{ClientID: c.ID, Name: c.Name, Trust: manifest.AuthUser}, nil
}

// workerResult is one worker's latencies of successful calls, its errors and its first error.
type workerResult struct {
	lat    []time.Duration
	errors int64
	first  error
}

// drive runs the load phase: each worker sends get_setting calls through the public client
// on its own keep-alive connection until the deadline, to the servers (base URLs) in turn.
func drive(ctx context.Context, servers []string, key, tok string, opts GatewayOptions) (GatewayReport, error) {
	tr := &http.Transport{MaxIdleConns: opts.Workers, MaxIdleConnsPerHost: opts.Workers, IdleConnTimeout: time.Minute,
		DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: gatewayCallTimeout}
	clients := make([]*client.Client, len(servers))
	for i, u := range servers {
		c, err := client.New(&client.Options{Server: u, Key: key, HTTPClient: hc})
		if err != nil {
			return GatewayReport{}, fmt.Errorf("bench: %w", err)
		}
		clients[i] = c
	}
	results := make([]workerResult, opts.Workers)
	cpu0, sw0 := processUsage()
	start := time.Now()
	deadline := start.Add(opts.Duration)
	var wg sync.WaitGroup
	for w := range opts.Workers {
		wg.Go(func() {
			res := &results[w]
			res.lat = make([]time.Duration, 0, 4096)
			c := clients[w%len(clients)]
			for i := 0; ctx.Err() == nil && time.Now().Before(deadline); i++ {
				call := getSetting("b"+strconv.Itoa(w)+"-"+strconv.Itoa(i), tok)
				t0 := time.Now()
				_, err := c.Query(ctx, call)
				el := time.Since(t0)
				if err != nil {
					res.errors++
					if res.first == nil {
						res.first = err
					}
					continue
				}
				res.lat = append(res.lat, el)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, sw1 := processUsage()
	cpu := cpu1 - cpu0
	r := GatewayReport{Workers: opts.Workers, DurationS: elapsed.Seconds(), CoresUsed: cpu.Seconds() / elapsed.Seconds()}
	var all []time.Duration
	var first error
	for _, res := range results {
		all = append(all, res.lat...)
		r.Errors += res.errors
		if first == nil {
			first = res.first
		}
	}
	if first != nil {
		r.FirstError = first.Error()
	}
	r.Calls = int64(len(all))
	if r.Calls == 0 {
		if first == nil {
			first = errors.New("no call finished")
		}
		return r, fmt.Errorf("bench: no call succeeded: %w", first)
	}
	r.CallsPerSec = float64(r.Calls) / elapsed.Seconds()
	r.CPUPerCallUS = float64(cpu.Microseconds()) / float64(r.Calls)
	r.SwitchesPerCall = float64(sw1-sw0) / float64(r.Calls)
	slices.Sort(all)
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	r.P50MS, r.P99MS, r.MaxMS = ms(all[len(all)/2]), ms(all[min(len(all)-1, len(all)*99/100)]), ms(all[len(all)-1])
	return r, nil
}

// processCPU is the CPU time the process has used, user and system, or 0 where the system
// does not say.
func processCPU() time.Duration {
	cpu, _ := processUsage()
	return cpu
}

// processUsage is the CPU time the process has used, user and system, and the context
// switches of its threads, voluntary and not; zeros where the system does not say.
func processUsage() (cpu time.Duration, switches int64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), int64(ru.Nvcsw) + int64(ru.Nivcsw)
}

// getSettingParams are the params of every call the load phase makes.
var getSettingParams = json.RawMessage(`{"category":"display","key":"brightness"}`)

// getSetting is the call of settings.get_setting under tok, as request requestID.
func getSetting(requestID, tok string) client.Call {
	return client.Call{App: "settings", Method: "get_setting", Params: getSettingParams, Token: tok, RequestID: requestID}
}

// scaleUp issues opts.LiveTokens live tokens to other clients, appends opts.PriorRecords
// audit records and registers opts.Capabilities capabilities, before the load phase.
func scaleUp(ctx context.Context, g *gateway.Gateway, opts GatewayOptions) error {
	if opts.LiveTokens > 0 {
		now := time.Now()
		if err := g.Store.PutClient(ctx, store.Client{ID: "cl_scale", Name: "scale", Trust: manifest.AuthUser, Created: now}); err != nil {
			return fmt.Errorf("bench: live tokens: %w", err)
		}
		for i := range opts.LiveTokens {
			t := store.Token{ID: token.NewID(), ClientID: "cl_scale", IssuedAt: now,
				ExpiresAt: now.Add(time.Hour), Hash: token.WireHash(fmt.Sprintf("scale-%d", i))}
			if err := g.Store.PutToken(ctx, t); err != nil {
				return fmt.Errorf("bench: live tokens: %w", err)
			}
		}
	}
	if opts.PriorRecords > 0 {
		var next atomic.Int64
		errs := make(chan error, priorWriters)
		var wg sync.WaitGroup
		for range priorWriters {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > int64(opts.PriorRecords) {
						return
					}
					rec := audit.Record{Action: "query", App: "settings", Method: "get_setting", Decision: "allow",
						Result: "success", ClientID: "cl_scale", Kind: "outcome", CallID: fmt.Sprintf("call_scale_%d", i)}
					if _, err := g.Audit.Append(ctx, rec); err != nil {
						errs <- fmt.Errorf("bench: prior records: %w", err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
	}
	for app := 0; app*capsPerApp < opts.Capabilities; app++ {
		n := min(capsPerApp, opts.Capabilities-app*capsPerApp)
		id := fmt.Sprintf("org.example.scale%d", app)
		if _, err := g.Registry.Register(ctx, generateApp(id, n), fmt.Sprintf("scale%d", app)); err != nil {
			return fmt.Errorf("bench: capabilities: %w", err)
		}
	}
	return nil
}
