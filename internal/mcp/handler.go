package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
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
}

// Handler serves MCP over streamable HTTP, one session per client connection. It is safe for
// concurrent use.
type Handler struct {
	o     Options
	bare  *mcpsdk.Server // answers the SDK's per-request protocol-version question
	inner http.Handler
}

// ServedVersions are the MCP revisions capgate serves: those with the initialize handshake,
// whose sessions can hold tokens and carry elicitations (see the package comment).
var ServedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

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
	h.bare = mcpsdk.NewServer(h.impl(), &mcpsdk.ServerOptions{SupportedProtocolVersions: ServedVersions})
	stream := mcpsdk.NewStreamableHTTPHandler(h.server, &mcpsdk.StreamableHTTPOptions{
		Logger: o.Logger, SessionTimeout: SessionIdle, MaxRequestBodyBytes: MaxArgumentBytes + 64<<10,
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
	h.inner = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(stream)
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
	h.inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
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
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return newSession(h, caller, scheme+"://"+r.Host).srv
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
