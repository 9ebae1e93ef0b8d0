package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/capgate/capgate/manifest"
	providerv1 "github.com/capgate/capgate/proto/capgate/provider/v1"
	"github.com/capgate/capgate/sdk"
)

// Client is the host's side of the protocol, on one started provider: what capgate (or a
// test of a provider) asks of it. What the provider answers is its claim: the host checks
// the manifest against the installed one and the reported effects against the declared ones.
type Client struct {
	c      providerv1.ProviderServiceClient
	broker *plugin.GRPCBroker

	mu      sync.Mutex
	creds   Credentials
	events  Events
	hostID  uint32            // the broker id HostService answers at, 0 until served
	inCalls map[string]string // the calls in flight, by call id: their capability id
}

// Credentials decides a provider's RequestCredential for the call callID of capabilityID: the
// handle, or the *sdk.Error that refuses it. intent is the provider's text, untrusted.
type Credentials func(ctx context.Context, capabilityID, callID, intent string) (string, error)

// ServeCredentials has the host answer the provider's RequestCredential with creds, on the
// calls made after it. Without it the provider is offered no credentials.
func (c *Client) ServeCredentials(creds Credentials) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.creds = creds
	c.serveHost()
}

// Events takes an event the provider emits on its own (EmitEvent): eventType and eventID are
// the provider's text, untrusted, and payload its bytes; nil accepts it, an *sdk.Error
// refuses it.
type Events func(ctx context.Context, eventType, eventID string, payload json.RawMessage) error

// ServeEvents has the host take the events the provider emits on its own with events, and
// tells the provider so (its Events): a provider that emits none, or does not know the call,
// is left as it is.
func (c *Client) ServeEvents(ctx context.Context, events Events) error {
	c.mu.Lock()
	c.events = events
	c.serveHost()
	id := c.hostID
	c.mu.Unlock()
	if id == 0 {
		return nil
	}
	if _, err := c.c.Events(ctx, &providerv1.EventsRequest{HostService: id}); err != nil && status.Code(err) != codes.Unimplemented {
		return fmt.Errorf("provider: Events: %w", err)
	}
	return nil
}

// serveHost serves the host's HostService for the provider, once; c.mu is held.
func (c *Client) serveHost() {
	if c.hostID != 0 || c.broker == nil {
		return
	}
	c.hostID = c.broker.NextId()
	c.inCalls = map[string]string{}
	go c.broker.AcceptAndServe(c.hostID, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		providerv1.RegisterHostServiceServer(s, &hostServer{c: c})
		return s
	})
}

// hostServer is the host's HostService for one provider.
type hostServer struct {
	providerv1.UnimplementedHostServiceServer
	c *Client
}

func (h *hostServer) RequestCredential(ctx context.Context, req *providerv1.RequestCredentialRequest) (*providerv1.RequestCredentialResponse, error) {
	h.c.mu.Lock()
	capability, ok := h.c.inCalls[req.CallId]
	creds := h.c.creds
	h.c.mu.Unlock()
	if !ok || creds == nil {
		return &providerv1.RequestCredentialResponse{Error: errorOf(sdk.PermissionDenied("no call of this provider is in flight with this call id"))}, nil
	}
	handle, err := creds(ctx, capability, req.CallId, req.Intent)
	if err != nil {
		return &providerv1.RequestCredentialResponse{Error: errorOf(err)}, nil
	}
	return &providerv1.RequestCredentialResponse{Handle: handle}, nil
}

// EmitEvent takes an event the provider emits on its own, by the host's Events.
func (h *hostServer) EmitEvent(ctx context.Context, req *providerv1.EmitEventRequest) (*providerv1.EmitEventResponse, error) {
	h.c.mu.Lock()
	events := h.c.events
	h.c.mu.Unlock()
	if events == nil {
		return &providerv1.EmitEventResponse{Error: errorOf(sdk.PermissionDenied("the host takes no events of this provider"))}, nil
	}
	if err := events(ctx, req.EventType, req.EventId, req.Payload); err != nil {
		return &providerv1.EmitEventResponse{Error: errorOf(err)}, nil
	}
	return &providerv1.EmitEventResponse{}, nil
}

