package a2a

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	a2alog "github.com/a2aproject/a2a-go/log"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
)

// The paths Handler serves. The gateway mounts Path (POST, JSON-RPC) and CardPath (GET, at
// the root, where A2A clients look for an agent's card) and nothing else of it.
const (
	Path     = "/a2a"
	CardPath = a2asrv.WellKnownAgentCardPath
)

// Options configures the A2A front. Broker, Authenticate and State are required.
type Options struct {
	Broker *broker.Broker
	// Registry tells a task's action for its audit record: a query when the capability
	// declares no side effects above read, an execute otherwise. nil: every task is an
	// execute. It decides nothing: the broker decides every call.
	Registry *registry.Registry
	// Authenticate finds the client of an HTTP request by its bearer key (the IPC server's
	// Authenticate, so that every front knows the same clients the same way); a request
	// without an Authorization header, or whose key it does not know, is 401.
	Authenticate func(*http.Request) (broker.Caller, bool)
	// State keeps the tasks (under StateApp), for tasks/get after the request, on any
	// replica and after a restart.
	State store.State
	// Go runs a task's goroutine, detached from the request that gave it: fn gets a
	// context that ends when the host closes, must return once it does (the task is then
	// recorded failed), and the host waits for it; false means the host is closing and fn
	// does not run. nil: a plain goroutine under context.Background, which nothing waits for.
	Go func(fn func(ctx context.Context)) bool
	// BaseURL is the URL other assistants reach capgate at ("https://capgate.example"),
	// which the card's url is Path under; "": the scheme and Host of the request for the card.
	BaseURL string
	Version string           // the card's version; "": "dev"
	Logger  *slog.Logger     // nil: slog.Default()
	Now     func() time.Time // nil: time.Now
}

// Handler is capgate's A2A agent: the card and the JSON-RPC endpoint (see the package
// comment). It is safe for concurrent use.
type Handler struct {
	o    Options
	rpc  http.Handler // the SDK's JSON-RPC binding around h's own a2asrv.RequestHandler
	recs records
	// instance names this process's runs in their records (record.Runner), so that a
	// record of another process can be told from one of this process that is not running.
	instance string

	mu   sync.Mutex
	runs map[runKey]*run // the tasks running in this process
}

type runKey struct{ client, id string }

// NewHandler returns the A2A front; it panics when a required option is nil.
func NewHandler(o Options) *Handler {
	if o.Broker == nil || o.Authenticate == nil || o.State == nil {
		panic("a2a: NewHandler needs Broker, Authenticate and State")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Go == nil {
		o.Go = func(fn func(context.Context)) bool {
			go fn(context.Background())
			return true
		}
	}
	var inst [8]byte
	_, _ = rand.Read(inst[:]) // crypto/rand.Read never fails (Go 1.24)
	h := &Handler{o: o, recs: records{o.State}, instance: hex.EncodeToString(inst[:]), runs: map[runKey]*run{}}
	h.rpc = a2asrv.NewJSONRPCHandler(requests{h})
	return h
}

// ServeHTTP serves CardPath and Path; every other path is 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case CardPath:
		h.serveCard(w, r)
	case Path:
		h.serveRPC(w, r)
	default:
		http.NotFound(w, r)
	}
}

type (
	callerKey struct{}
	taskKey   struct{}
)

// callerOf is the client serveRPC authenticated, for the request handler's methods.
func callerOf(ctx context.Context) (broker.Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(broker.Caller)
	return c, ok
}

// serveRPC authenticates the caller, reads the body within MaxRequestBytes and strictly
// (jcs: no duplicate members, valid UTF-8, bounded depth), reads a message/send's task from
// those bytes, and hands the request to the SDK's JSON-RPC binding with the caller and the
// task in its context.
func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "the A2A endpoint takes JSON-RPC requests by POST", http.StatusMethodNotAllowed)
		return
	}
	// A request without a key is refused even where Authenticate would know its peer (the
	// unix socket): the card declares bearer keys, and that is what an A2A client has.
	caller, ok := h.o.Authenticate(r)
	if !ok || r.Header.Get("Authorization") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="capgate"`)
		writeJSON(w, http.StatusUnauthorized, rpcError(nil, errUnauthorized))
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeJSON(w, http.StatusOK, rpcError(nil, fmt.Errorf("%w: the request is larger than %d bytes", a2asdk.ErrInvalidRequest, MaxRequestBytes)))
		}
		return // otherwise the client went away
	}
	v, err := jcs.Parse(data, &jcs.Options{MaxDepth: MaxDepth, MaxBytes: MaxRequestBytes})
	if err != nil {
		// The syntax error's path and rule, never the text: it may hold the params.
		msg := "not valid JSON"
		var se *jcs.SyntaxError
		if errors.As(err, &se) {
			msg = fieldPath(se.Path) + ": " + se.Rule
		}
		writeJSON(w, http.StatusOK, rpcError(nil, fmt.Errorf("%w: %s", a2asdk.ErrParseError, msg)))
		return
	}
	id := requestID(v)
	ctx := context.WithValue(r.Context(), callerKey{}, caller)
	if m, _ := v.Get("method"); m.Kind == jcs.String && m.Str == "message/send" {
		params, _ := v.Get("params")
		t, err := parseSend(params)
		if err != nil {
			writeJSON(w, http.StatusOK, rpcError(id, err))
			return
		}
		ctx = context.WithValue(ctx, taskKey{}, t)
	}
	ctx = a2alog.WithLogger(ctx, h.o.Logger)
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(data))
	// The SDK writes its answers without a content type; the status of a task is the
	// client's own, and no cache keeps it.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	h.rpc.ServeHTTP(w, r)
}

var errUnauthorized = errors.New("unknown client: send the client key (capgate client add NAME) as a bearer token")

// fieldPath is a jcs path as the errors of this package write it: "$" for the whole request.
func fieldPath(p string) string {
	if p == "" {
		return "$"
	}
	return p
}

// requestID is the JSON-RPC id of the request v, for an error capgate answers itself: a
// string or a number as it came (canonically written), else null.
func requestID(v jcs.Value) json.RawMessage {
	id, ok := v.Get("id")
	if !ok || (id.Kind != jcs.String && id.Kind != jcs.Number) {
		return nil
	}
	b, err := id.AppendCanonical(nil)
	if err != nil {
		return nil
	}
	return b
}

// rpcResponse is a JSON-RPC error response as the SDK writes its own.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorBody    `json:"error"`
}

type rpcErrorBody struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// rpcCodes are the JSON-RPC codes of the errors capgate answers before the SDK does.
var rpcCodes = []struct {
	err  error
	code int
}{
	{a2asdk.ErrParseError, -32700},
	{a2asdk.ErrInvalidRequest, -32600},
	{a2asdk.ErrInvalidParams, -32602},
	{a2asdk.ErrServerError, -32000},
}

// rpcError is the error response of err, with id (nil: null); its data carries err's text
// as the SDK's errors do, which names field paths and rules, never a value.
func rpcError(id json.RawMessage, err error) rpcResponse {
	if id == nil {
		id = json.RawMessage("null")
	}
	body := rpcErrorBody{Code: -32603, Message: a2asdk.ErrInternalError.Error()}
	for _, c := range rpcCodes {
		if errors.Is(err, c.err) {
			body = rpcErrorBody{Code: c.code, Message: c.err.Error(), Data: map[string]any{"error": err.Error()}}
			break
		}
	}
	if errors.Is(err, errUnauthorized) {
		body = rpcErrorBody{Code: -32600, Message: err.Error()}
	}
	return rpcResponse{JSONRPC: "2.0", ID: id, Error: body}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
