// Package provider turns an sdk.Handler, the interface capgate's built-in apps implement,
// into a provider process: a program of its own that capgate starts, speaks to over gRPC on
// a unix socket (hashicorp/go-plugin), and holds to its signed manifest. An app developer
// writes one handler and one main:
//
//	func main() { provider.Serve(myHandler) }
//
// Serve answers capgate's GetManifest with the handler's manifest as it was signed, runs
// ValidateParams (sdk.ParamValidator) and Invoke with the call's deadline, its dry-run flag
// and a report of the effects and evidence the handler emits (sdk.ReportEffect,
// sdk.EmitEvidence, sdk.IsDryRun), and Undo (sdk.Undoer).
//
// capgate starts a provider with GOMAXPROCS=1 in its environment: a call crosses several
// goroutines on each side, and on one processor it does so without waking other threads,
// which halves its latency. A provider whose own work needs more cores sets
// runtime.GOMAXPROCS in its main.
//
// The protocol is versioned: the handshake settles on the highest version both sides speak
// (ProtocolVersions) and refuses a provider with none in common. A program that is started by
// hand, not by capgate, says so and exits.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	providerv1 "github.com/capgate/capgate/proto/capgate/provider/v1"
	"github.com/capgate/capgate/sdk"
)

// Name is the protocol's plugin name in the go-plugin plugin set.
const Name = "provider"

// ProtocolVersions are the versions of the provider protocol this package speaks, oldest
// first. Version 1 is proto/capgate/provider/v1.
var ProtocolVersions = []int{1}

// Handshake is what capgate and a provider check of each other before anything else: the
// cookie only says the program was started by capgate as a provider (it is no secret and no
// authentication).
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "CAPGATE_PROVIDER",
	MagicCookieValue: "capgate-provider-protocol",
}

// Plugins is the versioned plugin set of the protocol, for go-plugin's VersionedPlugins:
// with h, the provider's side (serving h); with nil, the host's (dispensing a *Client).
func Plugins(h sdk.Handler) map[int]plugin.PluginSet {
	sets := map[int]plugin.PluginSet{}
	for _, v := range ProtocolVersions {
		sets[v] = plugin.PluginSet{Name: &Plugin{Handler: h}}
	}
	return sets
}

// The protocol's flow-control windows, static on both sides of the connection. gRPC's
// default estimates the bandwidth-delay product by answering received data with a PING, which
// on a unix socket to a child process only costs: two pings and their acks on every call,
// each a wake-up of both processes (docs/performance.md). A stream's window holds the largest
// params a call can carry (an IPC envelope, 1 MiB) whole; the connection's is the ceiling
// gRPC's estimate would grow to.
const (
	streamWindow = 1 << 20
	connWindow   = 16 << 20
)

// DialOptions are the gRPC options of the host's connection to a provider, for go-plugin's
// ClientConfig.GRPCDialOptions: the protocol's static windows.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithStaticStreamWindowSize(streamWindow), grpc.WithStaticConnWindowSize(connWindow)}
}

// Serve serves h as a provider process until capgate stops it. It does not return; on
// standard error it says why when the program was not started by capgate.
func Serve(h sdk.Handler) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: Plugins(h),
		GRPCServer:       newServer,
	})
}

// newServer is the provider's gRPC server, with the protocol's static windows.
func newServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, grpc.StaticStreamWindowSize(streamWindow), grpc.StaticConnWindowSize(connWindow))...)
}

// Plugin is the protocol's go-plugin plugin: gRPC only.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Handler is served on the provider's side; nil on the host's.
	Handler sdk.Handler
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the provider's service.
func (p *Plugin) GRPCServer(b *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Handler == nil {
		return errors.New("provider: no handler to serve")
	}
	providerv1.RegisterProviderServiceServer(s, &server{h: p.Handler, broker: b})
	return nil
}

// GRPCClient returns the host's *Client on conn.
func (p *Plugin) GRPCClient(_ context.Context, b *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Client{c: providerv1.NewProviderServiceClient(conn), broker: b}, nil
}

// server is the provider's side: the handler behind the service.
type server struct {
	providerv1.UnimplementedProviderServiceServer
	h      sdk.Handler
	broker *plugin.GRPCBroker

	mu     sync.Mutex
	host   map[uint32]providerv1.HostServiceClient // the host's services dialled, by broker id
	events bool                                    // the handler's Events was started
}

// Events starts the handler's own events (sdk.EventSource), once: each goes to the host's
// EmitEvent at the broker id the host names. The events live as long as the process.
func (s *server) Events(_ context.Context, req *providerv1.EventsRequest) (*providerv1.EventsResponse, error) {
	src, ok := s.h.(sdk.EventSource)
	if !ok || s.broker == nil || req.HostService == 0 {
		return &providerv1.EventsResponse{}, nil
	}
	s.mu.Lock()
	started := s.events
	s.events = true
	s.mu.Unlock()
	if started {
		return &providerv1.EventsResponse{}, nil
	}
	id := req.HostService
	emit := func(ctx context.Context, eventType, eventID string, payload json.RawMessage) error {
		c, err := s.hostService(id)
		if err != nil {
			return &sdk.Error{Code: sdk.CodeAppUnresponsive, Reason: "the host's service cannot be reached"}
		}
		r, err := c.EmitEvent(ctx, &providerv1.EmitEventRequest{EventType: eventType, EventId: eventID, Payload: payload})
		if err != nil {
			return &sdk.Error{Code: sdk.CodeAppUnresponsive, Reason: "the host's service did not answer"}
		}
		return sdkError(r.Error)
	}
	go src.Events(context.Background(), emit)
	return &providerv1.EventsResponse{}, nil
}

