package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/plan"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/trigger"
)

// Options configures the MCP front. Broker, Registry, Holdings, Audit and Authenticate are
// required.
type Options struct {
	Broker   *broker.Broker
	Registry *registry.Registry
	// Holdings keep the tokens issued to MCP clients, by handle, for every replica.
	Holdings store.Holdings
	// Audit records what the front refuses itself (a handle held for another client).
	Audit Recorder
	// Authenticate finds the client of an HTTP request (the IPC server's Authenticate, so
	// that both fronts know the same clients the same way); false is 401.
	Authenticate func(*http.Request) (broker.Caller, bool)
	Logger       *slog.Logger // nil: slog.Default()
	Version      string       // the server version MCP clients see
	// Definitions are the host's definitions, which capgate__negotiate intersects with what
	// a client supports; nil: none.
	Definitions *definition.Set
	// Planner answers capgate__find_capabilities; nil: the tool answers that planning is
	// not served.
	Planner *plan.Planner
	// Triggers answers capgate__propose_trigger; nil: the tool answers that triggers are
	// not served.
	Triggers *trigger.Engine
	// SDKOnly answers every request through the SDK, a 2026-07-28 tools/call of a
	// capability too, which is otherwise answered without its per-request session
	// (fast.go). The tests set it to hold the two answers to each other.
	SDKOnly bool
}

// Handler serves MCP over streamable HTTP: one session per client connection under the
// handshake revisions, one request at a time under 2026-07-28. It is safe for concurrent use.
type Handler struct {
	o         Options
	bare      *mcpsdk.Server // answers the SDK's per-request protocol-version question
	inner     http.Handler   // the handshake revisions, with sessions
	stateless http.Handler   // 2026-07-28, without
	warm      warmSessions   // 2026-07-28's servers, kept between requests
	tools     toolCache      // the tool of each usable capability, built once
	held      heldCache      // each client's held tokens, while the store has not changed
	fast      atomic.Int64   // requests fastCall answered
}

// Stateless is the sessionless MCP revision: no initialize handshake and no Mcp-Session-Id;
// every request carries its version and the client's capabilities.
const Stateless = "2026-07-28"

// ServedVersions are the MCP revisions capgate serves, newest first: the sessionless one,
// then those with the initialize handshake (see the package comment).
var ServedVersions = []string{Stateless, "2025-11-25", "2025-06-18", "2025-03-26"}

// SessionVersions are ServedVersions with the initialize handshake.
var SessionVersions = ServedVersions[1:]

type callerKey struct{}

// NewHandler returns the streamable HTTP handler; it panics when a required option is nil.
func NewHandler(o Options) *Handler {
	if o.Broker == nil || o.Registry == nil || o.Holdings == nil || o.Audit == nil || o.Authenticate == nil {
		panic("mcp: NewHandler needs Broker, Registry, Holdings, Audit and Authenticate")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	h := &Handler{o: o}
	h.bare = mcpsdk.NewServer(h.impl(), &mcpsdk.ServerOptions{SupportedProtocolVersions: SessionVersions})
	stream := mcpsdk.NewStreamableHTTPHandler(h.server, &mcpsdk.StreamableHTTPOptions{
		Logger: o.Logger, SessionTimeout: SessionIdle, MaxRequestBodyBytes: maxRequestBytes,
	})
	// The SDK's bearer middleware puts the client into every request's TokenInfo: the tool
	// handlers read the caller there, and the SDK refuses a session to any other client.
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		c, ok := r.Context().Value(callerKey{}).(broker.Caller)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		// The request's end travels with the caller: a tool that waits long (a token request
		// waiting for the person) ends when the client's connection does, which the SDK's
		// own context for the call does not tell.
		return &auth.TokenInfo{UserID: c.ClientID, Extra: map[string]any{callerExtra: c, goneExtra: r.Context().Done()}}, nil
	}
	bearer := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	h.inner = bearer(stream)
	// 2026-07-28: a session of its own for each request, built for its client (the SDK
	// checks _meta against the headers, and refuses GET and DELETE with 405). The handler's
	// context ends with the request, so that a call waiting for the person stops when the
	// client stops waiting.
	h.stateless = bearer(mcpsdk.NewStreamableHTTPHandler(h.requestServer, &mcpsdk.StreamableHTTPOptions{
		Logger: o.Logger, Stateless: true, PropagateRequestCancellation: true, MaxRequestBodyBytes: maxRequestBytes,
	}))
	return h
}

