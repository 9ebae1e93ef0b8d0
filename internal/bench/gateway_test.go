package bench

import (
	"runtime"
	"testing"
	"time"
)

// TestGateway runs a short load phase, as shipped and without delayed-commit windows, and
// checks each report is sane; it asserts no speed.
func TestGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a gateway and serves it on loopback")
	}
	for _, tc := range []struct {
		name   string
		unsafe bool
	}{{"as shipped", false}, {"without delayed commit", true}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Gateway(GatewayOptions{Duration: 300 * time.Millisecond, Workers: 4, WithoutDelayedCommitUnsafe: tc.unsafe})
			if err != nil {
				t.Fatal(err)
			}
			if r.Workers != 4 {
				t.Errorf("workers = %d, want 4", r.Workers)
			}
			if r.Calls <= 0 || r.Errors != 0 {
				t.Fatalf("calls = %d, errors = %d (first: %s)", r.Calls, r.Errors, r.FirstError)
			}
			if r.CallsPerSec <= 0 || r.P50MS <= 0 || r.P50MS > r.P99MS || r.P99MS > r.MaxMS {
				t.Errorf("figures out of order: %+v", r)
			}
			// Every call is recorded: a decision and an outcome each, plus the token's issue.
			if r.AuditRecords < 2*r.Calls+1 {
				t.Errorf("audit records = %d for %d calls, want at least %d", r.AuditRecords, r.Calls, 2*r.Calls+1)
			}
			if r.DecisionUS <= 0 || r.DecisionRuns == 0 {
				t.Errorf("decision = %v µs over %d runs", r.DecisionUS, r.DecisionRuns)
			}
			if tc.unsafe && r.DelayedCommitMS != 0 {
				t.Errorf("delayed commit = %d ms without delayed commit", r.DelayedCommitMS)
			}
		})
	}
}

// TestGatewayFloor checks that a run asked for its floors reports them, and one not asked
// does not; it asserts no speed.
func TestGatewayFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a gateway and serves it on loopback")
	}
	r, err := Gateway(GatewayOptions{Duration: 200 * time.Millisecond, Workers: 2, Floor: true})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Floor
	if f == nil {
		t.Fatal("no floor reported")
	}
	if f.CallsPerSec <= 0 || f.P50MS <= 0 || f.P50MS > f.P99MS || f.SyncWriteMS <= 0 {
		t.Errorf("floor figures out of order: %+v", *f)
	}
	if r.Calls <= 0 || r.Errors != 0 {
		t.Fatalf("calls = %d, errors = %d (first: %s)", r.Calls, r.Errors, r.FirstError)
	}
	q := r.Sequential
	if q == nil || q.Runs != sequentialRuns || q.ExchangeUS <= 0 || q.CallUS <= 0 || q.SyncWriteUS <= 0 ||
		q.AddedUS != q.CallUS-q.ExchangeUS || q.AddedPerSyncWrite != q.AddedUS/q.SyncWriteUS {
		t.Errorf("sequential figures: %+v", q)
	}
	if len(r.Goals) != 3 {
		t.Fatalf("goals: %+v", r.Goals)
	}
	for _, g := range r.Goals {
		if g.Floor <= 0 || g.Ratio != g.Figure/g.Floor || g.Met != (g.AtLeast && g.Ratio >= g.Goal || !g.AtLeast && g.Ratio <= g.Goal) {
			t.Errorf("goal %+v", g)
		}
	}
	if r.CPUBound <= 0 || r.CPUBound != f.CPUPerCallUS/r.CPUPerCallUS {
		t.Errorf("the CPU's bound is %v, want the floor's CPU per exchange (%v µs) over the call's (%v µs)", r.CPUBound, f.CPUPerCallUS, r.CPUPerCallUS)
	}
	// Every call waits for a sync, so some thread sleeps: the count is read where the system
	// gives it (getrusage's ru_nvcsw and ru_nivcsw on Linux).
	if runtime.GOOS == "linux" && r.SwitchesPerCall <= 0 {
		t.Errorf("no context switch counted in the load phase: %v a call", r.SwitchesPerCall)
	}
	r, err = Gateway(GatewayOptions{Duration: 100 * time.Millisecond, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Floor != nil || r.Sequential != nil || r.Goals != nil || r.CPUBound != 0 {
		t.Errorf("a floor reported unasked: %+v %+v %+v %v", r.Floor, r.Sequential, r.Goals, r.CPUBound)
	}
}

// TestGatewayScale runs with live tokens, prior audit records and more capabilities made
// before the load phase, and reports the scale it ran at; it asserts no speed.
func TestGatewayScale(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a gateway and serves it on loopback")
	}
	r, err := Gateway(GatewayOptions{Duration: 200 * time.Millisecond, Workers: 2, LiveTokens: 50, PriorRecords: 1000, Capabilities: 1500})
	if err != nil {
		t.Fatal(err)
	}
	if r.LiveTokens != 50 || r.PriorRecords != 1000 || r.Capabilities != 1500 || r.Calls <= 0 || r.Errors != 0 {
		t.Fatalf("report: %+v", r)
	}
	// The more capabilities are in the registry (in two apps), beside the built-in apps'.
	if r.Registered < 1500+1 {
		t.Errorf("registered capabilities = %d, want more than 1500", r.Registered)
	}
	// The prior records are in the log with the calls' own.
	if r.AuditRecords < 1000+2*r.Calls {
		t.Errorf("audit records = %d, want at least %d", r.AuditRecords, 1000+2*r.Calls)
	}
}
