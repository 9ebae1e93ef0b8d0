package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/operator"
	supervised "github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// procs are the provider processes of the apps registered to run out of process (capgate app
// register --command): started at Open and when one is registered through the operator
// socket, each held to its registered manifest, stopped at Close.
type procs struct {
	// box is the sandbox each provider runs in (one of its own per process).
	box *sandbox.Sandbox
	// egress is the providers' network: the egress proxy.
	egress *supervised.Egress
	// dataDir holds each app's own folders for its filesystem intents (sandbox.AppFolder);
	// sandboxRoot is where the intents lie ("": /sandbox).
	dataDir, sandboxRoot string
	// ceiling caps each resource budget (the host policy's budget_ceiling), by key.
	ceiling map[string]int64
	// refuse, when set, is why no provider process is started: no sandbox can be made here,
	// and providers run unconfined only where the operator chose --sandbox=off-unsafe. Their
	// apps are registered and not working.
	refuse error
	// events, when set, takes the events of each app's provider, as that app's
	// (Gateway.appEvents).
	events func(appID string) func(ctx context.Context, eventType, eventID string, payload json.RawMessage) error
	mu     sync.Mutex
	byApp  map[string]*proc
	closed bool
}

type proc struct {
	prog supervised.Program
	p    *supervised.Process // nil when refused
}

// sync starts the provider of every registered app with a program that has none running,
// restarts one whose program changed, and stops one whose app or program is gone.
//
// A provider refused at its start (its program or its manifest is not the one registered) is
// recorded in log, a refusal of the app, with why.
func (ps *procs) sync(ctx context.Context, st supervised.Store, reg *registry.Registry, log *slog.Logger, rec operator.Recorder) error {
	progs, err := supervised.ListPrograms(ctx, st)
	if err != nil {
		return err
	}
	started := map[string]*supervised.Process{}
	defer func() {
		// Each new provider is up, or has said why not, before the sync returns: a call right
		// after finds it working.
		for id, p := range started {
			p.WaitStarted(ctx)
			if _, why := p.State(); errors.Is(why, supervised.ErrManifestMismatch) || errors.Is(why, supervised.ErrDigest) {
				refused(ctx, rec, log, id, why)
			}
		}
	}()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return nil
	}
	if ps.byApp == nil {
		ps.byApp = map[string]*proc{}
	}
	for id, cur := range ps.byApp {
		if prog, ok := progs[id]; !ok || !sameProgram(prog, cur.prog) {
			if cur.p != nil {
				cur.p.Close()
			}
			delete(ps.byApp, id)
		}
	}
	for id, prog := range progs {
		if _, ok := ps.byApp[id]; ok {
			continue
		}
		app, ok := reg.App(id)
		if !ok || app.Doc == nil {
			continue
		}
		if ps.refuse != nil {
			ps.byApp[id] = &proc{prog: prog}
			refused(ctx, rec, log, id, ps.refuse)
			saveStatus(st, id, log, false, ps.refuse)
			continue
		}
		intents, limits, err := sandboxOf(app.Doc, ps.ceiling)
		if err != nil {
			ps.byApp[id] = &proc{prog: prog}
			refused(ctx, rec, log, id, err)
			saveStatus(st, id, log, false, err)
			continue
		}
		var events func(ctx context.Context, eventType, eventID string, payload json.RawMessage) error
		if ps.events != nil {
			events = ps.events(id)
		}
		p := supervised.Start(supervised.Config{Manifest: app.Doc, Command: prog.Command, Args: prog.Args, Events: events,
			Intents: intents, SandboxRoot: ps.sandboxRoot, AppFolder: sandbox.AppFolder(ps.dataDir, app.ID), Limits: limits,
			Digest: prog.Digest, Dir: prog.Dir, Env: supervised.DefaultEnv, Sandbox: ps.box, Egress: ps.egress, Logger: log,
			OnState: statusTo(st, rec, id, log), OnCredential: credentialTo(rec, id, log)})
		ps.byApp[id] = &proc{prog: prog, p: p}
		started[id] = p
	}
	return nil
}

// refused records in rec that the provider of the app id was not started, and why.
func refused(ctx context.Context, rec operator.Recorder, log *slog.Logger, id string, why error) {
	log.Warn("provider not started", "app", id, "why", why)
	if rec == nil {
		return
	}
	r := audit.Record{Kind: audit.KindDecision, Decision: audit.DecisionDeny, Action: "provider.start", App: id, ClientID: "capgate",
		Code: "EXECUTION_FAILED", Result: "not started", Explanation: "capgate did not start the app's program: " + why.Error()}
	if _, err := rec.Append(ctx, r); err != nil {
		log.Warn("the refusal of a provider could not be recorded", "app", id, "err", err)
	}
}

