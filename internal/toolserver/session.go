package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/store"
)

// Revisions are the MCP revisions capgate speaks to tool servers, newest first: those of
// the go-sdk it is built with. A session tries the newest, 2026-07-28 (stateless: no
// handshake, discovered with server/discover, every request carrying its revision and
// capabilities), and falls back to the initialize handshake at the newest revision the
// server takes (2025-11-25 and older) when the server does not discover.
func Revisions() []string { return mcpsdk.SupportedProtocolVersions() }

// StatelessRevision is the first MCP revision without the initialize handshake.
const StatelessRevision = "2026-07-28"

// Revision is the MCP revision a tool server's session spoke when capgate last connected
// to it (the running gateway on each connect, `capgate toolserver add` and `accept` on
// theirs), kept in the server's app state (key stateRevision).
//
// Evolution: fields may be added with omitempty, never renamed; it is stored as JSON.
type Revision struct {
	// Protocol is the negotiated revision, one of Revisions.
	Protocol string `json:"protocol"`
	// Stateless is true for 2026-07-28 and later: the server was discovered, with no
	// handshake and no session.
	Stateless bool      `json:"stateless,omitempty"`
	At        time.Time `json:"at"`
}

// String says r in words: "2026-07-28 (stateless, discovered)", "2025-11-25 (handshake)".
func (r Revision) String() string {
	switch {
	case r.Protocol == "":
		return "not connected yet"
	case r.Stateless:
		return r.Protocol + " (stateless, discovered)"
	}
	return r.Protocol + " (handshake)"
}

// RevisionOf is the revision s negotiated, at at.
func RevisionOf(s *mcpsdk.ClientSession, at time.Time) Revision {
	var p string
	if res := s.InitializeResult(); res != nil {
		p = res.ProtocolVersion
	}
	return Revision{Protocol: p, Stateless: p >= StatelessRevision, At: at.UTC()}
}

// LoadRevision returns the revision recorded for the tool server name, and false when
// capgate has recorded none (a server added before capgate recorded them, until the gateway
// connects to it again).
func LoadRevision(ctx context.Context, st store.State, name string) (Revision, bool, error) {
	raw, err := st.GetState(ctx, AppPrefix+name, stateRevision)
	if errors.Is(err, store.ErrNotFound) {
		return Revision{}, false, nil
	}
	if err != nil {
		return Revision{}, false, fmt.Errorf("toolserver %s: revision: %w", name, err)
	}
	var r Revision
	if err := json.Unmarshal(raw, &r); err != nil || !slices.Contains(Revisions(), r.Protocol) {
		return Revision{}, false, fmt.Errorf("toolserver %s: the stored revision does not parse", name)
	}
	return r, true, nil
}

// putRevision records r for the tool server name, unless the same revision is recorded
// already (a reconnect writes nothing).
func putRevision(ctx context.Context, st store.State, name string, r Revision) error {
	if old, ok, err := LoadRevision(ctx, st, name); err == nil && ok && old.Protocol == r.Protocol {
		return nil
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return st.PutState(ctx, AppPrefix+name, stateRevision, raw)
}

// elicitFunc answers one information request of the server (elicitation/create under the
// handshake revisions, an input request of a tools/call under 2026-07-28).
type elicitFunc func(context.Context, *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error)

// clientCapabilities are what capgate tells a tool server it can do, under every revision:
// information requests of both modes, so that a server of any revision may ask (a URL
// request goes to the person, a form request to the person or, for the profile fields of a
// server the person granted them to, is filled from the profile). It declares no roots (it has none to give a sandboxed server, and 2026-07-28
// deprecates them) and no sampling.
func clientCapabilities() *mcpsdk.ClientCapabilities {
	return &mcpsdk.ClientCapabilities{
		Elicitation: &mcpsdk.ElicitationCapabilities{
			Form: &mcpsdk.FormElicitationCapabilities{}, URL: &mcpsdk.URLElicitationCapabilities{},
		},
	}
}

// connect starts or reaches the server and opens a session at the newest revision both
// speak (Revisions): the go-sdk client tries server/discover at 2026-07-28 first and falls
// back to the initialize handshake. onChange is called on each tools/list_changed (under
// 2026-07-28 the client subscribes to them with subscriptions/listen); elicit answers the
// server's information requests, nil declining each.
func connect(ctx context.Context, c Config, box *sandbox.Sandbox, network Network, version string, onChange func(), elicit elicitFunc) (*mcpsdk.ClientSession, error) {
	t, started, end, err := c.transport(box, network)
	if err != nil {
		return nil, err
	}
	defer started()
	if elicit == nil {
		elicit = declineAll
	}
	opts := &mcpsdk.ClientOptions{Capabilities: clientCapabilities(), ElicitationHandler: elicit}
	if onChange != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcpsdk.ToolListChangedRequest) { onChange() }
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "capgate", Version: version}, opts)
	client.AddSendingMiddleware(listFresh)
	cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	s, err := client.Connect(cctx, t, nil)
	if err != nil {
		end()
		return nil, fmt.Errorf("toolserver %s: connect: %w", c.Name, err)
	}
	go func() {
		_ = s.Wait()
		end() // the server's network lasts as long as its session
	}()
	return s, nil
}

// listFresh drops the cache hint of every tools/list result before the go-sdk client keeps
// it: under 2026-07-28 the client would answer the next listing from its cache for as long as
// the server's ttlMs says, so that a server could hide a changed tool from capgate's
// relisting behind an hour's hint. Every listing goes to the server, as under the older
// revisions.
func listFresh(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		res, err := next(ctx, method, req)
		if l, ok := res.(*mcpsdk.ListToolsResult); ok && l != nil {
			l.TTLMs = 0
		}
		return res, err
	}
}

// declineAll answers an information request outside a running gateway (add, accept): no
// person is there to ask.
func declineAll(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
	return decline(ReasonNoPerson), nil
}
