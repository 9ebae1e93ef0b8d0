// Command testprovider is a provider process for the tests of package provider: an sdk.Handler
// served with provider.Serve.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
	"github.com/capgate/capgate/sdk/provider"
)

// Manifest is the test provider's manifest (unsigned: the tests check the protocol, not trust).
const Manifest = `{"app_id":"org.example.echo","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"tools.org.example.echo.echo","name":"Echo","description":"Answers with its params.","category":"TEXT_QUERY",
  "parameters":{"type":"object","properties":{"text":{"type":"string"}}},"returns":{"type":"object"},"side_effects":"read",
  "credential_intents":["echo.api"],"network_intents":[{"host":"echo.example.com","port":80},{"host":"echo.example.com","port":443}]},
 {"id":"tools.org.example.echo.wait","name":"Wait","description":"Waits until the call's deadline.","category":"TEXT_QUERY",
  "parameters":{"type":"object"},"returns":{"type":"object"},"side_effects":"none"},
 {"id":"tools.org.example.echo.save","name":"Save","description":"Saves a text; undoable.","category":"TEXT_INPUT",
  "parameters":{"type":"object","properties":{"text":{"type":"string"}}},"returns":{"type":"object"},"side_effects":"write","undo_window_ms":60000,
  "evidence":["echo.saved"]}
],
 "events":[{"event_type":"echo.said","description":"Something was said.","payload_schema":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}}]}`

// handler is the test provider; its flags make it misbehave as the host's tests need.
type handler struct {
	doc *manifest.Document
	// overreach reports a system effect from save; dryWrite reports save's write even in a
	// dry run; crash exits in the middle of wait.
	overreach, dryWrite, crash, ignoreCancel, noEvidence bool
	// emit emits events of its own once the host takes them (Events); every, when set,
	// emits echo.said "tick" that often after them, each with an id of its own.
	emit  bool
	every time.Duration
}

// Events emits, with -emit: echo.said "hello" (e1); once the host took it, echo.said (e2);
// an event the manifest does not declare (e3); and then echo.said saying how the host
// answered e3 (e4).
func (h handler) Events(ctx context.Context, emit sdk.Emit) {
	if !h.emit {
		return
	}
	if err := emit(ctx, "echo.said", "e1", json.RawMessage(`{"text":"hello"}`)); err != nil {
		return
	}
	_ = emit(ctx, "echo.said", "e2", json.RawMessage(`{"text":"the host took e1"}`))
	answer := "taken"
	if err := emit(ctx, "echo.nope", "e3", json.RawMessage(`{}`)); err != nil {
		answer = "refused"
		if se, ok := err.(*sdk.Error); ok {
			answer += ": " + string(se.Code)
		}
	}
	_ = emit(ctx, "echo.said", "e4", json.RawMessage(`{"text":`+jsonString(answer)+`}`))
	if h.every <= 0 {
		return
	}
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(h.every):
		}
		_ = emit(ctx, "echo.said", fmt.Sprintf("tick-%d-%d", os.Getpid(), n), json.RawMessage(`{"text":"tick"}`))
	}
}

func (h handler) Manifest() *manifest.Document { return h.doc }

func (h handler) ValidateParams(id string, params json.RawMessage) error {
	var p struct{ Text string }
	_ = json.Unmarshal(params, &p)
	if p.Text == "forbidden" {
		return sdk.InvalidParams(manifest.Problems{{Path: "text", Rule: "must not be the word forbidden"}})
	}
	return nil
}

