package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ForwardOptions configures Forward. URL and Key are required.
type ForwardOptions struct {
	URL     string // the gateway's base URL, such as http://127.0.0.1:7766
	Key     string // the client key, sent as the bearer token and nowhere else
	Version string
	// Transport is the MCP client's side, nil: stdin and stdout.
	Transport  mcpsdk.Transport
	HTTPClient *http.Client // nil: http.DefaultClient's transport
	Logger     *slog.Logger // nil: slog.Default(); never stdout, which carries MCP
}

// ErrGateway is a gateway Forward cannot reach or that refuses the client key.
var ErrGateway = errors.New("cannot connect to the gateway's MCP endpoint")

// bearer adds the client key to every request to the gateway.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// Forward serves MCP on o.Transport (stdio for `capgate mcp`) as a thin forwarder to the
// running gateway's /mcp: it is an MCP client of the gateway, as the client the key names,
// and re-serves the gateway's tools as they are (list → list, call → call, the gateway's
// URL elicitations → the client's). It serves every revision the gateway does: a 2026-07-28
// client's calls go to the gateway under 2026-07-28, and its input requests and the
// client's answers pass through unchanged. Every rule stays in the gateway. It returns when the
// client closes its side or ctx ends.
func Forward(ctx context.Context, o ForwardOptions) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Transport == nil {
		o.Transport = &mcpsdk.StdioTransport{}
	}
	next := http.DefaultTransport
	if o.HTTPClient != nil && o.HTTPClient.Transport != nil {
		next = o.HTTPClient.Transport
	}
	f := &forwarder{log: o.Logger}
	impl := &mcpsdk.Implementation{Name: "capgate", Title: "capgate capability gateway", Version: o.Version}
	client := mcpsdk.NewClient(impl, &mcpsdk.ClientOptions{
		Logger:             o.Logger,
		ElicitationHandler: f.elicit,
		Capabilities: &mcpsdk.ClientCapabilities{
			Elicitation: &mcpsdk.ElicitationCapabilities{URL: &mcpsdk.URLElicitationCapabilities{}},
		},
		// A change is fetched outside the notification's handler, which must not wait on a call.
		ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
			go func() { _ = f.sync(context.Background()) }()
		},
	})
	endpoint := strings.TrimRight(o.URL, "/") + "/mcp"
	hc := &http.Client{Transport: bearer{key: o.Key, next: next}}
	up, err := client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc},
		&mcpsdk.ClientSessionOptions{ProtocolVersion: SessionVersions[0]})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrGateway, err)
	}
	defer up.Close()
	f.up = up
	// The calls of a 2026-07-28 client go to the gateway under 2026-07-28 too, with the
	// client's own capabilities, so that its input requests reach the client as they are
	// and its answers come back (no round trip is fulfilled here). A gateway that does not
	// serve the revision gets them on the session instead.
	stateless := mcpsdk.NewClient(impl, &mcpsdk.ClientOptions{Logger: o.Logger, MultiRoundTrip: &mcpsdk.MultiRoundTripOptions{Disabled: true}})
	if up26, err := stateless.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc},
		&mcpsdk.ClientSessionOptions{ProtocolVersion: Stateless}); err == nil {
		if up26.InitializeResult().ProtocolVersion >= Stateless {
			f.up26 = up26
		}
		defer up26.Close()
	}
	instr := ""
	if ir := up.InitializeResult(); ir != nil {
		instr = ir.Instructions
	}
	f.srv = mcpsdk.NewServer(impl, &mcpsdk.ServerOptions{
		Instructions: instr, Logger: sdkLogger(o.Logger), SupportedProtocolVersions: ServedVersions, SetCacheable: cacheHints,
		Capabilities: &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{ListChanged: true}},
	})
	if err := f.sync(ctx); err != nil {
		return fmt.Errorf("%w: listing tools: %w", ErrGateway, err)
	}
	f.srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == "tools/list" {
				if err := f.sync(ctx); err != nil {
					f.log.Warn("capgate mcp: listing the gateway's tools", "err", err)
				}
			}
			return next(ctx, method, req)
		}
	})
	down, err := f.srv.Connect(ctx, o.Transport, nil)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- down.Wait() }()
	select {
	case err := <-done:
		if errors.Is(err, mcpsdk.ErrConnectionClosed) {
			err = nil
		}
		return err
	case <-ctx.Done():
		down.Close()
		return nil
	}
}

type forwarder struct {
	log  *slog.Logger
	up   *mcpsdk.ClientSession // the gateway, under the newest handshake revision
	up26 *mcpsdk.ClientSession // the gateway, under 2026-07-28; nil if it does not serve it
	srv  *mcpsdk.Server
	mu   sync.Mutex
	down *mcpsdk.ServerSession
	have map[string]string // tool name → its definition's JSON
}

// sync re-serves the gateway's current tool list.
func (f *forwarder) sync(ctx context.Context) error {
	if f.srv == nil {
		return nil
	}
	next := map[string]*mcpsdk.Tool{}
	for t, err := range f.up.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		next[t.Name] = t
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var gone []string
	for name := range f.have {
		if _, ok := next[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		f.srv.RemoveTools(gone...)
	}
	have := map[string]string{}
	for name, t := range next {
		def, _ := json.Marshal(t)
		have[name] = string(def)
		if f.have[name] != string(def) {
			f.srv.AddTool(t, f.call(name))
		}
	}
	f.have = have
	return nil
}

// call forwards one tool call; the gateway's answer, refusals included, passes unchanged.
func (f *forwarder) call(name string) mcpsdk.ToolHandler {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		var args any
		if a := req.Params.Arguments; len(a) > 0 {
			args = a
		}
		params := &mcpsdk.CallToolParams{Name: name, Arguments: args}
		if h, ok := req.Params.Meta[HandleMeta]; ok {
			params.Meta = mcpsdk.Meta{HandleMeta: h}
		}
		up := f.up
		if f.up26 != nil && req.ProtocolVersion() >= Stateless {
			up = f.up26
			if params.Meta == nil {
				params.Meta = mcpsdk.Meta{}
			}
			if caps, ok := req.Params.Meta[mcpsdk.MetaKeyClientCapabilities]; ok {
				params.Meta[mcpsdk.MetaKeyClientCapabilities] = caps
			}
			params.InputResponses, params.RequestState = req.Params.InputResponses, req.Params.RequestState
		}
		res, err := up.CallTool(ctx, params)
		if err != nil {
			f.log.Warn("capgate mcp: a call to the gateway failed", "tool", name, "err", err)
			return refusal(codeFailed, "capgate mcp could not reach the gateway for this call", nil), nil
		}
		if res.NeedsInput() {
			return &mcpsdk.CallToolResult{InputRequests: res.InputRequests, RequestState: res.RequestState}, nil
		}
		return &mcpsdk.CallToolResult{Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}, nil
	}
}

// elicit passes the gateway's URL elicitation to the client, and its answer back.
func (f *forwarder) elicit(ctx context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down == nil {
		return nil, errors.New("no MCP client connected")
	}
	if ip := down.InitializeParams(); ip == nil || ip.ProtocolVersion >= Stateless {
		// A 2026-07-28 client takes no requests from its server; its calls go to the
		// gateway under 2026-07-28, whose input requests reach it in the results.
		return nil, errors.New("the MCP client takes no server requests (2026-07-28)")
	}
	return down.Elicit(ctx, req.Params)
}
