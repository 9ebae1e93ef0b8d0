package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/internal/apps/settings"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/sdk"
)

// settingsState keeps the Settings app's values in the gateway's store, as the gateway does.
type settingsState struct{ s store.State }

func (st settingsState) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := st.s.GetState(ctx, settings.AppID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, settings.ErrUnset
	}
	return v, err
}

func (st settingsState) Put(ctx context.Context, key string, value []byte) error {
	return st.s.PutState(ctx, settings.AppID, key, value)
}

// settingsCalls are get_setting made two ways: through capgate (viaCapgate: POST /v1/ipc over
// loopback HTTP by the public client, with the client key, the token, the decision, the
// token checked at use, the Settings app reading its value from the store, and the decision
// and outcome records durable in the audit log before the answer), and the Settings
// handler called directly in the process on the same store (direct), the floor of any
// gateway in front of it.
func settingsCalls(r *rig) (viaCapgate, direct func() error, err error) {
	c, err := r.client()
	if err != nil {
		return nil, nil, err
	}
	n := 0
	viaCapgate = func() error {
		n++
		res, err := c.Query(r.ctx, client.Call{App: settings.Alias, Method: "get_setting", Params: getSettingParams,
			Token: r.settingsTok, RequestID: "race-" + strconv.Itoa(n)})
		if err != nil {
			return err
		}
		if len(res.Data) == 0 {
			return errors.New("get_setting answered nothing")
		}
		return nil
	}
	app, ok := r.g.Registry.App(settings.AppID)
	if !ok {
		return nil, nil, errors.New("the Settings app is not registered")
	}
	h := settings.New(app.Doc, settingsState{r.g.Store})
	ic := sdk.InvocationContext{Source: sdk.SourceAgent, AppID: settings.AppID, ClientID: r.caller.ClientID, CallID: "race"}
	direct = func() error {
		res, err := h.Invoke(r.ctx, settings.GetID, getSettingParams, ic)
		if err != nil {
			return err
		}
		if !res.Success {
			return errors.New("get_setting failed")
		}
		return nil
	}
	return viaCapgate, direct, nil
}

// bearer sends the client key as the bearer token, as an MCP client configured for capgate does.
type bearer struct{ key string }

func (k bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpCalls are the tool server's echo called two ways, as internal/toolserver's
// BenchmarkAddedLatency calls it: directly, by an MCP client of the SDK that starts the same
// program over stdio (unsandboxed), and through capgate's /mcp by an MCP client of the SDK
// over streamable HTTP (the session's token, the decision, the durable audit records, the
// call to the server in its sandbox over capgate's own connection). closeAll ends both
// sessions.
func mcpCalls(r *rig, self string) (viaCapgate, direct func() error, closeAll func(), err error) {
	args := map[string]any{"text": "hi"}
	dc := mcp.NewClient(&mcp.Implementation{Name: "capgate-race", Version: "1"}, nil)
	ds, err := dc.Connect(r.ctx, &mcp.CommandTransport{Command: exec.Command(self, toolServerArg)}, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("mcp direct: %w", err)
	}
	agent := mcp.NewClient(&mcp.Implementation{Name: "capgate-race-agent", Version: "1"}, nil)
	as, err := agent.Connect(r.ctx, &mcp.StreamableClientTransport{Endpoint: r.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{r.key}}}, nil)
	if err != nil {
		ds.Close()
		return nil, nil, nil, fmt.Errorf("mcp through capgate: %w", err)
	}
	closeAll = func() {
		as.Close()
		ds.Close()
	}
	call := func(s *mcp.ClientSession, name string) error {
		res, err := s.CallTool(r.ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("%s: the tool failed: %v", name, res.Content)
		}
		return nil
	}
	if res, err := as.CallTool(r.ctx, &mcp.CallToolParams{Name: "capgate__request_capability",
		Arguments: map[string]any{"capabilities": []string{"mcp." + toolServerName + ".echo"}, "duration": 3600, "reason": "capgate race"}}); err != nil || res.IsError {
		closeAll()
		return nil, nil, nil, fmt.Errorf("request_capability over /mcp: %v %v", err, res)
	}
	direct = func() error { return call(ds, "echo") }
	viaCapgate = func() error { return call(as, toolServerName+"__echo") }
	return viaCapgate, direct, closeAll, nil
}

// serveToolServer is the race's MCP tool server over stdio: one tool, echo, that answers
// "echo: " and its text, having done nothing else.
func serveToolServer() error {
	s := mcp.NewServer(&mcp.Implementation{Name: "capgate-race-echo", Version: "1"}, nil)
	type in struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Answers with the text it is given."},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	return s.Run(context.Background(), &mcp.StdioTransport{})
}

// syncWriteOp appends 4 KiB to a file in dir and waits for it to reach the disk (fsync), as a
// durable commit does at the least: the floor of what a call with durable audit can add.
func syncWriteOp(dir string) func() error {
	page := make([]byte, 4096)
	var f *os.File
	return func() error {
		if f == nil {
			var err error
			if f, err = os.CreateTemp(dir, "fsync-"); err != nil {
				return err
			}
		}
		page[0]++
		if _, err := f.Write(page); err != nil {
			return err
		}
		return f.Sync()
	}
}
