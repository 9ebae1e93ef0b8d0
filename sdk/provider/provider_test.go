package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/capgate/capgate/internal/providers/providertest"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
	"github.com/capgate/capgate/sdk/provider"
)

func testProvider(t *testing.T) string { return providertest.Build(t) }

// start starts the test provider as capgate does and returns its client.
func start(t *testing.T) (*provider.Client, *plugin.Client) {
	t.Helper()
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:     provider.Handshake,
		VersionedPlugins:    provider.Plugins(nil),
		Cmd:                 exec.Command(testProvider(t)),
		AllowedProtocols:    []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCBrokerMultiplex: true,
		GRPCDialOptions:     provider.DialOptions(),
		Logger:              hclog.NewNullLogger(),
	})
	t.Cleanup(pc.Kill)
	rpc, err := pc.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rpc.Dispense(provider.Name)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*provider.Client), pc
}

// A handler served with Serve answers the protocol as it answers in process: its manifest as
// it was loaded, its own param rules, a call's result with the effects, evidence and progress
// it reported, the dry-run flag, the call's context, its undo; and the call's deadline
// reaches it.
func TestServeRoundTrip(t *testing.T) {
	c, pc := start(t)
	ctx := context.Background()
	if v := pc.NegotiatedVersion(); v != 1 {
		t.Errorf("negotiated protocol version %d, want 1", v)
	}
	raw, err := c.Manifest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := manifest.Parse(raw)
	if err != nil || doc.Manifest().AppID != "org.example.echo" {
		t.Fatalf("the manifest: %v", err)
	}
	if err := c.ValidateParams(ctx, "tools.org.example.echo.echo", json.RawMessage(`{"text":"ok"}`)); err != nil {
		t.Errorf("valid params: %v", err)
	}
	var se *sdk.Error
	err = c.ValidateParams(ctx, "tools.org.example.echo.echo", json.RawMessage(`{"text":"forbidden"}`))
	if !errors.As(err, &se) || se.Code != sdk.CodeInvalidParams || len(se.Problems) != 1 || se.Problems[0].Path != "text" {
		t.Errorf("params the provider's rules refuse: %v", err)
	}

	var progress []string
	out, err := c.Invoke(ctx, "tools.org.example.echo.echo", json.RawMessage(`{"text":"hi"}`),
		sdk.InvocationContext{ClientID: "cl_a", CallID: "call-1", Source: sdk.SourceAgent}, true,
		func(m string, f float64) { progress = append(progress, m) })
	if err != nil || out.Err != nil || !out.Result.Success {
		t.Fatalf("echo: %+v %v", out, err)
	}
	if !bytes.Contains(out.Result.Data, []byte(`"dry_run":true`)) || !bytes.Contains(out.Result.Data, []byte(`"client":"cl_a"`)) ||
		!bytes.Contains(out.Result.Data, []byte(`"text":"hi"`)) {
		t.Errorf("echo answered %s", out.Result.Data)
	}
	if len(out.Effects) != 1 || out.Effects[0].Effect != "read" || len(out.Evidence) != 1 || out.Evidence[0].Type != "echo.v1" ||
		!bytes.Contains(out.Evidence[0].Body, []byte(`"call-1"`)) {
		t.Errorf("effects %+v, evidence %+v", out.Effects, out.Evidence)
	}
	if len(progress) != 1 || progress[0] != "echoing" {
		t.Errorf("progress %q", progress)
	}

	out, err = c.Invoke(ctx, "tools.org.example.echo.save", json.RawMessage(`{}`), sdk.InvocationContext{}, false, nil)
	if err != nil || out.Result.UndoToken != "undo-1" || len(out.Effects) != 1 || out.Effects[0].Effect != "write" {
		t.Fatalf("save: %+v %v", out, err)
	}
	if err := c.Undo(ctx, "tools.org.example.echo.save", "undo-1", sdk.InvocationContext{}); err != nil {
		t.Errorf("undo: %v", err)
	}
	if err := c.Undo(ctx, "tools.org.example.echo.save", "undo-2", sdk.InvocationContext{}); !errors.As(err, &se) || se.Code != sdk.CodeExecutionFailed {
		t.Errorf("undo of no such token: %v", err)
	}
	out, err = c.Invoke(ctx, "tools.org.example.echo.nope", json.RawMessage(`{}`), sdk.InvocationContext{}, false, nil)
	if err != nil || !errors.As(out.Err, &se) || se.Code != sdk.CodeNotFound {
		t.Errorf("an unknown capability: %+v %v", out, err)
	}

	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	out, err = c.Invoke(wctx, "tools.org.example.echo.wait", json.RawMessage(`{}`), sdk.InvocationContext{}, false, nil)
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("the deadline did not reach the provider: the call took %s", took)
	}
	if err == nil && out.Err == nil {
		t.Errorf("a call past its deadline succeeded: %+v", out)
	}

	// Killing the client ends the provider process.
	pc.Kill()
	if !pc.Exited() {
		t.Error("the provider process outlived Kill")
	}
}