// credentialTo is a provider's OnCredential: each credential refused is recorded in rec, a
// denied credential.request of the capability.
func credentialTo(rec operator.Recorder, id string, log *slog.Logger) func(string, string, bool) {
	return func(capabilityID, intent string, declared bool) {
		r := audit.Record{Kind: audit.KindDecision, Decision: audit.DecisionDeny, Action: "credential.request", App: id, Capability: capabilityID,
			ClientID: "capgate", Code: "PERMISSION_DENIED", Result: "refused",
			Explanation: "the provider asked for a credential intent its capability does not declare"}
		if declared {
			r.Explanation = "the provider asked for the credential intent " + intent + ": credential handles are not issued yet (no egress proxy)"
		}
		if rec == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
		defer cancel()
		if _, err := rec.Append(ctx, r); err != nil {
			log.Warn("a refused credential request could not be recorded", "app", id, "err", err)
		}
	}
}

// budgetKeys are the resource_budget keys capgate enforces on a provider's sandbox.
var budgetKeys = map[string]func(*sandbox.Limits, int64){
	"memory_bytes": func(l *sandbox.Limits, n int64) { l.MemoryBytes = max(l.MemoryBytes, n) },
	"cpu_seconds":  func(l *sandbox.Limits, n int64) { l.CPUSeconds = max(l.CPUSeconds, n) },
	"processes":    func(l *sandbox.Limits, n int64) { l.Processes = max(l.Processes, n) },
	"open_files":   func(l *sandbox.Limits, n int64) { l.OpenFiles = max(l.OpenFiles, n) },
}

// sandboxOf is what a provider's sandbox shows and bounds: the filesystem intents of all its
// capabilities (one process serves them all), and the largest resource_budget each asks of a
// kind, under the host policy's ceiling of that kind. A budget key capgate cannot enforce
// refuses the start: what cannot be held is not run.
func sandboxOf(doc *manifest.Document, ceiling map[string]int64) ([]manifest.FilesystemIntent, sandbox.Limits, error) {
	var intents []manifest.FilesystemIntent
	var limits sandbox.Limits
	for i, c := range doc.Manifest().Capabilities {
		intents = append(intents, c.FilesystemIntents...)
		for k, n := range c.ResourceBudget {
			set, ok := budgetKeys[k]
			if !ok {
				return nil, limits, fmt.Errorf("capabilities[%d].resource_budget.%s: capgate enforces memory_bytes, cpu_seconds, processes and open_files only", i, k)
			}
			if c, ok := ceiling[k]; ok && c > 0 && n > c {
				n = c
			}
			set(&limits, n)
		}
	}
	return intents, limits, nil
}

// statusTo is a provider's OnState: its status recorded in st for the command line and the
// approval page, and a provider stopped for overreaching its declaration recorded in rec.
func statusTo(st supervised.Store, rec operator.Recorder, id string, log *slog.Logger) func(bool, error) {
	return func(up bool, why error) {
		saveStatus(st, id, log, up, why)
		if errors.Is(why, supervised.ErrOverreach) && rec != nil {
			ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
			defer cancel()
			r := audit.Record{Kind: audit.KindDecision, Decision: audit.DecisionDeny, Action: "provider.stop", App: id, ClientID: "capgate",
				Code: "EXECUTION_FAILED", Result: "stopped", Explanation: "capgate stopped the app's program: " + why.Error()}
			if _, err := rec.Append(ctx, r); err != nil {
				log.Warn("the stop of a provider could not be recorded", "app", id, "err", err)
			}
		}
	}
}

func saveStatus(st supervised.Store, id string, log *slog.Logger, up bool, why error) {
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	s := supervised.Status{Working: up, At: time.Now().UTC()}
	if why != nil {
		s.Why = why.Error()
	}
	if err := supervised.SaveStatus(ctx, st, id, s); err != nil {
		log.Debug("a provider's status could not be recorded", "app", id, "err", err)
	}
}

// statusTimeout bounds the write of a provider's status: it is for people, and never holds
// up a provider's supervision.
const statusTimeout = 5 * time.Second

func sameProgram(a, b supervised.Program) bool {
	return a.Command == b.Command && a.Digest == b.Digest && a.Dir == b.Dir && slices.Equal(a.Args, b.Args)
}

// provider is the handler of the app id's provider process and whether it is up; ok is false
// for an app with none.
func (ps *procs) provider(id string) (h sdk.Handler, up, ok bool) {
	ps.mu.Lock()
	cur := ps.byApp[id]
	ps.mu.Unlock()
	if cur == nil {
		return nil, false, false
	}
	if cur.p == nil {
		return nil, false, true
	}
	isUp, _ := cur.p.State()
	return cur.p.Handler(), isUp, true
}

// close stops every provider process and waits for them to be gone.
func (ps *procs) close() {
	ps.mu.Lock()
	ps.closed = true
	all := ps.byApp
	ps.byApp = nil
	ps.mu.Unlock()
	for _, cur := range all {
		if cur.p != nil {
			cur.p.Close()
		}
	}
}
