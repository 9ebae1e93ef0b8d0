// Package gateway assembles capgate's gateway from its parts (store, registry, tokens, consent,
// audit, broker, IPC API) and runs it: `capgate serve`. It owns the data folder's layout and the
// gateway's own key, and shuts down gracefully: it stops accepting, drains calls in flight and
// signs a final audit checkpoint.
package gateway

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/capgate/capgate/internal/a2a"
	"github.com/capgate/capgate/internal/apps/python"
	"github.com/capgate/capgate/internal/apps/syslog"
	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/egress"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/mcp"
	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/plan"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/internal/trigger"
	"github.com/capgate/capgate/internal/web"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// The data folder's files.
const (
	DBFile     = "capgate.db"
	KeyFile    = "capgate.key"  // the gateway's own Ed25519 seed: signs tokens and checkpoints
	AuditFile  = "audit.jsonl"  // the audit log's JSON-lines mirror
	HeadFile   = "audit.head"   // the audit log's head and latest checkpoint, kept beside the store
	SocketFile = "capgate.sock" // the unix socket, when no other path is given
)

// Config of a gateway. The zero Config (with DataDir set) serves on 127.0.0.1:7766 and the
// data folder's socket.
type Config struct {
	DataDir string
	// Store names the store (ParseStore): "" is SQLite in DataDir/capgate.db; a postgres://
	// URL lets several replicas share one PostgreSQL database.
	Store      string
	Listen     string // TCP address; "" means DefaultListen; "-" disables TCP
	Socket     string // unix socket path; "" means DataDir/capgate.sock; "-" disables it
	TrustedDir string // trusted app keys
	// DefinitionsDir is the folder of signed definitions (capabilities by meaning); ""
	// means DataDir/definitions. A capability that implements one of them is held to it at
	// registration (definition.CheckImplements). DefinitionsRoot is the root of the host's
	// own definition names ("" for definition.Root).
	DefinitionsDir, DefinitionsRoot string
	// ProviderPolicy is the host's rule on the providers of a definition (the signed host
	// policy's providers): the route of a definition never takes what it denies.
	ProviderPolicy definition.Policy
	Handlers       map[string]sdk.Handler
	Logger         *slog.Logger
	// UIHosts are the host names (and addresses) besides loopback under which the approval
	// page answers, for a gateway reached through a name of its own; every other Host header
	// is refused (DNS rebinding).
	UIHosts []string
	// Workspace is the folder the files, editor, terminal and python apps work in: every path
	// they take is confined to it. "" means the folder beside DataDir named after it with
	// "-workspace" (DefaultWorkspace), created on first use. It may neither lie in DataDir nor
	// hold it: the apps would reach capgate's keys and store.
	Workspace string
	// Sandbox says how the terminal's commands and python's scripts run: sandbox.ModeOn (the
	// zero value) confines each in a sandbox of its own, and leaves those two apps out where
	// one cannot be made; sandbox.ModeOffUnsafe runs them with capgate's own rights.
	Sandbox sandbox.Mode
	// Hidden are more files and folders no sandboxed program sees (the configuration file);
	// DataDir is always hidden.
	Hidden []string

	// ConsentTTL is how long a consent request waits for the person before it expires as
	// denied (0: consent.DefaultTTL).
	ConsentTTL time.Duration
	// ConsentWait is how long a call or a token request waits for the answer before it
	// returns CONSENT_REQUIRED with the request's id (0: the broker's default, 2 minutes).
	ConsentWait time.Duration
	// DelayedCommit is the window in which an allowed irreversible call can be cancelled
	// (0: the broker's default, 3 s; negative: none).
	DelayedCommit time.Duration
	// ToolServerRelist is how often each tool server's tools are listed again and checked
	// against their pins, beside its list-changed notifications (0: toolserver.DefaultRelist).
	ToolServerRelist time.Duration
	// RequireToken requires a token (or the person's consent for the call) for every call of
	// every client, as `capgate client add --require-token` does for one: a low-risk read
	// then runs without a token only when it is public.
	RequireToken bool
	// TimeoutCeiling, when positive, caps every call's effective timeout (the signed host
	// policy's timeout_ceiling_ms).
	TimeoutCeiling time.Duration
	// AllowPrivate are the private destinations the signed host policy lets providers reach
	// through the egress proxy; nothing else private or special is ever reachable.
	AllowPrivate []netip.Prefix
	// Credentials are the credential catalog's entries capgate honours: handles for them are
	// minted for a provider's calls, their secrets injected by the egress proxy.
	Credentials []egress.Credential
	// Resolver resolves the egress proxy's destinations (nil: the system's DNS servers).
	Resolver egress.Resolver
	// BudgetCeiling caps each provider's resource budget, by key (the signed host policy's
	// budget_ceiling).
	BudgetCeiling map[string]int64
	// SandboxRoot is where filesystem intents lie ("": /sandbox); each app's are backed by
	// its own folder of the data folder (sandbox.AppFolder).
	SandboxRoot string
	// AuditWitness names a witness that receives every audit checkpoint the gateway signs
	// (AuditWitnesses): an absolute folder outside the data folder, or an http(s) URL.
	AuditWitness string
	// PortsDir is the host's ports folder (the configuration's ports_dir): the signed
	// definitions of its plugin ports, in its definitions subfolder, are loaded beside
	// DefinitionsDir's. "" for none.
	PortsDir string
	// Suites is the host's kit index (the ports folder's conformance suites), which the
	// scheduled evaluations run against the running providers (Gateway.Evaluate); nil: none
	// run here, and the test records made at install still hold.
	Suites *port.Registry
	// EvaluationInterval is how often the suites run (0: DefaultEvaluationInterval;
	// negative: never on a schedule).
	EvaluationInterval time.Duration
	// TriggerTick is how often the trigger engine takes a step (0: trigger.DefaultTick;
	// negative: never on its own, for tests that step it with their own clock).
	TriggerTick time.Duration
	// TriggerMaxLifetime bounds a trigger's end date from its proposal (0:
	// trigger.DefaultMaxLifetime).
	TriggerMaxLifetime time.Duration
	// TriggerNow is the trigger engine's clock (nil: time.Now), for tests.
	TriggerNow func() time.Time
	// DesktopRecheck is how often each desktop app in use is walked again and held against
	// the shape it was added with (0: DefaultDesktopRecheck).
	DesktopRecheck time.Duration
}

