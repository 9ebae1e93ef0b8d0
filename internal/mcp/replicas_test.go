package mcp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/mcp"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
)

// Two gateways on one PostgreSQL behind a plain round-robin, each request to the next: a
// 2026-07-28 client requests a token on one replica and calls under it on the other, and a
// call that needs the person is asked on one, approved through the other, and completed by
// the client's retry wherever it lands. Nothing is sticky.
func TestStatelessAcrossReplicas(t *testing.T) {
	t.Parallel()
	pg := pgtest.Schema(t)
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var gs []*gateway.Gateway
	var backends []*url.URL
	for range 2 {
		g, err := gateway.Open(context.Background(), gateway.Config{DataDir: dir, Store: pg, Listen: "-", Socket: "-", Logger: quiet,
			DelayedCommit: -1, ConsentWait: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(g.Handler())
		t.Cleanup(func() { srv.Close(); g.Close() })
		u, _ := url.Parse(srv.URL)
		gs, backends = append(gs, g), append(backends, u)
	}
	var next atomic.Int64
	hits := make([]atomic.Int64, len(backends))
	rr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(next.Add(1)) % len(backends)
		hits[i].Add(1)
		httputil.NewSingleHostReverseProxy(backends[i]).ServeHTTP(w, r)
	}))
	t.Cleanup(rr.Close)

	key := gatewaytest.AddClient(t, gs[0].Store, store.Client{ID: "cl_alice", Name: "alice", Trust: "user", RequireToken: true})
	e := &env{t: t, ctx: context.Background(), g: gs[1], srv: rr, version: mcp.Stateless, secrets: []string{key}}
	el := &elicited{answer: func(round int, p *mcpsdk.ElicitParams) string {
		if round == 1 {
			if err := gs[round%2].Consent.Approve(e.ctx, requestOf(p), "person", false); err != nil {
				t.Errorf("approve: %v", err)
			}
		}
		return "accept"
	}}
	cs := e.connect(key, urlClient(el))

	// A call that needs the person (alice requires a token for every call, and has none).
	got := e.call(cs, "calc__compute", map[string]any{"expression": "2*21"})
	wantOK(t, "a call approved on one replica, retried through the round-robin", got)
	if len(el.all()) != 1 {
		t.Errorf("%d input requests, want 1", len(el.all()))
	}
	got = e.call(cs, mcp.ToolRequestCapability, map[string]any{"capabilities": []string{"calc__compute"}, "duration": 600, "max_uses": 4})
	wantOK(t, "request", got)
	handle := got.str("token_handle")
	for i := range 4 {
		a := e.call(cs, "calc__compute", map[string]any{"expression": "1+1"})
		wantOK(t, "a call under the held token", a)
		if a.str("token_handle") != handle {
			t.Errorf("call %d: token %q, want the held %q", i, a.str("token_handle"), handle)
		}
	}
	// The uses are counted in the store: the fifth is refused whichever replica takes it, and
	// the used-up token is forgotten for every replica.
	wantCode(t, "the fifth use", e.call(cs, "calc__compute", map[string]any{"expression": "1+1"}), "TOKEN_EXHAUSTED")
	if _, err := gs[0].Store.GetHolding(e.ctx, handle); err == nil {
		t.Errorf("a used-up token is still held")
	}
	for i := range hits {
		if hits[i].Load() < 3 {
			t.Errorf("replica %d served %d requests: the round-robin did not spread them", i, hits[i].Load())
		}
	}
}
