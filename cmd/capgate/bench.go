package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/bench"
	"github.com/capgate/capgate/internal/gateway"
)

func newBenchCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure capgate's hot paths on this machine",
	}
	cmd.AddCommand(newBenchManifestCmd(), newBenchGatewayCmd(g), newBenchProviderCmd(), newBenchProviderServeCmd())
	return cmd
}

func newBenchManifestCmd() *cobra.Command {
	var opts bench.ManifestOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "manifest [--caps N] [--json]",
		Short: "Time loading and verifying a signed manifest, stage by stage",
		Long: `Generate a manifest of N capabilities, sign it, and time loading and verifying it: the
strict parse, decoding and the static rules, canonicalization, compiling every schema, and the
signature check, each the median of many runs on one core. Cold runs compile every schema;
warm runs find them in the process's compiled-schema cache, as a gateway does when it
re-verifies a manifest. The floor beside them is decoding the same bytes with encoding/json
plus one ed25519.Verify. The manifest document's budget is 50 ms.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Caps < 1 || opts.Caps > 1024 {
				return usageErr("--caps: must be between 1 and 1024")
			}
			r, err := bench.Manifest(opts)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, r)
			}
			fmt.Fprintf(w, "manifest of %d capabilities, %d bytes, median of %d runs on one core\n", r.Caps, r.Bytes, r.Iterations)
			fmt.Fprintf(w, "%-28s %12s %12s\n", "stage (µs)", "cold", "warm")
			row := func(name string, c, wm float64) { fmt.Fprintf(w, "%-28s %12.1f %12.1f\n", name, c, wm) }
			row("parse (strict JSON)", r.Cold.ParseUS, r.Warm.ParseUS)
			row("decode and rules", r.Cold.DecodeUS, r.Warm.DecodeUS)
			row("canonicalize (RFC 8785)", r.Cold.CanonUS, r.Warm.CanonUS)
			row("schema compile", r.Cold.CompileUS, r.Warm.CompileUS)
			row("signature check", r.Cold.SignatureUS, r.Warm.SignatureUS)
			row("load and verify, total", r.Cold.TotalUS, r.Warm.TotalUS)
			fmt.Fprintf(w, "%-28s %12.1f\n", "floor (json + 1 verify)", r.FloorUS)
			fmt.Fprintf(w, "%-28s %11.2fx %11.2fx\n", "ratio to floor", r.Cold.RatioToFloor, r.Warm.RatioToFloor)
			fmt.Fprintln(w, "cold: every schema compiled; warm: schemas found in the compiled-schema cache")
			return nil
		},
	}
	cmd.Flags().IntVar(&opts.Caps, "caps", 100, "capabilities in the generated manifest")
	cmd.Flags().IntVar(&opts.Iterations, "iterations", 0, "measured runs (default: as many as fit in one second)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newBenchGatewayCmd(g *globals) *cobra.Command {
	var opts bench.GatewayOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "gateway [--duration D] [--workers N] [--store URL] [--replicas N] [--live-tokens N] [--audit-records N] [--capabilities N] [--json]",
		Short: "Drive real calls through a gateway over loopback HTTP and time them",
		Long: `Open a gateway in a temporary data folder, serve it on 127.0.0.1 (an ephemeral port), add a
client, issue it a token for system.settings.read, and drive POST /v1/ipc get_setting calls
from N concurrent keep-alive HTTP clients for the duration. Every call is a real call: token,
params, decision, the Settings app, and its decision and outcome records durable in the SQLite
audit log (group commit). Then time the decision alone: Broker.Explain with the token in the
verifier's cache. The load generator shares the machine with the gateway, in this process:
the CPU time reported per call (user and system) and the cores used are the process's, the
client's included, as they are for the empty exchange. Nothing listens beyond loopback, and
the data folder is removed.

With --floor the run also measures its floors on this machine, in the same run: the empty HTTP
exchange (the same workers, client and envelope against a handler that decides and records
nothing) before the load phase, and after it one client making one call at a time in a loop
that also times, in turn, one empty exchange and one synchronous 4 KiB append. It then reports
the goals as ratios to those floors: calls/s at least 0.6 of the empty exchange's, p99 at most
1.5 times its p99, and one client's added latency at most 1.3 synchronous appends. The
decision against cedar-go and an MCP call against the same call direct are in the race, go run
./bench. Beside them it reports the CPU's bound, the empty exchange's CPU per exchange over a
call's: once both use every core, calls/s against the empty exchange's cannot pass it. Every
run reports the process's context switches per call (and, with --floor, per exchange): how
often a thread slept for want of work and was woken, which waiting for syncs costs.

--live-tokens N, --audit-records N and --capabilities N make the run's scale before the load
phase: N more live tokens in the store, N audit records already in the log, or N more
capabilities registered (in apps of 1,000); go run ./bench --scale runs it at several scales,
and with replicas on PostgreSQL, and charts calls/s and p99 against each.

With --store postgres://... the gateways keep their state in PostgreSQL, in a schema the run
makes for itself and drops at the end, and --replicas N serves N gateways on it (in this one
process, each on its own port), the workers spread over them. The run then also reports the
database round trips per call (goal: at most 2).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Duration <= 0 || opts.Duration > bench.MaxGatewayDuration {
				return usageErr("--duration: must be positive and at most %s", bench.MaxGatewayDuration)
			}
			if opts.Workers < 1 || opts.Workers > bench.MaxGatewayWorkers {
				return usageErr("--workers: must be between 1 and %d", bench.MaxGatewayWorkers)
			}
			if opts.Replicas < 1 || opts.Replicas > bench.MaxGatewayReplicas {
				return usageErr("--replicas: must be between 1 and %d", bench.MaxGatewayReplicas)
			}
			if opts.LiveTokens < 0 || opts.LiveTokens > bench.MaxLiveTokens {
				return usageErr("--live-tokens: must be between 0 and %d", bench.MaxLiveTokens)
			}
			if opts.PriorRecords < 0 || opts.PriorRecords > bench.MaxPriorRecords {
				return usageErr("--audit-records: must be between 0 and %d", bench.MaxPriorRecords)
			}
			if opts.Capabilities < 0 || opts.Capabilities > bench.MaxCapabilities {
				return usageErr("--capabilities: must be between 0 and %d", bench.MaxCapabilities)
			}
			l, err := g.load(hostFlags{})
			if err != nil {
				return err
			}
			opts.Store = l.store
			gateway.TuneRuntime() // as capgate serve does
			r, err := bench.Gateway(opts)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, r)
			}
			fmt.Fprintf(w, "settings get_setting with a token over loopback HTTP, %d workers, %.1f s, %s, %d replica(s)\n",
				r.Workers, r.DurationS, r.Store, r.Replicas)
			if r.LiveTokens > 0 || r.PriorRecords > 0 || r.Capabilities > 0 {
				fmt.Fprintf(w, "with %d more live tokens, %d audit records and %d more capabilities before the load phase\n",
					r.LiveTokens, r.PriorRecords, r.Capabilities)
			}
			fmt.Fprintf(w, "%-32s %12d\n", "calls", r.Calls)
			fmt.Fprintf(w, "%-32s %12d\n", "errors", r.Errors)
			fmt.Fprintf(w, "%-32s %12.0f\n", "calls/s", r.CallsPerSec)
			fmt.Fprintf(w, "%-32s %12.3f\n", "latency p50 (ms)", r.P50MS)
			fmt.Fprintf(w, "%-32s %12.3f\n", "latency p99 (ms)", r.P99MS)
			fmt.Fprintf(w, "%-32s %12.3f\n", "latency max (ms)", r.MaxMS)
			fmt.Fprintf(w, "%-32s %12.1f\n", "CPU per call (µs)", r.CPUPerCallUS)
			fmt.Fprintf(w, "%-32s %12.2f\n", "cores used", r.CoresUsed)
			fmt.Fprintf(w, "%-32s %12.2f\n", "context switches per call", r.SwitchesPerCall)
			fmt.Fprintf(w, "%-32s %12d\n", "audit records", r.AuditRecords)
			fmt.Fprintf(w, "%-32s %12.1f\n", "audit records per commit", r.RecordsPerBatch)
			if r.RoundTripsPerCall > 0 {
				fmt.Fprintf(w, "%-32s %12.2f\n", "database round trips per call", r.RoundTripsPerCall)
				fmt.Fprintf(w, "%-32s %12.2f\n", "  of which the app's own data", r.AppRoundTripsPerCall)
				fmt.Fprintf(w, "%-32s %12.2f\n", "  of which the gateway's", r.RoundTripsPerCall-r.AppRoundTripsPerCall)
			}
			fmt.Fprintf(w, "%-32s %12.2f\n", "decision, cached token (µs)", r.DecisionUS)
			fmt.Fprintf(w, "%-32s %12d\n", "delayed-commit window (ms)", r.DelayedCommitMS)
			if f := r.Floor; f != nil {
				fmt.Fprintln(w, "floor on this machine: the empty HTTP exchange (same workers, nothing decided or recorded)")
				fmt.Fprintf(w, "%-32s %12.0f\n", "  calls/s", f.CallsPerSec)
				fmt.Fprintf(w, "%-32s %12.3f\n", "  latency p50 (ms)", f.P50MS)
				fmt.Fprintf(w, "%-32s %12.3f\n", "  latency p99 (ms)", f.P99MS)
				fmt.Fprintf(w, "%-32s %12.1f\n", "  CPU per exchange (µs)", f.CPUPerCallUS)
				fmt.Fprintf(w, "%-32s %12.2f\n", "  cores used", f.CoresUsed)
				fmt.Fprintf(w, "%-32s %12.2f\n", "  context switches per exchange", f.SwitchesPerCall)
				fmt.Fprintf(w, "%-32s %12.3f\n", "synchronous 4 KiB write (ms)", f.SyncWriteMS)
			}
			if q := r.Sequential; q != nil {
				fmt.Fprintf(w, "one client, one call at a time (%d turns of one empty exchange, one call, one fsync)\n", q.Runs)
				fmt.Fprintf(w, "%-32s %12.1f\n", "  empty exchange p50 (µs)", q.ExchangeUS)
				fmt.Fprintf(w, "%-32s %12.1f\n", "  call p50 (µs)", q.CallUS)
				fmt.Fprintf(w, "%-32s %12.1f\n", "  4 KiB write and fsync p50 (µs)", q.SyncWriteUS)
			}
			if len(r.Goals) > 0 {
				fmt.Fprintln(w, "goals, as ratios to the floors of this run")
				for _, gl := range r.Goals {
					cmp, met := "<=", "met"
					if gl.AtLeast {
						cmp = ">="
					}
					if !gl.Met {
						met = "NOT met"
					}
					fmt.Fprintf(w, "  %-52s %10.2f / %10.2f %-7s = %5.2f (goal %s %.1f) %s\n", gl.Name, gl.Figure, gl.Floor, gl.Unit, gl.Ratio, cmp, gl.Goal, met)
				}
				if f := r.Floor; f != nil && r.CPUBound > 0 {
					fmt.Fprintf(w, "  %-52s %10.2f / %10.2f %-7s = %5.2f (once both use every core, calls/s against the exchange's cannot pass it)\n",
						"the CPU's bound: CPU per exchange against per call", f.CPUPerCallUS, r.CPUPerCallUS, "µs", r.CPUBound)
				}
			}
			if opts.WithoutDelayedCommitUnsafe {
				fmt.Fprintln(w, "served without delayed-commit windows: not the gateway as shipped")
			}
			if r.FirstError != "" {
				fmt.Fprintf(w, "first error: %s\n", r.FirstError)
			}
			fmt.Fprintln(w, "the load generator runs on the same machine as the gateway")
			return nil
		},
	}
	cmd.Flags().DurationVar(&opts.Duration, "duration", 5*time.Second, "how long to drive calls")
	cmd.Flags().IntVar(&opts.Workers, "workers", 32, "concurrent keep-alive HTTP clients")
	cmd.Flags().IntVar(&opts.Replicas, "replicas", 1, "gateways served on the one store (more than one needs --store postgres://...)")
	cmd.Flags().StringVar(&opts.CPUProfile, "cpuprofile", "", "write a CPU profile of the load phase to this file (go tool pprof); with --floor, the empty exchange's to this file with .floor added")
	cmd.Flags().StringVar(&opts.Trace, "trace", "", "write an execution trace of the load phase to this file (go tool trace; -pprof=sync shows where calls wait); with --floor, the empty exchange's to this file with .floor added")
	cmd.Flags().BoolVar(&opts.Floor, "floor", false,
		"also measure the floors on this machine (the empty HTTP exchange with the same workers; one client's calls beside one exchange and one synchronous 4 KiB write) and report the goals as ratios to them")
	cmd.Flags().BoolVar(&opts.WithoutDelayedCommitUnsafe, "without-delayed-commit-unsafe", false,
		"serve with a broker that gives no call a delayed-commit window (measures the rest of the path)")
	cmd.Flags().IntVar(&opts.LiveTokens, "live-tokens", 0, "issue this many more live tokens, to another client, before the load phase (the scale of the tokens table)")
	cmd.Flags().IntVar(&opts.PriorRecords, "audit-records", 0, "append this many audit records before the load phase (the scale of the log the calls' records join)")
	cmd.Flags().IntVar(&opts.Capabilities, "capabilities", 0, "register this many more capabilities, in apps of their own, before the load phase (the scale of the registry)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newBenchProviderCmd() *cobra.Command {
	var opts bench.ProviderOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "provider [--calls N] [--pause D] [--unconfined] [--json]",
		Short: "Time a call through a provider process against the same handler called directly",
		Long: `Start capgate itself as a provider process (its internal bench provider-serve), as the
gateway starts a registered one: from a sealed copy of its program whose digest was checked,
with the gateway's provider environment, in the sandbox. Then call its one capability, which
answers with its params, through the provider protocol (gRPC on a unix socket) as the broker
calls a provider, and time it beside two floors measured in the same run: the same handler
called directly in this process, and the empty exchange, the same bytes sent to a child
process over a unix socket and read back. The kinds of call take turns in blocks of 100.
The goal: at most 0.1 ms added to the direct call at the median.

With --pause D every call waits D first (not timed): calls that come one at a time, the
processes idle in between, instead of back to back. With --unconfined a provider started
without a sandbox is measured beside the sandboxed one; where no sandbox can be made, only
that one is.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Calls < 1 || opts.Calls > bench.MaxProviderCalls {
				return usageErr("--calls: must be between 1 and %d", bench.MaxProviderCalls)
			}
			if opts.Pause < 0 || opts.Pause > bench.MaxProviderPause {
				return usageErr("--pause: must be between 0 and %s", bench.MaxProviderPause)
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench provider: capgate's own program: %w", err)
			}
			opts.Command, opts.Args = exe, []string{"bench", "provider-serve"}
			r, err := bench.Provider(opts)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(w, r)
			}
			how := "back to back"
			if r.PauseUS > 0 {
				how = fmt.Sprintf("each after a pause of %.0f µs", r.PauseUS)
			}
			fmt.Fprintf(w, "one call with %d bytes of params, answered with them; %d calls of each kind, %s\n", r.ParamsBytes, r.Calls, how)
			fmt.Fprintf(w, "%-36s %9s %9s %9s %11s\n", "latency (µs)", "p50", "p90", "p99", "start (ms)")
			lat := func(name string, l bench.Latency) {
				fmt.Fprintf(w, "%-36s %9.2f %9.2f %9.2f", name, l.P50US, l.P90US, l.P99US)
			}
			lat("floor: the handler called directly", r.Direct)
			fmt.Fprintln(w)
			lat("floor: the empty exchange", r.Exchange)
			fmt.Fprintln(w)
			row := func(name string, p *bench.ProviderRun) {
				if p == nil {
					return
				}
				lat(name, p.Latency)
				fmt.Fprintf(w, " %11.1f\n", p.StartMS)
				fmt.Fprintf(w, "%-36s %9.2f %9.2f %9.2f\n", "  added to the direct call", p.AddedP50US, p.AddedP90US, p.AddedP99US)
			}
			row("through the provider, sandboxed", r.Sandboxed)
			row("through the provider, unconfined", r.Unconfined)
			if r.SandboxUnavailable != "" {
				fmt.Fprintf(w, "no sandbox here (%s): the provider was measured unconfined only\n", r.SandboxUnavailable)
			}
			fmt.Fprintf(w, "goal: at most %.0f µs added at the median\n", r.GoalUS)
			fmt.Fprintln(w, "the empty exchange: the same bytes to a child process over a unix socket and back, nothing decoded")
			return nil
		},
	}
	cmd.Flags().IntVar(&opts.Calls, "calls", 5_000, "measured calls of each kind")
	cmd.Flags().DurationVar(&opts.Pause, "pause", 0, "wait this long before every call (calls one at a time instead of back to back)")
	cmd.Flags().BoolVar(&opts.Unconfined, "unconfined", false, "also measure a provider started without a sandbox")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// newBenchProviderServeCmd is internal, and hidden: the provider process capgate bench
// provider starts, capgate's own program serving the bench's handler, so that the bench needs
// no compiler and no program besides capgate. Run by hand, not by capgate, it says so and exits.
func newBenchProviderServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "provider-serve",
		Short:  "Internal: the provider process of capgate bench provider",
		Hidden: true,
		Args:   exactArgs(0),
		Run:    func(*cobra.Command, []string) { bench.ServeProvider() },
	}
}
