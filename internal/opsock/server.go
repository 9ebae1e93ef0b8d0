package opsock

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/registry"
)

// Server answers the operator socket with its Service's changes.
type Server struct {
	// Ops makes the changes.
	Ops *operator.Service
	// ToolsChanged is called after a change to the tool servers or their pins, before the
	// change is answered, so that the gateway's connections follow it by then: a server
	// added is connected, one removed stopped (nil: nothing is called).
	ToolsChanged func(context.Context)
	// ProvidersChanged is called after an app that runs out of process was registered, before
	// the change is answered, so that the gateway has started it by then (nil: nothing).
	ProvidersChanged func(context.Context)
	// Logger receives what goes wrong beside an answer (nil: slog.Default()).
	Logger *slog.Logger
	// UID is the uid a peer must have (besides root's): the gateway's own. Zero value: 0,
	// root's alone; New sets it to the process's effective uid.
	UID int
}

// New returns the server of ops for peers with this process's effective uid (and root).
func New(ops *operator.Service, toolsChanged func(context.Context), log *slog.Logger) *Server {
	return &Server{Ops: ops, ToolsChanged: toolsChanged, Logger: log, UID: os.Geteuid()}
}

// Handler is the socket's HTTP handler. Serve it with ConnContext as the http.Server's, so
// that it knows each peer's uid: a connection without one (not a unix socket) is refused.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathRegisterApp, handle(s, func(ctx context.Context, r registerApp) (app, error) {
		var a registry.App
		var err error
		if r.Program != nil {
			a, err = s.Ops.RegisterProvider(ctx, r.By.op(), r.Manifest, r.Alias, *r.Program)
			if err == nil && s.ProvidersChanged != nil {
				s.ProvidersChanged(ctx)
			}
		} else {
			a, err = s.Ops.RegisterApp(ctx, r.By.op(), r.Manifest, r.Alias)
		}
		return app{ID: a.ID, Alias: a.Alias, Tier: a.Tier, Reason: a.Reason, Detail: a.Detail}, err
	}))
	mux.HandleFunc("POST "+pathAddClient, handle(s, func(ctx context.Context, r addClient) (addedClient, error) {
		key, c, err := s.Ops.AddClient(ctx, r.By.op(), operator.NewClient{Name: r.Name, Trust: r.Trust, NeverAsk: r.NeverAsk,
			RequireToken: r.RequireToken, UnixUID: r.UnixUID, Assistant: r.Assistant})
		c.KeyHash = ""
		return addedClient{Key: key, Client: c}, err
	}))
	mux.HandleFunc("POST "+pathChangeClient, handle(s, func(ctx context.Context, r changeClient) (addedClient, error) {
		c, err := s.Ops.ChangeClient(ctx, r.By.op(), r.Ref, r.Action)
		c.KeyHash = ""
		return addedClient{Client: c}, err
	}))
	mux.HandleFunc("POST "+pathAddTool, handle(s, func(ctx context.Context, r addTool) (reported, error) {
		rep, err := s.Ops.AddToolServer(ctx, r.By.op(), r.Config)
		s.toolsChanged(ctx, err)
		return reported{Report: rep}, err
	}))
	mux.HandleFunc("POST "+pathRemoveTool, handle(s, func(ctx context.Context, r removeTool) (struct{}, error) {
		err := s.Ops.RemoveToolServer(ctx, r.By.op(), r.Name)
		s.toolsChanged(ctx, err)
		return struct{}{}, err
	}))
	mux.HandleFunc("POST "+pathAcceptTools, handle(s, func(ctx context.Context, r acceptTools) (reported, error) {
		rep, err := s.Ops.AcceptTools(ctx, r.By.op(), r.Name, r.Tools, r.DryRun)
		if !r.DryRun {
			s.toolsChanged(ctx, err)
		}
		// The differences are shown even when nothing was accepted.
		return reported{Report: rep, Error: toWire(err)}, nil
	}))
	mux.HandleFunc("POST "+pathRevoke, handle(s, func(ctx context.Context, r revoke) (struct{}, error) {
		return struct{}{}, s.Ops.Revoke(ctx, r.By.op(), r.ID)
	}))
	mux.HandleFunc("POST "+pathAnswer, handle(s, func(ctx context.Context, r answer) (struct{}, error) {
		return struct{}{}, s.Ops.Answer(ctx, r.By.op(), r.ID, r.Verb, r.Remember)
	}))
	return mux
}

func (s *Server) toolsChanged(ctx context.Context, err error) {
	if s.ToolsChanged != nil && err == nil {
		s.ToolsChanged(ctx)
	}
}

func (a actor) op() operator.Actor { return operator.Actor{ID: a.ID, Who: a.Who, Where: a.Where} }

// byOf reads the actor of a request, whatever its type.
type byOf interface{ by() actor }

func (r registerApp) by() actor  { return r.By }
func (r addClient) by() actor    { return r.By }
func (r changeClient) by() actor { return r.By }
func (r addTool) by() actor      { return r.By }
func (r removeTool) by() actor   { return r.By }
func (r acceptTools) by() actor  { return r.By }
func (r revoke) by() actor       { return r.By }
func (r answer) by() actor       { return r.By }

// handle is one change's handler: the peer checked, the request read strictly, the change
// made, its answer written (200 with the result, or 422 with the error and its kind).
func handle[Req byOf, Resp any](s *Server, change func(context.Context, Req) (Resp, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		uid, ok := ipc.PeerUIDOf(r.Context())
		if !ok || (uid != s.UID && uid != 0) {
			writeJSON(w, http.StatusForbidden, wireError{Message: "opsock: only the data folder's owner may change the gateway"})
			return
		}
		var req Req
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || dec.More() {
			writeJSON(w, http.StatusBadRequest, wireError{Message: "opsock: the request is not one JSON object of this change's fields"})
			return
		}
		if err := req.by().check(); err != nil {
			writeJSON(w, http.StatusBadRequest, wireError{Message: "opsock: " + err.Error()})
			return
		}
		resp, err := change(r.Context(), req)
		if err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, toWire(err))
			return
		}
		writeJSON(w, http.StatusOK, resp)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Listen listens on the operator socket at path with mode 0600. A socket file there that no
// process answers (left by a crash) is replaced; one a live process answers is ErrInUse.
func Listen(path string) (net.Listener, error) {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, ErrInUse
	}
	_ = os.Remove(path)
	// The umask is process-wide, so the mode is set after: until then the folder's 0700
	// keeps everyone else out.
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// ErrInUse is an operator socket another live gateway answers.
var ErrInUse = errors.New("opsock: another gateway answers the operator socket")

// Serve serves the handler on ln until ctx is done, then shuts down, waiting up to drain for
// the changes in flight.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ConnContext: ipc.ConnContext}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	return err
}