// hostService is the host's HostService at the broker id, dialled once.
func (s *server) hostService(id uint32) (providerv1.HostServiceClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.host[id]; ok {
		return c, nil
	}
	conn, err := s.broker.Dial(id)
	if err != nil {
		return nil, err
	}
	if s.host == nil {
		s.host = map[uint32]providerv1.HostServiceClient{}
	}
	c := providerv1.NewHostServiceClient(conn)
	s.host[id] = c
	return c, nil
}

func (s *server) GetManifest(context.Context, *providerv1.GetManifestRequest) (*providerv1.GetManifestResponse, error) {
	doc := s.h.Manifest()
	if doc == nil {
		return nil, errors.New("provider: the handler has no manifest")
	}
	return &providerv1.GetManifestResponse{Manifest: doc.Raw()}, nil
}

func (s *server) ValidateParams(_ context.Context, req *providerv1.ValidateParamsRequest) (*providerv1.ValidateParamsResponse, error) {
	v, ok := s.h.(sdk.ParamValidator)
	if !ok {
		return &providerv1.ValidateParamsResponse{}, nil
	}
	return &providerv1.ValidateParamsResponse{Error: errorOf(v.ValidateParams(req.CapabilityId, req.Params))}, nil
}

func (s *server) Invoke(req *providerv1.InvokeRequest, stream providerv1.ProviderService_InvokeServer) error {
	var sendMu sync.Mutex
	send := func(ev *providerv1.InvokeEvent) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(ev)
	}
	rep := &sdk.Report{DryRun: req.DryRun, EgressProxy: req.EgressProxy, Progress: func(message string, fraction float64) {
		_ = send(&providerv1.InvokeEvent{Event: &providerv1.InvokeEvent_Progress{Progress: &providerv1.Progress{Message: message, Fraction: fraction}}})
	}}
	if id := req.HostService; id != 0 && s.broker != nil {
		callID := req.GetContext().GetCallId()
		rep.Credential = func(ctx context.Context, intent string) (string, error) {
			c, err := s.hostService(id)
			if err != nil {
				return "", &sdk.Error{Code: sdk.CodeAppUnresponsive, Reason: "the host's service cannot be reached"}
			}
			r, err := c.RequestCredential(ctx, &providerv1.RequestCredentialRequest{Intent: intent, CallId: callID})
			if err != nil {
				return "", &sdk.Error{Code: sdk.CodeAppUnresponsive, Reason: "the host's service did not answer"}
			}
			if err := sdkError(r.Error); err != nil {
				return "", err
			}
			return r.Handle, nil
		}
	}
	ctx := sdk.WithReport(stream.Context(), rep)
	if req.DeadlineUnixMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.UnixMilli(req.DeadlineUnixMs))
		defer cancel()
	}
	res, err := s.h.Invoke(ctx, req.CapabilityId, req.Params, contextOf(req.Context))
	rep.Progress = nil
	term := &providerv1.Terminal{}
	if err != nil {
		term.Outcome = &providerv1.Terminal_Error{Error: errorOf(err)}
	} else {
		term.Outcome = &providerv1.Terminal_Result{Result: &providerv1.Result{Success: res.Success, Data: res.Data,
			StateAfter: res.StateAfter, UndoToken: res.UndoToken}}
	}
	for _, e := range rep.Effects() {
		term.ObservedSideEffects = append(term.ObservedSideEffects, &providerv1.ObservedSideEffect{Effect: e.Effect, Target: e.Target})
	}
	for _, e := range rep.Evidence() {
		term.Evidence = append(term.Evidence, &providerv1.Evidence{Type: e.Type, Body: e.Body})
	}
	return send(&providerv1.InvokeEvent{Event: &providerv1.InvokeEvent_Terminal{Terminal: term}})
}

func (s *server) Undo(ctx context.Context, req *providerv1.UndoRequest) (*providerv1.UndoResponse, error) {
	u, ok := s.h.(sdk.Undoer)
	if !ok {
		return &providerv1.UndoResponse{Error: errorOf(sdk.ExecutionFailed("the app undoes nothing", false))}, nil
	}
	return &providerv1.UndoResponse{Error: errorOf(u.Undo(ctx, req.CapabilityId, req.UndoToken, contextOf(req.Context)))}, nil
}

// errorOf is err as the protocol carries it: a *sdk.Error as it is, any other error as a
// failure whose text stays in the provider (it may hold what the agent must not see).
func errorOf(err error) *providerv1.CapabilityError {
	if err == nil {
		return nil
	}
	var se *sdk.Error
	if !errors.As(err, &se) {
		return &providerv1.CapabilityError{Code: string(sdk.CodeExecutionFailed), Reason: "the provider failed"}
	}
	pe := &providerv1.CapabilityError{Code: string(se.Code), Reason: se.Reason, Recoverable: se.Recoverable}
	for _, p := range se.Problems {
		pe.Problems = append(pe.Problems, &providerv1.Problem{Path: p.Path, Rule: p.Rule})
	}
	return pe
}

func contextOf(c *providerv1.InvocationContext) sdk.InvocationContext {
	if c == nil {
		return sdk.InvocationContext{}
	}
	return sdk.InvocationContext{SessionID: c.SessionId, Source: sdk.Source(c.Source), Timestamp: time.UnixMilli(c.TimestampUnixMs),
		AppID: c.AppId, ClientID: c.ClientId, CallID: c.CallId}
}

func contextPB(ic sdk.InvocationContext) *providerv1.InvocationContext {
	c := &providerv1.InvocationContext{SessionId: ic.SessionID, Source: string(ic.Source), AppId: ic.AppID, ClientId: ic.ClientID, CallId: ic.CallID}
	if !ic.Timestamp.IsZero() {
		c.TimestampUnixMs = ic.Timestamp.UnixMilli()
	}
	return c
}
