package toolserver_test

import (
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/manifest"
)

// BenchmarkAddedLatency measures, in one run, the same tool call made two ways, alternating:
// directly, by an MCP client of the tool server, and by an agent through capgate (POST /v1/ipc
// over loopback HTTP: the client key, the token, the decision, the durable audit records, the
// call to the same server over its own connection, the untrusted label). It reports the
// median of each and the latency capgate adds at the median; the MCP issue's goal is under
// 0.3 ms. The tool is classified read and low risk by an operator overlay, so no call waits
// for the person.
func BenchmarkAddedLatency(b *testing.B) {
	f := newFixtureOf(b, map[string]any{"echo": map[string]any{"side_effects": "read", "risk": "low", "reversibility": "reversible"}}, false)
	caller := broker.Caller{ClientID: "cl_alice", Name: "alice", Trust: manifest.AuthUser}
	iss, err := f.g.Broker.RequestCapability(f.ctx, caller, broker.CapabilityRequest{Capabilities: []string{"mcp.srv.echo"}, Duration: 3600, Reason: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "capgate-bench", Version: "1"}, nil)
	sess, err := client.Connect(f.ctx, &mcp.CommandTransport{Command: exec.Command(testServer, "-control", f.control)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	args := map[string]any{"text": "hi"}
	// Warm both paths: connections, caches, the token in the verifier.
	for range 20 {
		if _, err := sess.CallTool(f.ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		if r := f.callWith("echo", `{"text":"hi"}`, iss.Wire); r.Body.Status != "success" {
			b.Fatalf("through capgate: %s %s", r.Body.ErrorCode, r.Body.ErrorMessage)
		}
	}
	var direct, via []time.Duration
	for b.Loop() {
		t0 := time.Now()
		res, err := sess.CallTool(f.ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
		t1 := time.Now()
		if err != nil || res.IsError {
			b.Fatalf("direct: %v", err)
		}
		r := f.callWith("echo", `{"text":"hi"}`, iss.Wire)
		t2 := time.Now()
		if r.Body.Status != "success" {
			b.Fatalf("through capgate: %s %s", r.Body.ErrorCode, r.Body.ErrorMessage)
		}
		direct, via = append(direct, t1.Sub(t0)), append(via, t2.Sub(t1))
	}
	d, v := median(direct), median(via)
	b.ReportMetric(float64(d.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(v.Microseconds()), "capgate-p50-µs")
	b.ReportMetric(float64((v - d).Microseconds()), "added-p50-µs")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
