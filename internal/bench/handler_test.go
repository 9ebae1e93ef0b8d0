package bench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/gateway"
)

// BenchmarkHandler measures capgate's own side of a call, without the network: the gateway's
// HTTP handler (the IPC front, the broker, the Settings app, the audit records made durable
// with group commit) serving the load phase's request in memory, 16 callers a core, against
// the empty exchange's handler served the same way. cpu-µs/op is the process's CPU time per
// call (user and system, the collector and the audit goroutines included): what the load
// phase's calls cost beyond the HTTP exchange.
//
// Run: go test ./internal/bench -run '^$' -bench Handler -benchmem
func BenchmarkHandler(b *testing.B) {
	gateway.TuneRuntime() // as capgate serve and capgate bench gateway do
	dir := b.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := gateway.Open(context.Background(), gateway.Config{DataDir: dir, Listen: "127.0.0.1:0", Socket: "-", Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	key, caller, err := addClient(ctx, g.Store)
	if err != nil {
		b.Fatal(err)
	}
	issued, err := g.Broker.RequestCapability(ctx, caller, broker.CapabilityRequest{
		Capabilities: []string{"system.settings.read"}, Duration: 3600, Reason: "benchmark"})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"empty exchange", http.HandlerFunc(floorHandler)},
		{"call", g.Handler()},
	} {
		b.Run(c.name, func(b *testing.B) {
			var n atomic.Int64
			serve := func() {
				body := envelope("h-"+strconv.FormatInt(n.Add(1), 10), issued.Wire)
				r := httptest.NewRequest(http.MethodPost, "/v1/ipc", bytes.NewReader(body))
				r.Header.Set("Authorization", "Bearer "+key)
				r.Header.Set("Content-Type", "application/json")
				r.RemoteAddr = "127.0.0.1:40000"
				w := httptest.NewRecorder()
				c.h.ServeHTTP(w, r)
				if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"status":"success"`)) {
					b.Fatalf("the call failed: %d %s", w.Code, w.Body.String())
				}
			}
			serve()
			b.ReportAllocs()
			b.SetParallelism(16)
			cpu0 := processCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					serve()
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