const (
	callerExtra = "capgate.caller"
	goneExtra   = "capgate.gone" // a <-chan struct{} closed when the HTTP request ends
)

// untilClientGone returns ctx, ended also when the HTTP request that carried req ends: the
// client closed its connection, or its process ended.
func untilClientGone(ctx context.Context, req mcpsdk.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		if gone, ok := ex.TokenInfo.Extra[goneExtra].(<-chan struct{}); ok {
			go func() {
				select {
				case <-gone:
					cancel()
				case <-ctx.Done():
				}
			}()
		}
	}
	return ctx, cancel
}

func (h *Handler) impl() *mcpsdk.Implementation {
	return &mcpsdk.Implementation{Name: "capgate", Title: "capgate capability gateway", Version: h.o.Version}
}

// ServeHTTP authenticates the client key (401 without a known one) and serves MCP as that
// client.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller, ok := h.o.Authenticate(r)
	if !ok || r.Header.Get("Authorization") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="capgate"`)
		http.Error(w, "unknown client: send the client key as a bearer token", http.StatusUnauthorized)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), callerKey{}, caller))
	if stateless, ok := sessionless(r); ok && stateless {
		if h.fastCall(w, r, caller) {
			return
		}
		// The request's session is built once, though the SDK asks for it twice.
		h.stateless.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), slotKey{}, new(slot))))
		return
	}
	h.inner.ServeHTTP(w, r)
}

type slotKey struct{}

// slot holds the session built for one 2026-07-28 request.
type slot struct {
	mu sync.Mutex
	s  *session
}

// requestServer is the SDK's getServer under 2026-07-28: the request's own session, built
// for its client; an inbound Mcp-Session-Id means nothing.
func (h *Handler) requestServer(r *http.Request) *mcpsdk.Server {
	caller, ok := r.Context().Value(callerKey{}).(broker.Caller)
	if !ok {
		return nil
	}
	sl, _ := r.Context().Value(slotKey{}).(*slot)
	if sl == nil {
		return newSession(h, caller, baseURL(r)).srv
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.s == nil {
		if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
			// A stream that follows its client's tools for as long as it lasts: a session
			// of its own (the SDK holds the header to the body's method).
			sl.s = newSession(h, caller, baseURL(r))
			sl.s.req = r
		} else {
			sl.s = h.warm.get(h, caller, baseURL(r))
		}
	}
	return sl.s.srv
}

// baseURL is the gateway's URL as the client reached it, for approval links.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// server is the SDK's getServer: a new session's server, built for its client. The SDK also
// asks on every request of an open session, only for the versions: those get the bare one.
func (h *Handler) server(r *http.Request) *mcpsdk.Server {
	if r.Header.Get("Mcp-Session-Id") != "" {
		return h.bare
	}
	caller, ok := r.Context().Value(callerKey{}).(broker.Caller)
	if !ok {
		return nil
	}
	return newSession(h, caller, baseURL(r)).srv
}

// callerOf is the client of one MCP request, authenticated on that request.
func callerOf(req mcpsdk.Request) (broker.Caller, error) {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		if c, ok := ex.TokenInfo.Extra[callerExtra].(broker.Caller); ok {
			return c, nil
		}
	}
	return broker.Caller{}, errors.New("mcp: unauthenticated request")
}

// sdkLogger is the logger the SDK's servers get: l's warnings and errors only. Under
// 2026-07-28 the SDK opens and closes a session for every request and says so at INFO,
// which would put three lines in capgate's log for each call the audit log already records.
func sdkLogger(l *slog.Logger) *slog.Logger { return slog.New(warnings{l.Handler()}) }

// warnings passes on the records of its handler at slog.LevelWarn and above.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn && w.Handler.Enabled(ctx, level)
}

func (w warnings) WithAttrs(as []slog.Attr) slog.Handler { return warnings{w.Handler.WithAttrs(as)} }
func (w warnings) WithGroup(name string) slog.Handler    { return warnings{w.Handler.WithGroup(name)} }