// DefaultListen is loopback only: the gateway is not exposed to the network by default.
const DefaultListen = "127.0.0.1:7766"

// DrainTimeout bounds a graceful stop: calls in flight get this long to finish (the longest
// terminal command runs five minutes; a stop should not wait that long for an agent).
const DrainTimeout = 30 * time.Second

// LockPollInterval is how often the gateway looks whether the lockfile changed (a plugin
// installed, upgraded or removed from the command line): an installed plugin starts within
// about this long.
const LockPollInterval = 500 * time.Millisecond

// Gateway is an open gateway.
type Gateway struct {
	cfg      Config
	Store    store.Store
	Registry *registry.Registry
	// Definitions are the signed definitions of Config.DefinitionsDir, loaded at start.
	Definitions *definition.Set
	// Planner retrieves the candidates of a task (POST /v1/plan/candidates, MCP's
	// capgate__find_capabilities).
	Planner *plan.Planner
	Broker  *broker.Broker
	Consent *consent.Service
	Audit   *audit.Writer
	// Triggers proposes, fires and changes the triggers ("when X happens, do Y").
	Triggers *trigger.Engine
	// Operator makes the person's and the operator's changes outside a call: the approval
	// page and the operator socket (DATA/operator.sock, package opsock) ask it.
	Operator *operator.Service
	Key      ed25519.PrivateKey
	log      *slog.Logger
	metrics  *metrics

	workspace  string // the built-in apps' workspace, absolute
	sandbox    *sandbox.Sandbox
	sandboxErr error        // why there is no sandbox, in ModeOn
	ring       *syslog.Ring // capgate's own log, which the syslog app reads
	closers    []io.Closer  // built-in apps that hold processes or open folders
	tools      *toolserver.Manager
	procs      *procs        // the provider processes of the apps that run out of process
	desktops   *desktops     // the desktop apps, run through their accessibility interfaces
	web        *web.Server   // the approval page, /ui/
	toolsKick  chan struct{} // a registry reload asks the tool-server connections to sync
	// providersKick asks followProviders to sync; providersMu runs one sync at a time.
	providersKick chan struct{}
	providersMu   sync.Mutex
	notStarted    map[string]bool // built-in apps whose handler could not start

	// life ends when Close begins; every goroutine the gateway starts (the sweep and the
	// store watch under Serve, the tool-server sync) watches it and is counted in running,
	// which Close waits for, so that none outlives Close.
	life    context.Context
	endLife context.CancelFunc
	lifeMu  sync.Mutex // guards closing and running's Add against Close's Wait
	closing bool
	running sync.WaitGroup

	appStateOps atomic.Int64 // AppStateOps

	// streams ends the long-lived streams a client holds open with nothing in flight (MCP's
	// GET stream) when the server shuts down, so that a drain waits for calls, not for them.
	streams    context.Context
	endStreams context.CancelFunc

	unlockServe func() // releases the SQLite store's serve lock (Serve takes it, Close releases it)
}