// inFlight registers a call for RequestCredential and returns the broker id to tell the
// provider (0: none) and the function that ends the call's registration.
func (c *Client) inFlight(callID, capabilityID string) (uint32, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hostID == 0 || callID == "" {
		return 0, func() {}
	}
	if _, taken := c.inCalls[callID]; taken {
		return 0, func() {} // one call id, one call: a second is offered no credentials
	}
	c.inCalls[callID] = capabilityID
	return c.hostID, func() {
		c.mu.Lock()
		delete(c.inCalls, callID)
		c.mu.Unlock()
	}
}

// Manifest returns the manifest the provider reports, as it sent it.
func (c *Client) Manifest(ctx context.Context) ([]byte, error) {
	r, err := c.c.GetManifest(ctx, &providerv1.GetManifestRequest{})
	if err != nil {
		return nil, fmt.Errorf("provider: GetManifest: %w", err)
	}
	return r.Manifest, nil
}

// ValidateParams asks the provider's own param rules; nil when they pass.
func (c *Client) ValidateParams(ctx context.Context, capabilityID string, params json.RawMessage) error {
	r, err := c.c.ValidateParams(ctx, &providerv1.ValidateParamsRequest{CapabilityId: capabilityID, Params: params})
	if err != nil {
		return unresponsive(err)
	}
	return sdkError(r.Error)
}

// CancelGrace is how long a provider has, past a call's deadline, to stop and answer.
const CancelGrace = 2 * time.Second

// ErrIgnoredCancellation is a call whose provider did not answer within CancelGrace of its
// deadline: it goes on working on a call capgate gave up on.
var ErrIgnoredCancellation = errors.New("provider: the provider ignored the call's deadline")

// Outcome is what came of a call to a provider: its result or error, and what it reported
// it did.
type Outcome struct {
	Result   sdk.Result
	Err      error // a *sdk.Error the provider answered, nil on a result
	Effects  []sdk.Effect
	Evidence []sdk.Evidence
}

// Invoke runs capabilityID with params; ctx's deadline is the call's. progress, when not nil,
// receives the provider's progress reports. The error is the protocol's (the provider did not
// answer with a terminal message, as app_unresponsive or timeout); the capability's own is
// Outcome.Err.
//
// The provider is told ctx's deadline and gets CancelGrace beyond it to stop and answer; one
// that has not answered by then is ErrIgnoredCancellation (as a timeout), and its host should
// kill it. A call ctx cancels for another reason (the agent went away) ends at once.
func (c *Client) Invoke(ctx context.Context, capabilityID string, params json.RawMessage, ic sdk.InvocationContext, dryRun bool,
	progress func(message string, fraction float64)) (Outcome, error) {
	return c.InvokeWith(ctx, capabilityID, params, ic, InvokeOptions{DryRun: dryRun, Progress: progress})
}

// InvokeOptions are the options of one call (InvokeWith).
type InvokeOptions struct {
	DryRun bool
	// Progress, when not nil, receives the provider's progress reports.
	Progress func(message string, fraction float64)
	// EgressProxy is the proxy the call's network requests go through, with the call's own
	// credential ("": the call has no network).
	EgressProxy string
}

