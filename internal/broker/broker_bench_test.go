package broker

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/capgate/capgate/internal/apps/settings"
	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// settingsState keeps the Settings app's values in the store, as the gateway does.
type settingsState struct{ s store.State }

func (st settingsState) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := st.s.GetState(ctx, settings.AppID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, settings.ErrUnset
	}
	return v, err
}

func (st settingsState) Put(ctx context.Context, key string, value []byte) error {
	return st.s.PutState(ctx, settings.AppID, key, value)
}

// benchSettings is a broker wired as the gateway wires it, on a SQLite file in b.TempDir():
// the Settings app at Tier 1, the audit writer with checkpoints, and a token for
// system.settings.read with no use limit issued through RequestCapability. Unlike the gateway it
// gives no delayed-commit window (get_setting declares no reversibility, so as shipped each
// call waits the default 3 s), so that the rest of the path is measured. It returns the
// broker, the caller and a get_setting request under the token.
func benchSettings(b *testing.B) (*Broker, Caller, Request) {
	b.Helper()
	ctx := context.Background()
	st := gatewaytest.Store(b)
	reg, app, _ := gatewaytest.Registry(b, st, settings.Manifest, settings.Alias)
	pub, key, _ := ed25519.GenerateKey(nil)
	w := audit.NewWriter(st, &audit.Options{CheckpointKey: key, CheckpointEvery: 1000})
	b.Cleanup(func() { w.Close() })
	br, err := New(Options{Store: st, Registry: reg, Tokens: token.NewVerifier(pub, 4096), Audit: w,
		Consent: consent.New(st, &consent.Options{Surface: true}), TokenKey: key, DelayedCommit: -1,
		Handlers: map[string]sdk.Handler{settings.AppID: settings.New(app.Doc, settingsState{st})}})
	if err != nil {
		b.Fatal(err)
	}
	caller := Caller{ClientID: "cl_bench", Name: "bench", Trust: manifest.AuthUser}
	if err := st.PutClient(ctx, store.Client{ID: caller.ClientID, Name: caller.Name, Trust: "user"}); err != nil {
		b.Fatal(err)
	}
	issued, err := br.RequestCapability(ctx, caller, CapabilityRequest{Capabilities: []string{"system.settings.read"}, Duration: 3600, Reason: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	req := Request{RequestID: "bench", Action: "query", App: settings.Alias, Method: "get_setting",
		Params: json.RawMessage(`{"category":"display","key":"brightness"}`), Token: issued.Wire}
	// The IPC front passes the params it parsed as well as their text.
	v, err := jcs.Parse(req.Params, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.ParamsValue = v.Interface()
	return br, caller, req
}

// BenchmarkDecisionCachedToken measures the decision of the call path with a cached token:
// resolve the capability, the token from the verifier's cache and its state from the
// broker's cache, the params against their schema, the constraints, the mandates, Decide.
// The goal is at most 2 µs.
func BenchmarkDecisionCachedToken(b *testing.B) {
	br, caller, req := benchSettings(b)
	ctx := context.Background()
	b.Run("same-params", func(b *testing.B) {
		// An agent repeating a call: the params' schema check is remembered.
		if d := br.decide(ctx, caller, req, &facts{}); !d.Allowed() { // warms the caches
			b.Fatalf("not allowed: %s %s", d.Code, d.Explanation)
		}
		b.ReportAllocs()
		for b.Loop() {
			if d := br.decide(ctx, caller, req, &facts{}); !d.Allowed() {
				b.Fatalf("not allowed: %s %s", d.Code, d.Explanation)
			}
		}
	})
	b.Run("new-params", func(b *testing.B) {
		// Params never seen before on every call: the schema check runs each time.
		const n = 1 << 12
		reqs := make([]Request, n)
		for i := range reqs {
			reqs[i] = req
			reqs[i].Params = json.RawMessage(fmt.Sprintf(`{"category":"display","key":"k%d"}`, i))
			reqs[i].ParamsValue = map[string]any{"category": "display", "key": fmt.Sprintf("k%d", i)}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			br.cache.passed.Clear()
			if d := br.decide(ctx, caller, reqs[i%n], &facts{}); !d.Allowed() {
				b.Fatalf("not allowed: %s %s", d.Code, d.Explanation)
			}
			i++
		}
	})
}

// BenchmarkCallCachedToken measures Broker.Explain with a cached token: the decision with
// its step-by-step trace, with no side effect.
func BenchmarkCallCachedToken(b *testing.B) {
	br, caller, req := benchSettings(b)
	ctx := context.Background()
	if d := br.Explain(ctx, caller, req); !d.Allowed() { // warms the verifier's cache
		b.Fatalf("not allowed: %s %s", d.Code, d.Explanation)
	}
	b.ReportAllocs()
	for b.Loop() {
		if d := br.Explain(ctx, caller, req); !d.Allowed() {
			b.Fatalf("not allowed: %s %s", d.Code, d.Explanation)
		}
	}
}

// BenchmarkCallEndToEnd measures Broker.Call of get_setting under the token: the decision,
// the use taken, the decision and outcome records durable in SQLite, and the Settings app.
// serial is one call at a time (its latency); parallel is 16 callers a core, where group
// commit shares transactions among them (its throughput).
func BenchmarkCallEndToEnd(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		br, caller, req := benchSettings(b)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if r := br.Call(ctx, caller, req); !r.OK() {
				b.Fatalf("call failed: %s %s", r.Code, r.Message)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		br, caller, req := benchSettings(b)
		ctx := context.Background()
		b.ReportAllocs()
		b.SetParallelism(16)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if r := br.Call(ctx, caller, req); !r.OK() {
					b.Errorf("call failed: %s %s", r.Code, r.Message)
					return
				}
			}
		})
	})
}