// errClosed is Serve's error on a gateway that Close has begun to close.
var errClosed = errors.New("gateway: closed")

// errServed is Serve's error when another capgate serves the same SQLite store.
var errServed = errors.New("another capgate serve holds this SQLite store (it may still be draining its calls): wait for it to stop, or run several replicas on PostgreSQL")

// Workspace returns the folder the built-in files, editor, terminal and python apps work in.
func (g *Gateway) Workspace() string { return g.workspace }

// Open opens (creating on first use) the data folder, the store and the gateway's key, and
// assembles the parts.
func Open(ctx context.Context, cfg Config) (*Gateway, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("gateway: no data folder")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("gateway: data folder: %w", err)
	}
	witnesses, err := AuditWitnesses(cfg.DataDir, cfg.AuditWitness)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	key, err := LoadOrCreateKey(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	st, err := OpenStore(ctx, cfg.DataDir, cfg.Store, true)
	if err != nil {
		return nil, fmt.Errorf("gateway: store: %w", err)
	}
	if err := pinIdentity(ctx, st, "gateway key", key.Public().(ed25519.PublicKey), filepath.Join(cfg.DataDir, KeyFile)); err != nil {
		st.Close()
		return nil, err
	}
	g := &Gateway{cfg: cfg, Store: st, Key: key, toolsKick: make(chan struct{}, 1), providersKick: make(chan struct{}, 1), procs: &procs{}}
	g.life, g.endLife = context.WithCancel(context.Background())
	g.streams, g.endStreams = context.WithCancel(context.Background())
	// capgate's own log goes where the operator sent it and into the ring the syslog app reads.
	g.ring = syslog.NewRing(0)
	g.log = slog.New(g.ring.Handler(cfg.Logger.Handler()))
	if g.workspace, err = workspace(cfg); err != nil {
		st.Close()
		return nil, err
	}
	if old := filepath.Join(cfg.DataDir, WorkspaceDir); cfg.Workspace == "" {
		if fi, err := os.Stat(old); err == nil && fi.IsDir() {
			g.log.Warn("the workspace inside the data folder is no longer used: move its files to the new workspace", "old", old, "workspace", g.workspace)
		}
	}
	g.sandbox, g.sandboxErr = sandbox.Open(ctx, cfg.Sandbox)
	if g.sandboxErr != nil {
		g.procs.refuse = fmt.Errorf("provider processes run only in a sandbox, and none can be made here: %w", g.sandboxErr)
	}
	g.procs.box, g.procs.dataDir, g.procs.sandboxRoot, g.procs.ceiling = g.sandbox, cfg.DataDir, cfg.SandboxRoot, cfg.BudgetCeiling
	g.procs.events = g.appEvents
	if g.procs.egress, err = g.openEgress(cfg); err != nil {
		st.Close()
		return nil, err
	}
	switch {
	case g.sandboxErr != nil:
		g.log.Warn("the terminal and python apps and provider processes are not served: they run only in a sandbox, and none can be made here", "err", g.sandboxErr)
	case !g.sandbox.Enforcing():
		g.log.Warn("the sandbox is off (--sandbox=off-unsafe): the terminal's commands, python's scripts and provider processes run with capgate's own user, files and network")
	}
	if g.Registry, err = registry.New(ctx, st, AppKeys(cfg.DataDir, cfg.TrustedDir)); err != nil {
		st.Close()
		return nil, fmt.Errorf("gateway: registry: %w", err)
	}
	g.Definitions = g.loadDefinitions(cfg)
	g.Planner = &plan.Planner{Registry: g.Registry, Definitions: g.Definitions, Policy: cfg.ProviderPolicy, Preferences: st}
	defs := g.Definitions
	g.Registry.SetCheck(func(m *manifest.Manifest) manifest.Problems { return definition.CheckImplements(m, defs) })
	builtins, err := g.registerBuiltins(ctx, st)
	if err != nil {
		g.closeApps()
		st.Close()
		return nil, err
	}
	for id := range cfg.Handlers {
		delete(g.notStarted, id) // the caller's handler serves it
	}
	handlers := map[string]sdk.Handler{}
	for id, h := range builtins {
		handlers[id] = h
	}
	for id, h := range cfg.Handlers {
		handlers[id] = h
	}
	g.Audit = audit.NewWriter(st, &audit.Options{CheckpointKey: key, CheckpointEvery: 1000, CheckpointInterval: time.Minute,
		MirrorPath: filepath.Join(cfg.DataDir, AuditFile), HeadPath: filepath.Join(cfg.DataDir, HeadFile), Witnesses: witnesses, Logger: g.log})
	g.Consent = consent.New(st, &consent.Options{Surface: true, TTL: cfg.ConsentTTL})
	g.metrics = newMetrics(st)
	g.desktops = &desktops{st: st, reg: g.Registry, log: g.log, audit: g.Audit, every: cfg.DesktopRecheck}
	g.tools = toolserver.NewManager(toolserver.Options{Env: toolserver.Env{Store: st, Registry: g.Registry, DataDir: cfg.DataDir, Version: "capgate", Sandbox: g.childSandbox(), Network: g.network()},
		Audit: g.Audit, Logger: g.log, Relist: cfg.ToolServerRelist})
	g.Broker, err = broker.New(broker.Options{Store: st, Registry: g.Registry, Tokens: token.NewVerifier(key.Public().(ed25519.PublicKey), 4096),
		Audit: g.Audit, Consent: g.Consent, Handlers: handlers, TokenKey: key, Meter: g.metrics,
		ConsentWait: cfg.ConsentWait, DelayedCommit: cfg.DelayedCommit, PathDir: g.workspace, TimeoutCeiling: cfg.TimeoutCeiling,
		AlsoNeeds: map[string][]string{python.ExecuteFileID: {"fs.read"}}, Providers: providers{notStarted: g.notStarted, tools: g.tools, procs: g.procs, desktops: g.desktops},
		RequireToken: cfg.RequireToken})
	if err != nil {
		g.Close()
		return nil, err
	}
	tsEnv := &toolserver.Env{Store: st, Registry: g.Registry, DataDir: cfg.DataDir, Version: "capgate", Sandbox: g.childSandbox(), Network: g.network()}
	// The lockfile in the data folder, as capgate plugin uses it. Approving re-diffs the
	// pending widening against the lock; it verifies no signature, so no trust is needed.
	plugins := &plugin.Host{DataDir: cfg.DataDir}
	g.Operator = &operator.Service{Audit: g.Audit, Consent: g.Consent, Tokens: g.Broker, Mandates: g.Broker, Clients: st, Programs: st,
		Registry: g.Registry, ToolServers: tsEnv, Plugins: plugins,
		Warn: func(action string, err error) { g.log.Warn("an operator's change", "action", action, "err", err) }}
	g.Triggers = trigger.New(trigger.Options{Store: st, Broker: g.Broker, Registry: g.Registry, Consent: g.Consent, Audit: g.Audit,
		MaxLifetime: cfg.TriggerMaxLifetime, Tick: cfg.TriggerTick, Go: g.spawn, Now: cfg.TriggerNow, Logger: g.log})
	g.web = web.New(web.Options{Triggers: g.Triggers, Consent: g.Consent, Store: st, Broker: g.Broker, Registry: g.Registry, PublicKey: key.Public().(ed25519.PublicKey), Logger: g.log, AuditHeadFile: filepath.Join(cfg.DataDir, HeadFile),
		Audit:        g.Audit,
		Operator:     g.Operator,
		Planner:      g.Planner,
		AllowedHosts: cfg.UIHosts,
		ToolServers:  tsEnv,
		Plugins:      plugins})
	if _, err := g.Broker.Sync(ctx); err != nil {
		g.Close()
		return nil, err
	}
	// The installed plugins and the apps that run out of process are started; each is up
	// once its manifest checks.
	g.syncProviders(ctx)
	// The registered tool servers are connected and their tools checked against their pins
	// before the gateway serves; one that cannot be reached is retried in the background.
	if err := g.tools.Sync(ctx); err != nil {
		g.Close()
		return nil, fmt.Errorf("gateway: tool servers: %w", err)
	}
	g.loadEvaluations(ctx)
	if cfg.TriggerTick >= 0 {
		g.spawn(g.Triggers.Run)
	}
	g.followLogErrors()
	g.spawn(g.followFileChanges)
	g.spawn(g.desktops.recheck)
	g.spawn(g.followTools)
	g.spawn(g.followProviders)
	g.spawn(g.followEvaluations)
	return g, nil
}

