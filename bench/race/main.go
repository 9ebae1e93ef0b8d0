// Command race runs capgate's hot paths side by side with what people would pick instead, in
// one process and one run, and prints the ratio of each to what it is compared with: the
// same one-rule decision in capgate, cedar-go and OPA; token verification against
// macaroons (and biscuit, where its module can be had); a manifest load and verify against
// the naive floor; a call through capgate against the handler called directly; an MCP
// tools/call through capgate against the same call made directly; then, alone, the gateway's
// own goals (capgate bench gateway --floor: calls/s and p99 with 16 workers against the empty
// exchange's, one client's added latency against one fsync), so that every goal of the
// performance issue is in one table from one command. It writes a PNG chart of the ratios
// (docs/race.png from the repository's root).
//
// It is a module of its own, so that cedar-go, OPA, macaroons and the plotting library never
// enter capgate's dependencies; from the repository's root, `go run ./bench` builds and runs
// it (bench/main.go, in capgate's module, is only a launcher). See docs/performance.md.
//
// Every contender runs in rounds: each round runs one batch of every contender (about
// --round long), in an order rotated each round, so that a change of the machine's load
// meets all of them alike; the figure is the median of the rounds' ns/op. Before the rounds
// each contender runs unmeasured for a moment (caches, connections, the first collections).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/capgate/capgate/internal/bench"
	"github.com/capgate/capgate/internal/gateway"
)

// toolServerArg, as the only argument, makes this program the race's MCP tool server
// (serveToolServer) instead: the gateway and the direct client start it so.
const toolServerArg = "serve-mcp-tool-server"

// gatewayArg, followed by a duration, makes this program run the gateway's goals alone
// (bench.Gateway with its floors) and print the report as JSON: the race runs them so, in a
// process of its own, as `capgate bench gateway --floor` runs.
const gatewayArg = "run-gateway-goals"

// Limits of a run.
const (
	// scaleWorkers is the workers of each --scale run: the gateway section's usual load.
	scaleWorkers = 16
	maxRounds    = 1000
	maxRound     = 10 * time.Second
	// runTimeout bounds the whole run, whatever it is asked.
	runTimeout = 30 * time.Minute
)

// Row is one line of the race: a contender's figure beside what it is compared with.
type Row struct {
	Group     string `json:"group"`     // decision, token, manifest, call, mcp, gateway
	Contender string `json:"contender"` // what is measured
	Baseline  string `json:"baseline"`  // what it is compared with
	// NS and BaselineNS are the medians of the rounds in ns/op; Ratio is NS / BaselineNS.
	// All three are 0 for a row not measured here (Note says why).
	NS         float64 `json:"ns_per_op,omitempty"`
	BaselineNS float64 `json:"baseline_ns_per_op,omitempty"`
	Ratio      float64 `json:"ratio,omitempty"`
	// Goal, when set, is the goal for Ratio (at most, or at least with AtLeast), and
	// Met whether it was met.
	Goal    float64 `json:"goal,omitempty"`
	AtLeast bool    `json:"at_least,omitempty"`
	Met     bool    `json:"met,omitempty"`
	// Unit is the figures' unit when they are not ns/op: "calls/s" (the gateway's throughput).
	Unit string `json:"unit,omitempty"`
	Note string `json:"note,omitempty"`
	// added is a row whose figure is Contender's median less Baseline's, compared with
	// Floor's median plus Baseline's (the MCP goal: the latency capgate adds against one fsync
	// and one MCP hop).
	added bool
	floor string
}

// The goals of the race's rows, as ratios (at most).
const (
	// goalDecision: a decision with a cached token within 1.0x cedar-go's IsAuthorized on the
	// equivalent one-rule policy.
	goalDecision = 1.0
	// goalMCPAdded: what capgate adds to a tools/call at most 1.3x one 4 KiB fsync plus the
	// call direct (one MCP hop of the SDK).
	goalMCPAdded = 1.3
)

