package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/files"
	"github.com/capgate/capgate/internal/apps/settings"
	"github.com/capgate/capgate/internal/apps/syslog"
	"github.com/capgate/capgate/internal/apps/terminal"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/desktop"
	"github.com/capgate/capgate/internal/desktop/desktoptest"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/trigger"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// An error entry of capgate's own log is the syslog app's event entry.error: a trigger on it
// fires when its condition holds of the entry, and an info entry fires nothing.
func TestLogErrorFiresTrigger(t *testing.T) {
	ctx := context.Background()
	g, err := Open(ctx, Config{DataDir: t.TempDir(), Listen: "-", Socket: "-", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		DelayedCommit: -1, TriggerTick: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_, hash, _ := operator.NewClientKey()
	if err := g.Store.PutClient(ctx, store.Client{ID: "cl_watch", Name: "watch", KeyHash: hash, Trust: manifest.AuthUser, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := g.Broker.PutMandate(ctx, store.Mandate{Permission: "system.settings.write", Autonomy: "act", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c, _ := g.Store.GetClient(ctx, "cl_watch")
	p, err := g.Triggers.Propose(ctx, broker.CallerOf(c), trigger.Spec{
		Source:    trigger.Source{Kind: trigger.SourceEvent, App: syslog.AppID, Event: syslog.EventError},
		Condition: `event.message.contains("disk full")`,
		Action: trigger.Action{App: settings.AppID, Method: "set_setting",
			Params: json.RawMessage(`{"category":"sound","key":"master_volume","value":0}`)},
		Budget: trigger.Budget{Count: 3}, EndsAt: time.Now().Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Consent.Approve(ctx, p.ConsentID, "the person", false); err != nil {
		t.Fatal(err)
	}
	if err := g.Triggers.Step(ctx); err != nil {
		t.Fatal(err)
	}
	g.log.Info("disk full, but only said")
	g.log.Error("the backup failed", "why", "disk full")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := g.Store.GetState(ctx, settings.AppID, "sound.master_volume"); err == nil && string(b) == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the error entry did not fire the trigger")
		}
	}
	waitDone(t, g, p.ID, 1)
}

// waitDone waits for n firings of trigger id to be done (the action's effect is seen a
// moment before its firing's row says so), and fails if more are, or a use more was taken.
func waitDone(t *testing.T, g *Gateway, id string, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		v, err := g.Triggers.Get(context.Background(), id, "")
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, f := range v.Recent {
			if f.State == trigger.FiringDone {
				done++
			}
		}
		if done == n && v.Used == int64(n) {
			return
		}
		if done > n || time.Now().After(deadline) {
			t.Fatalf("want %d firings done: %+v (used %d)", n, v.Recent, v.Used)
		}
	}
}

// A change in the workspace is the files app's event file.changed while a trigger waits for
// it: a file created in the watched folder fires it, one elsewhere does not.
func TestFileChangeFiresTrigger(t *testing.T) {
	ctx := context.Background()
	g, err := Open(ctx, Config{DataDir: t.TempDir(), Listen: "-", Socket: "-", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		DelayedCommit: -1, TriggerTick: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := os.MkdirAll(filepath.Join(g.Workspace(), "inbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, hash, _ := operator.NewClientKey()
	if err := g.Store.PutClient(ctx, store.Client{ID: "cl_watch", Name: "watch", KeyHash: hash, Trust: manifest.AuthUser, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := g.Broker.PutMandate(ctx, store.Mandate{Permission: "system.settings.write", Autonomy: "act", Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c, _ := g.Store.GetClient(ctx, "cl_watch")
	p, err := g.Triggers.Create(ctx, broker.CallerOf(c), trigger.Spec{
		Source:    trigger.Source{Kind: trigger.SourceEvent, App: files.AppID, Event: files.EventChanged},
		Condition: `event.path.startsWith("inbox/") && event.change == "created"`,
		Action: trigger.Action{App: settings.AppID, Method: "set_setting",
			Params: json.RawMessage(`{"category":"sound","key":"master_volume","value":1}`)},
		Budget: trigger.Budget{Count: 3}, EndsAt: time.Now().Add(time.Hour),
	}, "the person")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(files.WatchInterval + time.Second) // the baseline scan
	if err := os.WriteFile(filepath.Join(g.Workspace(), "elsewhere.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.Workspace(), "inbox", "new.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * files.WatchInterval); ; time.Sleep(50 * time.Millisecond) {
		if b, err := g.Store.GetState(ctx, settings.AppID, "sound.master_volume"); err == nil && string(b) == "1" {
			break
		}
		if time.Now().After(deadline) {
			v, _ := g.Triggers.Get(ctx, p.ID, "")
			t.Fatalf("the file created in inbox/ did not fire the trigger: %+v", v.Recent)
		}
	}
	waitDone(t, g, p.ID, 1)
}

// A desktop app added from its accessibility tree runs through the broker, and stops working
// once its tree changes shape, until it is added again.
func TestDesktopAppStopsWhenItsTreeChanges(t *testing.T) {
	s := desktoptest.Start(t, "../..")
	ctx := context.Background()
	g, err := Open(ctx, Config{DataDir: t.TempDir(), Listen: "-", Socket: "-", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		DelayedCommit: -1, TriggerTick: -1, DesktopRecheck: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tree, err := s.Bus.Walk(ctx, s.App)
	if err != nil {
		t.Fatal(err)
	}
	d, err := desktop.Derive(tree)
	if err != nil {
		t.Fatal(err)
	}
	if err := desktop.SaveRecord(ctx, g.Store, desktop.RecordOf(d, s.App.Name, time.Now())); err != nil {
		t.Fatal(err)
	}
	app, err := g.Registry.Register(ctx, d.Manifest, "counter")
	if err != nil || app.Tier != manifest.Tier2 {
		t.Fatalf("register: %+v %v", app, err)
	}
	caller := broker.Caller{ClientID: "cl_person", Name: "person", Trust: manifest.AuthPrivileged, NeverAsk: true}
	explain := func(method string) policy.Decision {
		return g.Broker.Explain(ctx, caller, broker.Request{Action: "execute", App: "counter", Method: method, Params: json.RawMessage(`{}`)})
	}
	if dec := explain("get_text_count"); dec.Step == 1 && !dec.Allowed() {
		t.Fatalf("the added app is not working: %+v", dec)
	}
	h, st := g.Broker.Provider(app.ID)
	if st != broker.Working {
		t.Fatalf("provider state %v", st)
	}
	if _, err := h.Invoke(ctx, "ui."+d.AppID+".toggle_enabled", json.RawMessage(`{}`), sdk.InvocationContext{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, st := g.Broker.Provider(app.ID); st == broker.NotWorking {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the app kept working after its tree changed shape")
		}
	}
	if dec := explain("get_text_count"); dec.Allowed() || dec.Step != 1 || !strings.Contains(dec.Explanation, "not working right now") {
		t.Fatalf("a call after the change: %+v", dec)
	}
	// The person is asked to review what it offers now: the new button is shown.
	review := gatewaytest.WaitPending(t, g.Store, desktop.KindReview)
	_, req, err := g.Consent.Get(ctx, review)
	if err != nil || !slices.Contains(req.Difference, "+ ui."+d.AppID+".press_extra") {
		t.Fatalf("the review: %+v %v", req, err)
	}
	if err := g.Consent.Approve(ctx, review, "the person", false); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if dec := explain("press_extra"); dec.Step > 1 || dec.Allowed() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the review the new button is not a working capability: %+v", explain("press_extra"))
		}
	}
	if dec := explain("get_text_count"); dec.Step == 1 && !dec.Allowed() {
		t.Fatalf("after the review the app is not working: %+v", dec)
	}
}

// Nothing reaches the accessibility bus from inside a sandbox: a command the terminal runs
// finds neither the bus's socket nor the session's address.
func TestSandboxReachesNoAccessibilityBus(t *testing.T) {
	s := desktoptest.Start(t, "../..")
	socket, ok := strings.CutPrefix(strings.Split(s.Bus.Address(), ",")[0], "unix:path=")
	if !ok {
		t.Skipf("the accessibility bus is not at a socket path here: %s", s.Bus.Address())
	}
	if _, err := os.Stat(socket); err != nil {
		t.Fatalf("the bus's socket %s is not there outside the sandbox: %v", socket, err)
	}
	ctx := context.Background()
	g, err := Open(ctx, Config{DataDir: t.TempDir(), Listen: "-", Socket: "-", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		DelayedCommit: -1, TriggerTick: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.SandboxProblem() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no sandbox: %v", g.SandboxProblem())
		}
		t.Skipf("no sandbox here: %v", g.SandboxProblem())
	}
	h, st := g.Broker.Provider(manifest.MustParseAppID(terminal.AppID))
	if st != broker.Working {
		t.Fatalf("the terminal is not working: %v", st)
	}
	run := func(command string) string {
		t.Helper()
		params, _ := json.Marshal(map[string]any{"command": command})
		res, err := h.Invoke(ctx, terminal.ExecuteID, params, sdk.InvocationContext{ClientID: "cl_test", CallID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Data)
	}
	if out := run("ls -la " + socket); !strings.Contains(out, `"status":"error"`) || !strings.Contains(out, "No such file") {
		t.Errorf("the sandbox sees the accessibility bus's socket: %s", out)
	}
	if out := run("env"); strings.Contains(out, "DBUS_SESSION_BUS_ADDRESS") || strings.Contains(out, "DISPLAY") {
		t.Errorf("the sandbox is told the session's buses: %s", out)
	}
}