// spawn runs fn on a goroutine of the gateway's: fn gets the gateway's life, must return
// once it ends, and Close waits until it has. After Close has begun, spawn runs nothing.
func (g *Gateway) spawn(fn func(ctx context.Context)) bool {
	g.lifeMu.Lock()
	defer g.lifeMu.Unlock()
	if g.closing {
		return false
	}
	g.running.Add(1)
	go func() {
		defer g.running.Done()
		fn(g.life)
	}()
	return true
}

// providers is the broker's Providers: the built-in apps whose handler could not start,
// which are not working, and the tool servers, working while their session is up (and not
// before this gateway has connected one). The
// working built-in apps and Config.Handlers are the broker's Handlers.
type providers struct {
	notStarted map[string]bool // fixed at Open: read without a lock
	tools      *toolserver.Manager
	procs      *procs
	desktops   *desktops
}

var _ broker.Providers = providers{}

// Provider and TrustedRead look the ids up as text: the built-in apps' ids are constants of
// their packages, and the tool server manager keys its servers by their app id's text.
func (p providers) Provider(id manifest.AppID) (sdk.Handler, broker.State) {
	appID := id.String()
	if p.notStarted[appID] {
		return nil, broker.NotWorking
	}
	if h, up, ok := p.procs.provider(appID); ok {
		if !up {
			return nil, broker.NotWorking
		}
		return h, broker.Working
	}
	if h, up, ok := p.desktops.provider(appID); ok {
		if !up {
			return nil, broker.NotWorking
		}
		return h, broker.Working
	}
	h, up, ok := p.tools.Provider(appID)
	switch {
	case !ok:
		if _, ts := toolserver.NameOf(appID); ts {
			// A tool server registered (by capgate toolserver add, or another replica)
			// that this gateway has not connected yet.
			return nil, broker.NotWorking
		}
		return nil, broker.NoProvider
	case !up:
		return nil, broker.NotWorking
	}
	return h, broker.Working
}