// report is a whole run, as --json prints it.
type report struct {
	Date      string  `json:"date"` // RFC 3339, UTC, when the rounds began
	Machine   string  `json:"machine"`
	GoVersion string  `json:"go_version"`
	Procs     int     `json:"gomaxprocs"`
	Rounds    int     `json:"rounds"`
	RoundMS   float64 `json:"round_ms"` // each contender's batch per round
	Rows      []Row   `json:"rows"`
	Chart     string  `json:"chart,omitempty"` // where the chart was written
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == toolServerArg {
		if err := serveToolServer(); err != nil {
			fmt.Fprintln(os.Stderr, "race: the tool server:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 3 && os.Args[1] == gatewayArg {
		if err := gatewayGoals(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "race: the gateway's goals:", err)
			os.Exit(1)
		}
		return
	}
	// The gateway's garbage collector is tuned as capgate serve tunes it (GOGC=400 unless the
	// environment says otherwise); every contender shares the process, and so the setting.
	gateway.TuneRuntime()
	rounds := flag.Int("rounds", 11, "measured rounds (at most 1000)")
	round := flag.Duration("round", 20*time.Millisecond, "each contender's batch per round (at most 10s)")
	asJSON := flag.Bool("json", false, "print the result as JSON instead of a table")
	chart := flag.String("chart", filepath.Join("docs", "race.png"), `where to write the chart ("" for none)`)
	quiet := flag.Bool("quiet", false, "no progress on stderr")
	gatewayFor := flag.Duration("gateway-duration", 5*time.Second, "the gateway's goals after the rounds: capgate bench gateway --floor with 16 workers for this long (at most 1m; 0 leaves them out)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	scale := flag.Bool("scale", false, "instead of the race, run capgate bench gateway at growing scales (live tokens, audit records in the log, capabilities, replicas) and chart them")
	postgres := flag.String("postgres", os.Getenv("CAPGATE_TEST_POSTGRES"), "with --scale: the PostgreSQL database of the replicas axis, a postgres:// URL (the run makes a schema of its own and drops it); none leaves the axis out")
	scaleFor := flag.Duration("scale-duration", 3*time.Second, "with --scale: each run's load phase (at most 1m)")
	scaleFrom := flag.String("scale-from", "", "with --scale: draw the chart and table from this file of an earlier run's --json output instead of running")
	scaleChart := flag.String("scale-chart", filepath.Join("docs", "scale.png"), `with --scale: where to write its chart ("" for none)`)
	traceFile := flag.String("trace", "", "write an execution trace of the whole run to this file (go tool trace; -pprof=sync shows where calls wait)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench [--rounds N] [--round D] [--json] [--chart PATH] [--quiet] [--cpuprofile FILE] [--trace FILE]")
		fmt.Fprintln(os.Stderr, "       go run ./bench --scale [--postgres URL] [--scale-duration D] [--scale-chart PATH] [--json] [--quiet]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || *rounds < 1 || *rounds > maxRounds || *round <= 0 || *round > maxRound || *scaleFor <= 0 || *scaleFor > time.Minute ||
		*gatewayFor < 0 || *gatewayFor > time.Minute {
		flag.Usage()
		os.Exit(2)
	}
	progress := func(s string) {
		if !*quiet {
			fmt.Fprintln(os.Stderr, "race:", s)
		}
	}
	if *scale {
		var pts []scalePoint
		var err error
		if *scaleFrom != "" {
			pts, err = readScale(*scaleFrom)
		} else {
			pts, err = runScale(*scaleFor, scaleWorkers, *postgres, progress)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "race:", err)
			os.Exit(1)
		}
		if *scaleChart != "" {
			if _, err := os.Stat(filepath.Dir(*scaleChart)); err != nil {
				progress(fmt.Sprintf("no folder %s here: the chart is not written (--scale-chart PATH)", filepath.Dir(*scaleChart)))
			} else if err := writeScaleChart(pts, *scaleChart); err != nil {
				fmt.Fprintln(os.Stderr, "race:", err)
				os.Exit(1)
			}
		}
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(pts); err != nil {
				os.Exit(1)
			}
			return
		}
		printScale(os.Stdout, pts)
		return
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "race:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "race:", err)
			os.Exit(1)
		}
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "race:", err)
			os.Exit(1)
		}
	}
	rep, err := run(*rounds, *round, *gatewayFor, progress)
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	if *traceFile != "" {
		trace.Stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "race:", err)
		os.Exit(1)
	}
	if *chart != "" {
		if _, err := os.Stat(filepath.Dir(*chart)); err != nil {
			progress(fmt.Sprintf("no folder %s here: the chart is not written (--chart PATH)", filepath.Dir(*chart)))
		} else if err := writeChart(rep, *chart); err != nil {
			fmt.Fprintln(os.Stderr, "race:", err)
			os.Exit(1)
		} else {
			rep.Chart = *chart
		}
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			os.Exit(1)
		}
		return
	}
	printTable(os.Stdout, rep)
}