// InvokeWith is Invoke with the call's options.
func (c *Client) InvokeWith(ctx context.Context, capabilityID string, params json.RawMessage, ic sdk.InvocationContext, o InvokeOptions) (Outcome, error) {
	progress := o.Progress
	req := &providerv1.InvokeRequest{CapabilityId: capabilityID, Params: params, Context: contextPB(ic), DryRun: o.DryRun, EgressProxy: o.EgressProxy}
	id, done := c.inFlight(ic.CallID, capabilityID)
	defer done()
	req.HostService = id
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	ignored := make(chan struct{})
	if dl, ok := ctx.Deadline(); ok {
		req.DeadlineUnixMs = dl.UnixMilli()
	}
	go func() {
		select {
		case <-sctx.Done():
			return
		case <-ctx.Done():
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t := time.NewTimer(CancelGrace)
			defer t.Stop()
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				close(ignored)
			}
		}
		cancel()
	}()
	stream, err := c.c.Invoke(sctx, req)
	if err != nil {
		return Outcome{}, unresponsive(err)
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return Outcome{}, &sdk.Error{Code: sdk.CodeAppUnresponsive, Reason: "the provider ended the call without an answer"}
		}
		if err != nil {
			select {
			case <-ignored:
				return Outcome{}, fmt.Errorf("%w: %w", ErrIgnoredCancellation, &sdk.Error{Code: sdk.CodeTimeout, CapabilityID: capabilityID})
			default:
			}
			if ctx.Err() != nil {
				return Outcome{}, &sdk.Error{Code: sdk.CodeTimeout, CapabilityID: capabilityID}
			}
			return Outcome{}, unresponsive(err)
		}
		switch e := ev.Event.(type) {
		case *providerv1.InvokeEvent_Progress:
			if progress != nil && e.Progress != nil {
				progress(e.Progress.Message, e.Progress.Fraction)
			}
		case *providerv1.InvokeEvent_Terminal:
			return outcomeOf(e.Terminal), nil
		}
	}
}

func outcomeOf(t *providerv1.Terminal) Outcome {
	var out Outcome
	switch o := t.GetOutcome().(type) {
	case *providerv1.Terminal_Result:
		r := o.Result
		out.Result = sdk.Result{Success: r.Success, Data: r.Data, StateAfter: r.StateAfter, UndoToken: r.UndoToken}
	case *providerv1.Terminal_Error:
		out.Err = sdkError(o.Error)
	default:
		out.Err = &sdk.Error{Code: sdk.CodeAppUnresponsive, Reason: "the provider's answer holds neither a result nor an error"}
	}
	for _, e := range t.ObservedSideEffects {
		out.Effects = append(out.Effects, sdk.Effect{Effect: e.Effect, Target: e.Target})
	}
	for _, e := range t.Evidence {
		out.Evidence = append(out.Evidence, sdk.Evidence{Type: e.Type, Body: e.Body})
	}
	return out
}

// Undo undoes a call with its undo token.
func (c *Client) Undo(ctx context.Context, capabilityID, undoToken string, ic sdk.InvocationContext) error {
	r, err := c.c.Undo(ctx, &providerv1.UndoRequest{CapabilityId: capabilityID, UndoToken: undoToken, Context: contextPB(ic)})
	if err != nil {
		return unresponsive(err)
	}
	return sdkError(r.Error)
}

// knownCodes are the codes a provider may answer with; any other is refused as a failure.
var knownCodes = map[sdk.Code]bool{sdk.CodeNotFound: true, sdk.CodeInvalidParams: true, sdk.CodeExecutionFailed: true,
	sdk.CodePermissionDenied: true, sdk.CodeTimeout: true, sdk.CodeAppUnresponsive: true}

// sdkError is the provider's error as the SDK's. A code outside the manifest document's is
// an execution failure.
func sdkError(e *providerv1.CapabilityError) error {
	if e == nil {
		return nil
	}
	se := &sdk.Error{Code: sdk.Code(e.Code), Reason: e.Reason, Recoverable: e.Recoverable}
	if !knownCodes[se.Code] {
		se.Code = sdk.CodeExecutionFailed
	}
	for _, p := range e.Problems {
		se.Problems = append(se.Problems, manifest.Problem{Path: p.Path, Rule: p.Rule})
	}
	return se
}

func unresponsive(err error) error {
	return &sdk.Error{Code: sdk.CodeAppUnresponsive, Reason: "the provider did not answer: " + err.Error()}
}