// The protocol's flow-control windows are static: a message larger than a stream's window
// still crosses, both ways, in the window updates its receiver sends.
func TestLargerThanTheWindow(t *testing.T) {
	c, _ := start(t)
	text := strings.Repeat("x", 3<<20) // 3 MiB each way, above the 1 MiB stream window
	params, _ := json.Marshal(map[string]string{"text": text})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.Invoke(ctx, "tools.org.example.echo.echo", params, sdk.InvocationContext{}, false, nil)
	if err != nil || out.Err != nil || !bytes.Contains(out.Result.Data, []byte(text)) {
		t.Fatalf("3 MiB through the protocol: %v %v (%d bytes back)", err, out.Err, len(out.Result.Data))
	}
}

// A program started by hand, not by capgate, says so and exits rather than waiting.
func TestStartedByHand(t *testing.T) {
	out, err := exec.Command(testProvider(t)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "plugin") {
		t.Errorf("run by hand: %v\n%s", err, out)
	}
}

// The handshake settles on a protocol version both sides speak, and refuses a provider that
// speaks none the host does.
func TestNoVersionInCommon(t *testing.T) {
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:     provider.Handshake,
		VersionedPlugins:    map[int]plugin.PluginSet{99: {provider.Name: &provider.Plugin{}}},
		Cmd:                 exec.Command(testProvider(t)),
		AllowedProtocols:    []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCBrokerMultiplex: true,
		Logger:              hclog.NewNullLogger(),
	})
	defer pc.Kill()
	if _, err := pc.Client(); err == nil {
		t.Fatal("a provider with no protocol version in common was started")
	}
}

// A provider's own events reach the host through HostService once the host takes them
// (ServeEvents): each as the provider sent it, and the host's refusal goes back to the
// provider as an sdk.Error.
func TestProviderEvents(t *testing.T) {
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: provider.Handshake, VersionedPlugins: provider.Plugins(nil),
		Cmd: exec.Command(testProvider(t), "-emit"), AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCBrokerMultiplex: true, GRPCDialOptions: provider.DialOptions(), Logger: hclog.NewNullLogger(),
	})
	t.Cleanup(pc.Kill)
	rpc, err := pc.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rpc.Dispense(provider.Name)
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(*provider.Client)
	type event struct{ typ, id, payload string }
	got := make(chan event, 8)
	err = c.ServeEvents(context.Background(), func(_ context.Context, typ, id string, payload json.RawMessage) error {
		got <- event{typ, id, string(payload)}
		if typ != "echo.said" {
			return sdk.InvalidParams(manifest.Problems{{Path: "event_type", Rule: "not declared"}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var all []event
	for len(all) < 4 {
		select {
		case e := <-got:
			all = append(all, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("events so far: %+v", all)
		}
	}
	if all[0] != (event{"echo.said", "e1", `{"text":"hello"}`}) || all[1].id != "e2" || all[2].typ != "echo.nope" ||
		all[3].payload != `{"text":"refused: invalid_params"}` {
		t.Fatalf("events %+v", all)
	}
}