// run opens the gateway, prepares every contender, measures them and makes the rows.
func run(rounds int, round, gatewayFor time.Duration, progress func(string)) (report, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		return report{}, err
	}
	progress("opening a gateway")
	r, err := openRig(ctx, self)
	if err != nil {
		return report{}, err
	}
	defer r.close()

	ops := map[string]*op{}
	add := func(name string, fn func() error) {
		ops[name] = &op{name: name, fn: fn}
	}
	var rows []Row
	row := func(group, contender, baseline string) {
		rows = append(rows, Row{Group: group, Contender: contender, Baseline: baseline})
	}
	missing := func(group, contender, baseline, note string) {
		rows = append(rows, Row{Group: group, Contender: contender, Baseline: baseline, Note: note})
	}

	const (
		capDecision = "capgate decision, cached token"
		cedarIsAuth = "cedar-go Authorize (IsAuthorized)"
		opaEval     = "OPA prepared query Eval"
	)
	fn, err := capgateDecision(r)
	if err != nil {
		return report{}, err
	}
	add(capDecision, fn)
	if fn, err = cedarDecision(r.caller.ClientID); err != nil {
		return report{}, err
	}
	add(cedarIsAuth, fn)
	if fn, err = opaDecision(ctx, r.caller.ClientID); err != nil {
		return report{}, err
	}
	add(opaEval, fn)
	row("decision", capDecision, cedarIsAuth)
	rows[len(rows)-1].Goal = goalDecision
	row("decision", capDecision, opaEval)

	const (
		capVerify       = "capgate token verify"
		capVerifyCached = "capgate token verify, cached"
		macaroonV       = "macaroon verify"
		ed25519V        = "one ed25519.Verify"
		biscuitV        = "biscuit verify"
	)
	uncached, cached, floor, err := capgateVerify()
	if err != nil {
		return report{}, err
	}
	add(capVerify, uncached)
	add(capVerifyCached, cached)
	add(ed25519V, floor)
	if fn, err = macaroonVerify(); err != nil {
		return report{}, err
	}
	add(macaroonV, fn)
	row("token", capVerify, macaroonV)
	row("token", capVerifyCached, macaroonV)
	row("token", capVerify, ed25519V)
	missing("token", capVerify, biscuitV, biscuitUnavailable)

	const (
		manifestWarm  = "manifest load and verify, warm"
		manifestCold  = "manifest load and verify, cold"
		manifestFloor = "encoding/json + one ed25519.Verify"
	)
	warm, cold, mfloor, err := manifestVerify()
	if err != nil {
		return report{}, err
	}
	add(manifestWarm, warm)
	add(manifestCold, cold)
	add(manifestFloor, mfloor)
	row("manifest", manifestWarm, manifestFloor)
	row("manifest", manifestCold, manifestFloor)

	const (
		callVia    = "get_setting through capgate"
		callDirect = "the Settings handler called directly"
	)
	via, direct, err := settingsCalls(r)
	if err != nil {
		return report{}, err
	}
	add(callVia, via)
	add(callDirect, direct)
	row("call", callVia, callDirect)

	const (
		mcpVia        = "MCP tools/call through capgate"
		mcpDirect     = "the same tools/call direct"
		syncWrite     = "one 4 KiB write and fsync"
		mcpAdded      = "MCP: what capgate adds"
		mcpAddedFloor = "one 4 KiB fsync + the call direct"
	)
	if r.noToolServer != "" {
		missing("mcp", mcpVia, mcpDirect, "not measured here: "+r.noToolServer)
	} else {
		via, direct, closeMCP, err := mcpCalls(r, self)
		if err != nil {
			return report{}, err
		}
		defer closeMCP()
		add(mcpVia, via)
		add(mcpDirect, direct)
		add(syncWrite, syncWriteOp(r.dir))
		row("mcp", mcpVia, mcpDirect)
		rows = append(rows, Row{Group: "mcp", Contender: mcpAdded, Baseline: mcpAddedFloor, Goal: goalMCPAdded,
			added: true, floor: syncWrite})
	}

	// The order of the first round is the order of the rows: each contender beside what it
	// is compared with.
	var order []*op
	seen := map[string]bool{}
	for _, rw := range rows {
		for _, name := range []string{rw.Contender, rw.Baseline, rw.floor} {
			if o, ok := ops[name]; ok && !seen[name] {
				seen[name] = true
				order = append(order, o)
			}
		}
	}
	rep := report{Date: time.Now().UTC().Format(time.RFC3339), Machine: machine(), GoVersion: runtime.Version(),
		Procs: runtime.GOMAXPROCS(0), Rounds: rounds, RoundMS: float64(round.Microseconds()) / 1e3}
	if err := measure(order, rounds, round, progress); err != nil {
		return report{}, err
	}
	for i := range rows {
		rw := &rows[i]
		if rw.added {
			via, direct, fsync := ops[mcpVia].median(), ops[mcpDirect].median(), ops[rw.floor].median()
			rw.NS, rw.BaselineNS = via-direct, fsync+direct
		} else {
			c, b := ops[rw.Contender], ops[rw.Baseline]
			if rw.Note != "" || c == nil || b == nil {
				continue
			}
			rw.NS, rw.BaselineNS = c.median(), b.median()
		}
		if rw.BaselineNS > 0 {
			rw.Ratio = rw.NS / rw.BaselineNS
		}
		rw.Met = rw.Goal > 0 && rw.Ratio <= rw.Goal
	}
	if gatewayFor > 0 {
		// After the rounds, alone: the load phase needs both processors, so the rounds' gateway
		// (its tool server, its background writers) is closed first, and the goals run in a
		// process of their own, as `capgate bench gateway --floor` does, without the rounds'
		// memory and goroutines beside them.
		r.close()
		progress("the gateway's goals: capgate bench gateway --floor, in a process of its own")
		g, err := runGatewayGoals(ctx, self, gatewayFor)
		if err != nil {
			return report{}, fmt.Errorf("the gateway's goals: %w", err)
		}
		rows = append(rows, gatewayRows(g)...)
	} else {
		rows = append(rows, Row{Group: "gateway", Contender: "the gateway's goals", Baseline: "their floors",
			Note: "left out: --gateway-duration 0"})
	}
	rep.Rows = rows
	return rep, nil
}

