package gateway

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store/postgres/pgtest"
)

// gatewayGoroutines returns the stacks of the goroutines running the gateway's own code.
func gatewayGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "capgate/internal/gateway.(*Gateway)") {
			out = append(out, g)
		}
	}
	return out
}

// Issue 16: the sweep and the store watch (PostgreSQL's notifications) ran on after Serve
// and Close. A Close that comes while the gateway serves ends the serve, waits for its drain,
// and returns with none of the gateway's goroutines left; Serve returns first.
func TestCloseWhileServing(t *testing.T) {
	pg := pgtest.Schema(t)
	for _, st := range []string{"", pg} {
		name := "sqlite"
		if st != "" {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			before := len(gatewayGoroutines()) // another test's, if any (none when all closed)
			g, err := Open(context.Background(), Config{DataDir: t.TempDir(), Store: st, Listen: "127.0.0.1:0", Socket: "-",
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			ready := make(chan struct{})
			served := make(chan error, 1)
			go func() { served <- g.Serve(context.Background(), func(string, string) { close(ready) }) }()
			<-ready
			watching := st != ""
			deadline := time.Now().Add(5 * time.Second)
			for {
				all := strings.Join(gatewayGoroutines(), "\n")
				if strings.Contains(all, "(*Gateway).sweep") && (!watching || strings.Contains(all, "(*Gateway).watch")) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the sweep (and the store watch) do not run:\n%s", all)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-served:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			default:
				t.Fatal("Close returned while Serve still serves")
			}
			if left := gatewayGoroutines(); len(left) > before {
				t.Fatalf("%d goroutines of the gateway run after Close (%d before Open):\n%s", len(left), before, strings.Join(left, "\n\n"))
			}
			if err := g.Serve(context.Background(), nil); err == nil {
				t.Error("a closed gateway serves again")
			}
		})
	}
}