func (p providers) TrustedRead(appID manifest.AppID, capabilityID manifest.CapabilityID) bool {
	return p.tools.OperatorRead(appID.String(), capabilityID.String())
}

// DefaultWorkspace is the workspace of a gateway with the data folder dataDir when none is
// given: the folder beside it with its name and "-workspace" ($XDG_DATA_HOME/capgate-workspace
// for the default data folder). It lies outside the data folder, which holds capgate's keys.
func DefaultWorkspace(dataDir string) string {
	clean := filepath.Clean(dataDir)
	return filepath.Join(filepath.Dir(clean), filepath.Base(clean)+"-workspace")
}

// ErrWorkspaceOverlaps is what Open wraps when the workspace lies in the data folder or holds
// it.
var ErrWorkspaceOverlaps = errors.New("the workspace must neither lie in the data folder nor hold it: the apps that work in it would reach capgate's keys and store")

// workspace returns the built-in apps' workspace, absolute and resolved through links,
// creating the default one (mode 0700) on first use. A workspace that lies in the data folder
// or holds it is refused.
func workspace(cfg Config) (string, error) {
	dir := cfg.Workspace
	if dir == "" {
		dir = DefaultWorkspace(cfg.DataDir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("gateway: workspace: %w", err)
		}
	}
	abs, err := resolved(dir)
	if err != nil {
		return "", fmt.Errorf("gateway: workspace: %w", err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("gateway: workspace %s: not a folder", abs)
	}
	data, err := resolved(cfg.DataDir)
	if err != nil {
		return "", fmt.Errorf("gateway: data folder: %w", err)
	}
	if inside(abs, data) || inside(data, abs) {
		return "", fmt.Errorf("gateway: workspace %s: %w (data folder %s; give another with --workspace)", abs, ErrWorkspaceOverlaps, data)
	}
	return abs, nil
}

// resolved is p made absolute and resolved through its symbolic links.
func resolved(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// inside reports whether p is dir or lies under it; both are clean and absolute.
func inside(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// hidden are the paths no sandboxed program sees: the data folder (keys, store, socket,
// audit mirror) and what the configuration names.
func (g *Gateway) hidden() []string {
	out := []string{}
	for _, p := range append([]string{g.cfg.DataDir}, g.cfg.Hidden...) {
		if r, err := resolved(p); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// childSandbox is the sandbox the gateway's children run in: nil when none can be made here,
// which refuses them.
func (g *Gateway) childSandbox() *sandbox.Sandbox {
	if g.sandboxErr != nil {
		return nil
	}
	return g.sandbox
}

// network is the stdio tool servers' network: the egress proxy (nil: none).
func (g *Gateway) network() toolserver.Network {
	if g.procs.egress == nil {
		return nil
	}
	return g.procs.egress
}

// ProcessLimit says how a sandbox's process budget is held here (a pids cgroup, RLIMIT_NPROC),
// or, with false, why none can be: a provider whose resource_budget names processes is then
// refused.
func (g *Gateway) ProcessLimit() (string, bool) {
	if g.sandbox == nil {
		return "no sandbox", false
	}
	return g.sandbox.ProcessLimit()
}

// SandboxProblem says why the terminal and python apps are not served: nil when they run in
// a sandbox (or, with ModeOffUnsafe, without one).
func (g *Gateway) SandboxProblem() error { return g.sandboxErr }

// closeApps stops the built-in apps that hold processes or open folders.
func (g *Gateway) closeApps() {
	if g.procs != nil {
		g.procs.close()
		if g.procs.egress != nil {
			g.procs.egress.Proxy.Close()
		}
	}
	for _, c := range g.closers {
		if err := c.Close(); err != nil {
			g.log.Warn("closing a built-in app", "err", err)
		}
	}
	g.closers = nil
}

// LoadOrCreateKey reads the gateway's key from the data folder, creating it on first use.
func LoadOrCreateKey(dataDir string) (ed25519.PrivateKey, error) {
	return loadOrCreate(filepath.Join(dataDir, KeyFile))
}

func loadOrCreate(path string) (ed25519.PrivateKey, error) {
	k, err := keys.LoadPrivateKey(path)
	if err == nil {
		return k, nil
	}
	if _, statErr := os.Lstat(path); statErr == nil {
		// It exists: either it is broken (the error says how) or another replica sharing
		// this data folder made it since the load above; load it once more to tell.
		if k, err = keys.LoadPrivateKey(path); err == nil {
			return k, nil
		}
		return nil, fmt.Errorf("gateway: %w", err)
	}
	k, err = keys.Generate()
	if err != nil {
		return nil, err
	}
	if err := keys.WritePrivateKey(path, k, false); err != nil {
		if errors.Is(err, keys.ErrExists) {
			// Another replica sharing this data folder made it first: use theirs.
			return keys.LoadPrivateKey(path)
		}
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return k, nil
}

// PublicKey is the gateway's public key: verifies its tokens and audit checkpoints.
func (g *Gateway) PublicKey() ed25519.PublicKey { return g.Key.Public().(ed25519.PublicKey) }

// Handler is the HTTP API, with MCP (streamable HTTP) at /mcp, the A2A agent at /a2a and
// its card at /.well-known/agent-card.json, Prometheus metrics at /metrics and the approval
// page at /ui/.
func (g *Gateway) Handler() http.Handler {
	s := &ipc.Server{Broker: g.Broker, Clients: g.Store, Tokens: g.Store, Audit: g.Audit, Registry: g.Registry, Definitions: g.Definitions, Planner: g.Planner, Triggers: g.Triggers, Logger: g.log}
	mux := http.NewServeMux()
	mux.Handle("/", s.Handler())
	mux.Handle("/mcp", g.endsAtShutdown(mcp.NewHandler(mcp.Options{Broker: g.Broker, Registry: g.Registry, Holdings: g.Store, Audit: g.Audit, Authenticate: s.Authenticate, Logger: g.log, Definitions: g.Definitions, Planner: g.Planner, Triggers: g.Triggers})))
	// The A2A front opens only when it passes its gate (a2a.SelfTest); else it answers 503.
	agent, err := a2a.Gate(context.Background(), a2a.NewHandler(a2a.Options{Broker: g.Broker, Registry: g.Registry, Authenticate: s.Authenticate, State: g.Store, Go: g.spawn, Logger: g.log}))
	if err != nil {
		g.log.Error("the A2A endpoint is not served: it failed its self-test", "err", err)
	}
	mux.Handle(a2a.Path, agent)
	mux.Handle("GET "+a2a.CardPath, agent)
	mux.Handle("GET /metrics", g.web.CheckHost(metricsAccess(s, promhttp.HandlerFor(g.metrics.reg, promhttp.HandlerOpts{}))))
	mux.Handle("/ui/", g.web.Handler())
	return mux
}

// metricsAccess lets the metrics be read from the machine itself (a loopback peer, or the
// unix socket) without a key, and from anywhere else only with a client key: they say how
// many calls of which outcome went through, which is nobody else's business.
func metricsAccess(s *ipc.Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackPeer(r) {
			if _, ok := s.Authenticate(r); !ok || r.Header.Get("Authorization") == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="capgate"`)
				http.Error(w, "the metrics need a client key from beyond this machine", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackPeer reports whether r came from this machine: a loopback address, or the unix
// socket (whose peers have no IP address).
func loopbackPeer(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr == "" || r.RemoteAddr == "@" || strings.HasPrefix(r.RemoteAddr, "/")
	}
	return ap.Addr().Unmap().IsLoopback()
}

// endsAtShutdown ends h's GET requests, MCP's server-to-client streams, when the server shuts
// down: they carry no call, and a graceful stop waits only for calls.
func (g *Gateway) endsAtShutdown(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(g.streams, cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// LoginLink returns the path of a new one-time login link to the approval page,
// "/ui/login?t=SECRET" (web.Server.LoginLink): print it only where the person alone reads it.
func (g *Gateway) LoginLink() string { return g.web.LoginLink() }

// Serve listens as configured and serves until ctx is done or Close begins, then shuts down
// gracefully: it stops accepting, drains the calls in flight and returns once the sweep and
// the store watch it ran have ended. ready is called with the addresses once listening.
func (g *Gateway) Serve(ctx context.Context, ready func(tcp, socket string)) error {
	// A Close that comes while serving ends the serve and waits for its drain.
	g.lifeMu.Lock()
	if g.closing {
		g.lifeMu.Unlock()
		return errClosed
	}
	g.running.Add(1)
	g.lifeMu.Unlock()
	defer g.running.Done()
	// One serve at a time on a SQLite store, from before it listens until its drain and final
	// checkpoint are done (Close): a second one started while the first drains would write
	// the same log. Replicas share a PostgreSQL store instead.
	if kind, where, err := ParseStore(g.cfg.DataDir, g.cfg.Store); err == nil && kind == SQLite && g.unlockServe == nil {
		unlock, err := lockFile(where + ".serve.lock")
		if errors.Is(err, errSocketInUse) {
			return fmt.Errorf("gateway: %s: %w", where, errServed)
		}
		if err != nil {
			return err
		}
		g.unlockServe = unlock
	}
	h := g.Handler()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ConnContext: ipc.ConnContext}
	srv.RegisterOnShutdown(g.endStreams)
	var lns []net.Listener
	tcpAddr, sockPath := "", ""
	if g.cfg.Listen != "-" {
		addr := g.cfg.Listen
		if addr == "" {
			addr = DefaultListen
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("gateway: listen %s: %w", addr, err)
		}
		lns = append(lns, ln)
		tcpAddr = ln.Addr().String()
	}
	if g.cfg.Socket != "-" {
		sockPath = g.cfg.Socket
		if sockPath == "" {
			sockPath = filepath.Join(g.cfg.DataDir, SocketFile)
		}
		ln, err := listenSocket(sockPath, g.cfg.Socket != "")
		switch {
		case errors.Is(err, errSocketInUse):
			// Another replica sharing this data folder serves the default socket: this
			// one serves TCP alone rather than take it over.
			g.log.Warn("the data folder's socket is served by another capgate; serving TCP only", "socket", sockPath)
			sockPath = ""
		case err != nil:
			for _, l := range lns {
				l.Close()
			}
			return err
		default:
			lns = append(lns, ln)
		}
	}
	if len(lns) == 0 {
		return errors.New("gateway: nothing to listen on (--listen - and no socket)")
	}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- srv.Serve(ln) }()
	}
	// The sweep and the store watch end with Serve (or with the gateway, if Close comes
	// first), and Serve returns only once they have.
	sweepCtx, stopSweep := context.WithCancel(g.life)
	var swept sync.WaitGroup
	kick := make(chan struct{}, 1)
	during := func(fn func(context.Context)) {
		swept.Add(1)
		if !g.spawn(func(context.Context) { defer swept.Done(); fn(sweepCtx) }) {
			swept.Done()
		}
	}
	if w, ok := g.Store.(store.Watcher); ok {
		during(func(ctx context.Context) { g.watch(ctx, w, kick) })
	}
	during(func(ctx context.Context) { g.sweep(ctx, kick) })
	opPath := g.serveOperator(during)
	g.log.Info("[OK] capgate serving", "tcp", tcpAddr, "socket", sockPath, "operator", opPath, "data", g.cfg.DataDir, "workspace", g.workspace)
	if ready != nil {
		ready(tcpAddr, sockPath)
	}
	var err error
	select {
	case <-ctx.Done():
	case <-g.life.Done(): // Close began
	case err = <-errc:
	}
	stopSweep()
	swept.Wait()
	g.log.Info("capgate stopping: draining calls in flight")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), DrainTimeout)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil {
		_ = srv.Close()
		if err == nil && errors.Is(serr, context.DeadlineExceeded) {
			err = fmt.Errorf("gateway: calls still in flight after %s were cut off", DrainTimeout)
		} else if err == nil {
			err = serr
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// errSocketInUse: another process owns the socket path.
var errSocketInUse = errors.New("socket in use")

// listenSocket listens on the unix socket at path, once this process owns it (ownSocket): a
// socket file left by a crash is replaced, one another live process owns is errSocketInUse
// when it is the data folder's default (explicit false), and an error naming it when it was
// asked for explicitly.
func listenSocket(path string, explicit bool) (net.Listener, error) {
	release, err := ownSocket(path)
	if errors.Is(err, errSocketInUse) && explicit {
		return nil, fmt.Errorf("gateway: socket %s: another capgate is serving it", path)
	}
	if err != nil {
		return nil, err
	}
	_ = os.Remove(path) // a socket left by a crash
	ln, err := net.Listen("unix", path)
	if err != nil {
		release()
		return nil, fmt.Errorf("gateway: socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		ln.Close()
		release()
		return nil, fmt.Errorf("gateway: socket %s: %w", path, err)
	}
	return &ownedListener{Listener: ln, release: release}, nil
}

// ownedListener releases the socket's ownership when it is closed, after the listener has
// removed the socket file (a unix listener from net.Listen unlinks its path on Close): a
// replica that takes the socket over next never has its new socket file removed by this one.
type ownedListener struct {
	net.Listener
	release func()
	once    sync.Once
}

func (l *ownedListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(l.release)
	return err
}

// sweep keeps the gateway in step with its store: every broker.SyncInterval it compares the
// store's revision and, when another process revoked a token or changed a mandate, a client
// or an app, drops the broker's caches and reloads the registry (so that apps registered by
// capgate app register or another replica are seen within a fraction of a second), and at
// once when kick says the store notified such a change; every second it expires unanswered
// consent requests.
func (g *Gateway) sweep(ctx context.Context, kick <-chan struct{}) {
	t := time.NewTicker(broker.SyncInterval)
	defer t.Stop()
	lastSweep := time.Time{}
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return
		case now = <-t.C:
		case <-kick:
			now = time.Now()
		}
		rev, err := g.Broker.Sync(ctx)
		if err != nil && ctx.Err() == nil {
			g.log.Warn("store revision check failed", "err", err)
		}
		if err == nil {
			if reloaded, err := g.Registry.ReloadAt(ctx, rev); err != nil && ctx.Err() == nil {
				g.log.Warn("registry reload failed", "err", err)
			} else if reloaded {
				g.kickTools()
				g.kickProviders()
			}
		}
		if now.Sub(lastSweep) >= time.Second {
			lastSweep = now
			if _, err := g.Consent.Sweep(ctx); err != nil && ctx.Err() == nil {
				g.log.Warn("consent sweep failed", "err", err)
			}
		}
	}
}

// watch listens to a store that tells of other processes' changes as they happen
// (PostgreSQL's notifications): a revision wakes the sweep at once, so that caches drop
// and the registry reloads without waiting for the next tick, and a consent change wakes the
// calls waiting for an answer given through another replica. The polls stay, for
// notifications lost while a connection was down.
func (g *Gateway) watch(ctx context.Context, w store.Watcher, kick chan<- struct{}) {
	err := w.Watch(ctx, func(topic string) {
		switch topic {
		case store.TopicRevision:
			select {
			case kick <- struct{}{}:
			default: // a sync is already due
			}
		case store.TopicConsent:
			g.Consent.Changed()
		}
	})
	if err != nil && ctx.Err() == nil {
		g.log.Warn("store notifications stopped; changes by other replicas are seen at the next poll", "err", err)
	}
}

// kickTools asks followTools for a tool-server sync without waiting for it: a sync already
// asked for stands for this one too.
func (g *Gateway) kickTools() {
	select {
	case g.toolsKick <- struct{}{}:
	default:
	}
}

// followTools starts, restarts and stops tool-server connections after a registry reload
// (capgate toolserver add, accept or remove elsewhere: kickTools) and has them read the pins
// again after the person accepted a tool on the approval page (web.Server.ToolsChanged), so
// that they see it now rather than at their next listing. It runs on a goroutine of its own
// from Open to Close, one sync at a time, so that neither the sweep nor the page waits on a
// server's handshake; what comes in during a sync is one more sync after it.
func (g *Gateway) followTools(ctx context.Context) {
	changed := g.web.ToolsChanged()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.toolsKick:
		case <-changed:
		}
		if err := g.tools.Sync(ctx); err != nil && ctx.Err() == nil {
			g.log.Warn("tool server sync failed", "err", err)
		}
	}
}

// Close ends Serve if it is serving and waits for its drain, waits for the gateway's
// goroutines (the sweep, the store watch, the tool-server sync) to end, stops the built-in
// apps and the tool servers (waiting for their goroutines too), flushes the audit log, signs
// a final checkpoint and closes the store. Nothing the gateway started runs once it returns.
func (g *Gateway) Close() error {
	g.lifeMu.Lock()
	g.closing = true
	g.lifeMu.Unlock()
	if g.endLife != nil {
		g.endLife()
	}
	g.running.Wait()
	var errs []error
	g.closeApps()
	if g.Planner != nil {
		errs = append(errs, g.Planner.Close())
	}
	if g.tools != nil {
		errs = append(errs, g.tools.Close())
	}
	if g.Audit != nil {
		errs = append(errs, g.Audit.Close())
	}
	if g.Store != nil {
		errs = append(errs, g.Store.Close())
	}
	if g.unlockServe != nil {
		g.unlockServe()
		g.unlockServe = nil
	}
	return errors.Join(errs...)
}