// gatewayRows are the goals of a gateway run with its floors (bench.GatewayReport.Goals) as
// rows of the race: calls/s and p99 with 16 workers against the empty exchange's, and one
// client's added latency against one fsync in the same loop; then the CPU per call against
// the empty exchange's, which bounds the calls/s row.
func gatewayRows(g bench.GatewayReport) []Row {
	var out []Row
	for _, gl := range g.Goals {
		rw := Row{Group: "gateway", Goal: gl.Goal, AtLeast: gl.AtLeast}
		switch gl.Unit {
		case "calls/s":
			rw.Contender, rw.Baseline = fmt.Sprintf("calls/s through capgate, %d workers", g.Workers), "the empty HTTP exchange's"
			rw.NS, rw.BaselineNS, rw.Unit = gl.Figure, gl.Floor, "calls/s"
		case "ms":
			rw.Contender, rw.Baseline = fmt.Sprintf("p99 through capgate, %d workers", g.Workers), "the empty HTTP exchange's"
			rw.NS, rw.BaselineNS = gl.Figure*1e6, gl.Floor*1e6
		case "µs":
			rw.Contender, rw.Baseline = "one client: what capgate adds", "one 4 KiB fsync in the same loop"
			rw.NS, rw.BaselineNS = gl.Figure*1e3, gl.Floor*1e3
		default:
			continue
		}
		if rw.BaselineNS > 0 {
			rw.Ratio = rw.NS / rw.BaselineNS
		}
		rw.Met = rw.Ratio <= rw.Goal
		if rw.AtLeast {
			rw.Met = rw.Ratio >= rw.Goal
		}
		out = append(out, rw)
	}
	if f := g.Floor; f != nil && g.CPUBound > 0 {
		// No goal of its own: the bound the CPU sets on the calls/s row. Its ratio is the
		// most the gateway's CPU per call may be for that goal's 0.6 to be reachable once both
		// use every core: 1/0.6, about 1.67x.
		rw := Row{Group: "gateway", Contender: "CPU per call through capgate", Baseline: "per empty HTTP exchange",
			NS: g.CPUPerCallUS * 1e3, BaselineNS: f.CPUPerCallUS * 1e3}
		rw.Ratio = rw.NS / rw.BaselineNS
		out = append(out, rw)
	}
	return out
}