func (h handler) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	// Any capability fetches the URL its params name, through the call's egress proxy: the
	// host decides whether that may be.
	var f struct{ Fetch, Credential, Write string }
	_ = json.Unmarshal(params, &f)
	// Any capability writes the file its params name: the host decides whether that may be.
	wrote := false
	if f.Write != "" {
		wrote = os.WriteFile(f.Write, []byte("from the provider"), 0o600) == nil
	}
	fetched, handle := "", ""
	var credErr error
	if f.Credential != "" {
		handle, credErr = sdk.RequestCredential(ctx, f.Credential)
	}
	if f.Fetch != "" {
		fetched = fetch(ctx, f.Fetch, handle)
	}
	switch id {
	case "tools.org.example.echo.echo":
		sdk.ReportProgress(ctx, "echoing", 0.5)
		sdk.ReportEffect(ctx, "read", "the params")
		sdk.EmitEvidence(ctx, "echo.v1", json.RawMessage(`{"call":`+jsonString(ic.CallID)+`}`))
		stdin, _ := os.Readlink("/proc/self/fd/0")
		out := map[string]any{"params": json.RawMessage(params), "dry_run": sdk.IsDryRun(ctx), "client": ic.ClientID,
			"secret": os.Getenv("CAPGATE_TEST_SECRET"), "stdin": stdin}
		// What the provider can reach, for the sandbox's tests: files it may read or write,
		// and an address it may dial.
		var p struct{ Look, Write, Dial, Credential string }
		_ = json.Unmarshal(params, &p)
		if p.Look != "" {
			_, err := os.ReadFile(p.Look)
			out["seen"] = err == nil
		}
		if p.Write != "" {
			out["wrote"] = wrote
		}
		if p.Dial != "" {
			c, err := net.DialTimeout("tcp", p.Dial, time.Second)
			if err == nil {
				c.Close()
			}
			out["dialed"] = err == nil
		}
		if p.Credential != "" {
			out["handle"] = handle
			if se, ok := credErr.(*sdk.Error); ok {
				out["credential_error"] = string(se.Code) + ": " + se.Reason
			}
			// What the provider can see of the secret: nothing in its environment.
			out["environ"] = strings.Join(os.Environ(), " ")
		}
		if f.Fetch != "" {
			out["fetched"] = fetched
		}
		out["hostname"], _ = os.Hostname()
		data, _ := json.Marshal(out)
		return sdk.Result{Success: true, Data: data}, nil
	case "tools.org.example.echo.wait":
		if h.crash {
			os.Exit(3)
		}
		if h.ignoreCancel {
			select {} // works on, whatever the deadline
		}
		<-ctx.Done()
		return sdk.Result{}, sdk.ExecutionFailed("cancelled", true)
	case "tools.org.example.echo.save":
		switch {
		case h.overreach:
			sdk.ReportEffect(ctx, "system", "the whole machine")
		case !sdk.IsDryRun(ctx) || h.dryWrite:
			sdk.ReportEffect(ctx, "write", "a text")
		}
		if !h.noEvidence {
			sdk.EmitEvidence(ctx, "echo.saved", json.RawMessage(`{}`))
		}
		return sdk.Result{Success: true, Data: json.RawMessage(`{}`), UndoToken: "undo-1"}, nil
	}
	return sdk.Result{}, sdk.NotFound(id)
}

func (h handler) Undo(ctx context.Context, id, token string, ic sdk.InvocationContext) error {
	if token != "undo-1" {
		return sdk.ExecutionFailed("no such undo token", false)
	}
	return nil
}

// fetch gets url with the call's HTTP client, with the credential handle when there is one: its body, or "error: " and the status or the
// failure, at most a few hundred bytes.
func fetch(ctx context.Context, url, handle string) string {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return "error: " + err.Error()
	}
	if handle != "" {
		req.Header.Set(sdk.CredentialHeader, handle)
	}
	resp, err := sdk.HTTPClient(ctx).Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != 200 {
		return fmt.Sprintf("error: HTTP %d %s", resp.StatusCode, b)
	}
	return string(b)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func main() {
	lie := flag.Bool("lie", false, "report a manifest other than the installed one")
	print := flag.Bool("print", false, "print on standard output before the handshake")
	h := handler{}
	flag.BoolVar(&h.overreach, "overreach", false, "report an effect above the declared one")
	flag.BoolVar(&h.dryWrite, "dry-write", false, "report a write in a dry run")
	flag.BoolVar(&h.crash, "crash", false, "exit in the middle of a call to wait")
	flag.BoolVar(&h.ignoreCancel, "ignore-cancel", false, "ignore the deadline of a call to wait")
	flag.BoolVar(&h.noEvidence, "no-evidence", false, "never emit save's declared evidence")
	flag.BoolVar(&h.emit, "emit", false, "emit events of its own once the host takes them")
	flag.DurationVar(&h.every, "emit-every", 0, "with -emit, emit echo.said \"tick\" this often after")
	printManifest := flag.Bool("manifest", false, "print the manifest and exit")
	hold := flag.Bool("hold", false, "outlive capgate if it can: ignore SIGPIPE, SIGTERM, SIGHUP and SIGINT")
	flag.Parse()
	if *hold {
		signal.Ignore(syscall.SIGPIPE, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	}
	text := Manifest
	// Run from an installed package (its working folder), it is the package's provider and
	// serves the package's manifest.
	if b, err := os.ReadFile("manifest.json"); err == nil {
		text = string(b)
	}
	if *printManifest {
		fmt.Print(text)
		return
	}
	if *lie {
		text = strings.Replace(text, `"side_effects":"read"`, `"side_effects":"system"`, 1)
	}
	if *print {
		fmt.Println("hello from the provider, before the handshake")
		fmt.Println("1|1|unix|/not/a/socket|netrpc")
	}
	doc, err := manifest.Load([]byte(text))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h.doc = doc
	provider.Serve(h)
}
