package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/internal/apps/settings"
	"github.com/capgate/capgate/internal/bench"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/manifest"
)

// toolServerName is the tool server the race adds to its gateway: this program itself,
// started with toolServerArg.
const toolServerName = "srv"

// rig is one gateway as `capgate serve` opens it, in a temporary data folder, serving on
// 127.0.0.1: the Settings app built in, the race's own MCP tool server added (when a
// sandbox can be made here), a user client, and tokens for both.
type rig struct {
	ctx    context.Context
	dir    string
	g      *gateway.Gateway
	url    string // http://127.0.0.1:PORT
	key    string // the client's key
	caller broker.Caller
	// settingsTok is a token for system.settings.read, no use limit. (The MCP agent asks for
	// its own through /mcp, as agents do.)
	settingsTok string
	// noToolServer says why the tool server was not added ("" when it was).
	noToolServer string

	stop   context.CancelFunc
	served chan error
}

// openRig opens the gateway. self is this program, which serves the MCP tool server when
// started with toolServerArg.
func openRig(ctx context.Context, self string) (*rig, error) {
	dir, err := os.MkdirTemp("", "capgate-race-")
	if err != nil {
		return nil, err
	}
	r := &rig{ctx: ctx, dir: dir}
	ok := false
	defer func() {
		if !ok {
			r.close()
		}
	}()
	if err := r.addToolServer(self); err != nil {
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	r.g, err = gateway.Open(ctx, gateway.Config{DataDir: dir, Listen: "127.0.0.1:0", Socket: "-", Logger: quiet})
	if err != nil {
		return nil, err
	}
	key, hash, err := operator.NewClientKey()
	if err != nil {
		return nil, err
	}
	id, err := operator.NewClientID()
	if err != nil {
		return nil, err
	}
	c := store.Client{ID: id, Name: "race", KeyHash: hash, Trust: manifest.AuthUser, Created: time.Now()}
	if err := r.g.Store.PutClient(ctx, c); err != nil {
		return nil, fmt.Errorf("add the client: %w", err)
	}
	r.key, r.caller = key, broker.Caller{ClientID: c.ID, Name: c.Name, Trust: manifest.AuthUser}
	iss, err := r.g.Broker.RequestCapability(ctx, r.caller, broker.CapabilityRequest{
		Capabilities: []string{"system.settings.read"}, Duration: 3600, Reason: "capgate race"})
	if err != nil {
		return nil, fmt.Errorf("issue the settings token: %w", err)
	}
	r.settingsTok = iss.Wire

	sctx, stop := context.WithCancel(ctx)
	r.stop, r.served = stop, make(chan error, 1)
	addr := make(chan string, 1)
	go func() { r.served <- r.g.Serve(sctx, func(tcp, _ string) { addr <- tcp }) }()
	select {
	case a := <-addr:
		r.url = "http://" + a
	case err := <-r.served:
		r.served = nil
		return nil, fmt.Errorf("serve: %w", err)
	}
	ok = true
	return r, nil
}

// addToolServer adds this program as the stdio tool server srv, as `capgate toolserver add`
// does (on the store, before the gateway opens), with an operator overlay that classifies
// its echo as a low-risk read, so that no call waits for the person: the same set-up as the
// MCP benchmark of internal/toolserver. Without a sandbox capgate runs no stdio server;
// then the MCP race is left out and noToolServer says why.
func (r *rig) addToolServer(self string) error {
	box, err := sandbox.Open(r.ctx, sandbox.ModeOn)
	if errors.Is(err, sandbox.ErrUnavailable) {
		r.noToolServer = "no sandbox can be made here, and capgate runs no stdio tool server without one: " + err.Error()
		return nil
	}
	if err != nil {
		return err
	}
	overlay, _ := json.Marshal(map[string]any{"echo": map[string]any{"side_effects": "read", "risk": "low", "reversibility": "reversible"}})
	path := toolserver.OverlayFile(r.dir, toolServerName)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, overlay, 0o600); err != nil {
		return err
	}
	st, err := sqlite.Open(r.ctx, filepath.Join(r.dir, gateway.DBFile))
	if err != nil {
		return err
	}
	defer st.Close()
	reg, err := registry.New(r.ctx, st, nil)
	if err != nil {
		return err
	}
	rep, err := toolserver.Add(r.ctx, &toolserver.Env{Store: st, Registry: reg, DataDir: r.dir, Sandbox: box},
		toolserver.Config{Name: toolServerName, Command: self, Args: []string{toolServerArg}})
	if err != nil {
		return fmt.Errorf("add the tool server: %w", err)
	}
	if len(rep.Accepted) != 1 {
		return fmt.Errorf("add the tool server: accepted %d tools, want 1 (left %v)", len(rep.Accepted), rep.Left)
	}
	return nil
}

func (r *rig) close() {
	if r.stop != nil {
		r.stop()
		if r.served != nil {
			<-r.served
		}
		r.stop = nil
	}
	if r.g != nil {
		r.g.Close()
		r.g = nil
	}
	if r.dir != "" {
		os.RemoveAll(r.dir)
		r.dir = ""
	}
}

// getSettingParams are the params of every Settings call of the race.
var getSettingParams = json.RawMessage(`{"category":"display","key":"brightness"}`)

// settingsRequest is the broker's request for get_setting under the settings token, with its
// params parsed as the IPC front passes them.
func (r *rig) settingsRequest() (broker.Request, error) {
	req := broker.Request{RequestID: "race", Action: ipc.ActionQuery, App: settings.Alias, Method: "get_setting",
		Params: getSettingParams, Token: r.settingsTok}
	v, err := jcs.Parse(req.Params, nil)
	if err != nil {
		return broker.Request{}, err
	}
	req.ParamsValue = v.Interface()
	return req, nil
}

// client is the public Go client of the gateway, as an agent in Go calls it.
func (r *rig) client() (*client.Client, error) {
	return client.New(&client.Options{Server: r.url, Key: r.key})
}

// gatewayGoals is this program started with gatewayArg: the gateway's goals with their floors,
// for the duration d, printed as JSON.
func gatewayGoals(d string) error {
	dur, err := time.ParseDuration(d)
	if err != nil || dur <= 0 || dur > time.Minute {
		return fmt.Errorf("the duration %q: must be positive and at most 1m", d)
	}
	g, err := bench.Gateway(bench.GatewayOptions{Duration: dur, Workers: scaleWorkers, Floor: true})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(g)
}

// runGatewayGoals runs the gateway's goals in a process of its own (this program, with
// gatewayArg) and reads its report.
func runGatewayGoals(ctx context.Context, self string, d time.Duration) (bench.GatewayReport, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, self, gatewayArg, d.String())
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return bench.GatewayReport{}, fmt.Errorf("%w: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	var g bench.GatewayReport
	if err := json.Unmarshal(out.Bytes(), &g); err != nil {
		return bench.GatewayReport{}, fmt.Errorf("its report: %w", err)
	}
	return g, nil
}