// machine names this machine as docs/performance.md does: its processors and their model.
func machine() string {
	model := runtime.GOARCH
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs, %s", runtime.NumCPU(), model)
}

func printTable(w io.Writer, rep report) {
	fmt.Fprintf(w, "capgate race, %s, %s, %s, GOMAXPROCS %d: medians of %d interleaved rounds in one process\n\n",
		rep.Date, rep.Machine, rep.GoVersion, rep.Procs, rep.Rounds)
	// Names are left-aligned, figures right-aligned: tabwriter aligns every cell one way, so
	// the figures are padded here.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "contender\t    figure\tcompared with\t    figure\t   ratio\tgoal")
	for _, r := range rep.Rows {
		if r.Note != "" {
			fmt.Fprintf(tw, "%s\t%10s\t%s\t%10s\t%s\n", r.Contender, "", r.Baseline, "", firstWords(r.Note))
			continue
		}
		goal := ""
		if r.Goal > 0 {
			goal = fmt.Sprintf("<= %.1fx ", r.Goal)
			if r.AtLeast {
				goal = fmt.Sprintf(">= %.1fx ", r.Goal)
			}
			if r.Met {
				goal += "met"
			} else {
				goal += "NOT met"
			}
		}
		fig, base := figure(r.NS), figure(r.BaselineNS)
		if r.Unit == "calls/s" {
			fig, base = fmt.Sprintf("%.0f/s", r.NS), fmt.Sprintf("%.0f/s", r.BaselineNS)
		}
		fmt.Fprintf(tw, "%s\t%10s\t%s\t%10s\t%7.2fx\t%s\n", r.Contender, fig, r.Baseline, base, r.Ratio, goal)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range rep.Rows {
		if r.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", r.Baseline, r.Note)
		}
	}
	if rep.Chart != "" {
		fmt.Fprintf(w, "chart: %s\n", rep.Chart)
	}
}

// firstWords is a note's part before its first colon, for the table's narrow column.
func firstWords(note string) string {
	s, _, _ := strings.Cut(note, ":")
	return s
}

// figure is ns/op as ns below 10 µs and as µs above.
func figure(ns float64) string {
	if ns < 10_000 {
		return fmt.Sprintf("%.0f ns", ns)
	}
	return fmt.Sprintf("%.1f µs", ns/1e3)
}
