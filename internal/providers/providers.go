// Package providers starts and supervises provider processes (installed plugins, apps that
// run out of process) and holds each to its signed declaration. A provider is a program
// built with sdk/provider; capgate starts it with a scrubbed environment, /dev/null for
// standard input and its output only as logged lines, kills it with capgate, and speaks the
// provider protocol to it (proto/capgate/provider/v1 over hashicorp/go-plugin).
//
// Nothing a provider says is believed because it says it: a provider whose GetManifest is
// not the installed manifest, byte for byte in canonical form, is not started, and says why;
// a call that reports an effect above the capability's declared side_effects fails, as does
// a dry run that reports one above read. A provider that exits is started again with
// backoff; meanwhile its capabilities are not working.
package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
	"github.com/capgate/capgate/sdk/provider"
)

// Config is one provider to run.
type Config struct {
	// Manifest is the installed manifest, the one the provider must report.
	Manifest *manifest.Document
	// Command and Args start it; Env is its whole environment (nothing of capgate's own
	// is passed on). With Digest ("sha256:..."), a program whose content differs is not
	// run, and the content checked is the content run (ProgramDigest makes it).
	Command string
	Digest  string
	Args    []string
	Env     []string
	// Dir is the provider's own folder (its package), bound read-only in its sandbox and its
	// working folder ("": none, and the working folder is /).
	Dir string
	// Sandbox confines the provider; nil runs it with capgate's own user, files and network,
	// which only --sandbox=off-unsafe allows.
	Sandbox *sandbox.Sandbox
	// Intents are the filesystem intents of the provider's capabilities, shown in its sandbox
	// at their paths under SandboxRoot ("": /sandbox), backed by the folders under AppFolder
	// (the app's own, sandbox.AppFolder), read-only unless read_write.
	Intents     []manifest.FilesystemIntent
	SandboxRoot string
	AppFolder   string
	// Limits are the provider's resource budget, set on its sandbox.
	Limits sandbox.Limits
	// Egress, when set, is the provider's network: the egress proxy, on a socket of its own
	// bound into its sandbox; each call reaches only its capability's network_intents. Nil:
	// the provider has no network.
	Egress *Egress
	// OnCredential, when set, is told of each credential a provider asked for and was
	// refused: the capability, the intent (only when it is one the capability declares: the
	// provider's other text is not passed on) and whether it was declared.
	OnCredential func(capabilityID, intent string, declared bool)
	// OnState, when set, is told each time the provider comes up (why nil) or goes down (why
	// it is not working), from the supervision's goroutine.
	OnState func(up bool, why error)
	// Events, when set, takes the events the provider emits on its own (sdk.EventSource),
	// as its app's: the host checks each (its type declared, its payload against the schema)
	// and gives it to the triggers waiting for it. Nil: the provider's events are refused.
	Events func(ctx context.Context, eventType, eventID string, payload json.RawMessage) error
	// Logger receives what the provider prints and what happens to it (nil: slog.Default()).
	Logger *slog.Logger
}

// DefaultEnv is all the environment a provider gets: a PATH to find the programs it runs, a
// locale, and GOMAXPROCS=1 for a provider written in Go (others ignore it). Nothing of
// capgate's own is passed on.
//
// GOMAXPROCS=1: each layer of a call (gRPC's reader and writer, yamux's loops, the handler)
// hands it to a goroutine of its own, and with more than one processor each hand-off wakes
// another thread; on one, a call costs about half (measured with capgate bench provider:
// 88 µs against 165 µs at the median on two cores). A provider that needs more cores for its
// own work sets runtime.GOMAXPROCS itself.
var DefaultEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "GOMAXPROCS=1"}

// The restart backoff: a provider that exits is started again after MinBackoff, doubling up
// to MaxBackoff while it keeps failing; one that ran for a minute starts over at MinBackoff.
const (
	MinBackoff = 100 * time.Millisecond
	MaxBackoff = 30 * time.Second
	// StartTimeout bounds a provider's start and handshake.
	StartTimeout = 10 * time.Second
)

// ErrOverreach is a provider stopped because a call reported an effect above what its
// capability declares (or above read in a dry run): it has shown it does not keep to its
// declaration, so it is not started again until capgate is, or its program changes.
var ErrOverreach = errors.New("the provider reported an effect above its declaration, so capgate stopped it")

// ErrManifestMismatch is a provider whose reported manifest is not the installed one.
var ErrManifestMismatch = errors.New("the provider reports a manifest other than the one installed")

// Process is one supervised provider.
type Process struct {
	cfg     Config
	log     *slog.Logger
	stop    chan struct{}
	done    chan struct{}
	started chan struct{} // closed once the first start has come up or failed
	once    sync.Once

	mu     sync.Mutex
	client *provider.Client
	pc     *plugin.Client
	run    *procRunner // the running process of pc
	// stopped, once set, is why the provider is stopped for good (ErrOverreach).
	stopped error
	// egressSocket is the socket the egress proxy is served on for it, "" for none.
	egressSocket string
	// phases keeps its calls that may write in its read_write folders apart from those
	// that may not, whose writes capgate judges (watchWrites).
	phases phaseLock
	why    error // why it is not up (nil while up, or before the first start)
	up     bool
	starts int
}

// Start starts supervising the provider cfg: it is started now and whenever it exits, until
// Close. Up says whether it is working.
func Start(cfg Config) *Process {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Process{cfg: cfg, log: cfg.Logger.With("app", cfg.Manifest.Manifest().AppID), stop: make(chan struct{}), done: make(chan struct{}),
		started: make(chan struct{})}
	go p.supervise()
	return p
}

// State says whether the provider is up, and when it is not, why (nil before its first start
// has finished).
func (p *Process) State() (up bool, why error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up, p.why
}

// WaitStarted returns once the provider's first start has come up or failed (State says
// which), or ctx is done.
func (p *Process) WaitStarted(ctx context.Context) {
	select {
	case <-p.started:
	case <-ctx.Done():
	}
}

// Starts is how many times the provider was started.
func (p *Process) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// Close stops the provider and its supervision, and returns once the process is gone.
func (p *Process) Close() error {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	return nil
}

func (p *Process) supervise() {
	defer close(p.done)
	if p.cfg.Egress != nil {
		path, stop, err := p.cfg.Egress.listen()
		if err != nil {
			p.log.Warn("the provider gets no network: its egress socket cannot be made", "err", err)
		} else {
			p.egressSocket = path
			defer stop()
		}
	}
	defer p.once.Do(func() { close(p.started) })
	backoff := MinBackoff
	for {
		began := time.Now()
		pc, err := p.start()
		if err != nil {
			p.setDown(err) // before started is closed: WaitStarted then sees why
		}
		p.once.Do(func() { close(p.started) })
		if err != nil {
			p.log.Warn("provider not started", "err", err)
			if errors.Is(err, ErrManifestMismatch) || errors.Is(err, ErrDigest) {
				// The program on disk is not what was installed: starting it again changes
				// nothing. It waits for capgate to stop it.
				<-p.stop
				return
			}
		} else {
			p.waitExit(pc)
			p.killNow(pc)
		}
		p.mu.Lock()
		stopped := p.stopped
		p.mu.Unlock()
		if stopped != nil {
			p.setDown(stopped)
			<-p.stop
			return
		}
		select {
		case <-p.stop:
			p.setDown(errors.New("stopped"))
			return
		default:
		}
		if time.Since(began) > time.Minute {
			backoff = MinBackoff
		}
		select {
		case <-p.stop:
			p.setDown(errors.New("stopped"))
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}

// waitExit returns once the provider has exited or capgate stops it.
func (p *Process) waitExit(pc *plugin.Client) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			p.killNow(pc)
			return
		case <-t.C:
			if pc.Exited() {
				p.setDown(errors.New("the provider exited"))
				p.log.Warn("provider exited; starting it again")
				return
			}
		}
	}
}

// stopFor stops the provider for good, for why: its calls fail from now on, and its
// supervision does not start it again.
func (p *Process) stopFor(why error) {
	p.mu.Lock()
	if p.stopped == nil {
		p.stopped = why
	}
	first := p.why != p.stopped
	p.up, p.client, p.why = false, nil, p.stopped
	p.mu.Unlock()
	if first && p.cfg.OnState != nil {
		p.cfg.OnState(false, p.stopped)
	}
	p.log.Warn("provider stopped", "why", why)
	p.kill()
}

// kill kills the running provider process; its supervision starts it again.
func (p *Process) kill() {
	p.mu.Lock()
	pc := p.pc
	p.mu.Unlock()
	if pc != nil {
		p.killNow(pc)
	}
}

// KillGrace bounds go-plugin's Kill, which asks the provider to shut down and waits for its
// answer without a bound of its own: a provider that never answers (or stops reading) would
// hold the call that killed it, and Close. After KillGrace its process group is killed.
const KillGrace = 2 * time.Second

// killNow kills the provider of pc, within KillGrace of asking it to stop, and a little
// more for go-plugin to notice it gone.
func (p *Process) killNow(pc *plugin.Client) {
	p.mu.Lock()
	run := p.run
	p.mu.Unlock()
	killBounded(pc, run)
}

func killBounded(pc *plugin.Client, run *procRunner) {
	done := make(chan struct{})
	go func() {
		pc.Kill()
		close(done)
	}()
	t := time.NewTimer(KillGrace)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	if run != nil {
		_ = run.Kill(context.Background())
	}
	t.Reset(KillGrace)
	select {
	case <-done:
	case <-t.C: // go-plugin's goroutine is left to end once its connection does
	}
}

func (p *Process) setDown(why error) {
	p.mu.Lock()
	if p.stopped != nil {
		why = p.stopped // stopped for good: that is why, whatever came after
	}
	was := p.up || p.why == nil || p.why.Error() != why.Error()
	p.up, p.why, p.client = false, why, nil
	p.mu.Unlock()
	select {
	case <-p.stop:
		return // stopped by capgate: no news for OnState, whose app may be gone
	default:
	}
	if was && p.cfg.OnState != nil {
		p.cfg.OnState(false, why)
	}
}

// start starts the provider once and checks its manifest.
func (p *Process) start() (*plugin.Client, error) {
	p.mu.Lock()
	p.starts++
	p.mu.Unlock()
	out := &lineLog{log: p.log, stream: "stderr"}
	var run *procRunner
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:     provider.Handshake,
		VersionedPlugins:    provider.Plugins(nil),
		SkipHostEnv:         true,
		RunnerFunc:          runnerFunc(p.log, p.cfg, p.egressSocket, func(r *procRunner) { run = r }),
		AllowedProtocols:    []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCBrokerMultiplex: true,
		GRPCDialOptions:     provider.DialOptions(),
		StartTimeout:        StartTimeout,
		Stderr:              out,
		SyncStdout:          &lineLog{log: p.log, stream: "stdout"},
		SyncStderr:          out,
		Logger:              hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}),
	})
	rpc, err := pc.Client()
	if err != nil {
		killBounded(pc, run)
		return nil, fmt.Errorf("providers: start: %w", err)
	}
	raw, err := rpc.Dispense(provider.Name)
	if err != nil {
		killBounded(pc, run)
		return nil, fmt.Errorf("providers: start: %w", err)
	}
	c := raw.(*provider.Client)
	c.ServeCredentials(p.credential)
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	got, err := c.Manifest(ctx)
	if err != nil {
		killBounded(pc, run)
		return nil, err
	}
	if err := sameManifest(got, p.cfg.Manifest); err != nil {
		killBounded(pc, run)
		return nil, err
	}
	p.mu.Lock()
	p.client, p.pc, p.run, p.up, p.why = c, pc, run, true, nil
	p.mu.Unlock()
	if p.cfg.OnState != nil {
		p.cfg.OnState(true, nil)
	}
	p.log.Info("provider up", "protocol", pc.NegotiatedVersion())
	if p.cfg.Events != nil {
		ectx, ecancel := context.WithTimeout(context.Background(), StartTimeout)
		if err := c.ServeEvents(ectx, p.cfg.Events); err != nil {
			p.log.Warn("the provider's events are not taken", "err", err)
		}
		ecancel()
	}
	return pc, nil
}

// errNoCredentials is why a declared credential intent gets no handle: handles are honoured only
// by capgate's egress proxy, and this provider has none.
const errNoCredentials = "no credential handle: this provider has no network (capgate's egress proxy, which alone honours handles, is not serving it)"

// credential decides a provider's RequestCredential: an intent the calling capability does not
// declare is refused as permission_denied; a declared one gets no handle yet (errNoCredentials).
// Both are told to OnCredential.
func (p *Process) credential(ctx context.Context, capabilityID, callID, intent string) (string, error) {
	c := p.cfg.Manifest.Manifest().Capability(capabilityID)
	declared := c != nil && slices.Contains(c.CredentialIntents, intent)
	if p.cfg.OnCredential != nil {
		named := ""
		if declared {
			named = intent
		}
		p.cfg.OnCredential(capabilityID, named, declared)
	}
	if !declared {
		p.log.Warn("a provider asked for a credential its capability does not declare", "capability", capabilityID)
		return "", sdk.PermissionDenied("the capability does not declare this credential intent in its credential_intents")
	}
	if p.cfg.Egress == nil {
		return "", sdk.PermissionDenied(errNoCredentials)
	}
	h, err := p.cfg.Egress.handle(ctx, p.cfg.Manifest.Manifest().AppID, c, callID, intent)
	if err != nil {
		// egress's errors name the rule, never the secret.
		return "", sdk.PermissionDenied("no handle for this credential intent: " + err.Error())
	}
	return h, nil
}

// sameManifest checks that the manifest the provider reports is the installed one, byte for
// byte in canonical form (RFC 8785), signature included.
func sameManifest(got []byte, installed *manifest.Document) error {
	doc, err := manifest.Parse(got)
	if err != nil {
		return fmt.Errorf("%w: it does not parse", ErrManifestMismatch)
	}
	if !bytes.Equal(doc.Raw(), installed.Raw()) {
		return ErrManifestMismatch
	}
	return nil
}

// lineLog logs what a provider writes, a line at a time.
type lineLog struct {
	log    *slog.Logger
	stream string
	mu     sync.Mutex
	buf    []byte
}

// maxLine bounds a logged line: a provider cannot fill capgate's log with one.
const maxLine = 4096

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > maxLine {
				l.emit(l.buf[:maxLine])
				l.buf = l.buf[:0]
			}
			return len(b), nil
		}
		line := l.buf[:i]
		if len(line) > maxLine {
			line = line[:maxLine]
		}
		l.emit(line)
		l.buf = l.buf[i+1:]
	}
}

// emit logs one line. A line of go-plugin's own log (hclog's JSON, which sdk/provider's side
// writes on standard error) keeps its level, so that its debug chatter stays out of capgate's
// log at the default level; any other line is logged at info.
func (l *lineLog) emit(line []byte) {
	var h struct {
		Level   string `json:"@level"`
		Message string `json:"@message"`
	}
	if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &h) == nil && h.Level != "" {
		level := slog.LevelInfo
		switch h.Level {
		case "trace", "debug":
			level = slog.LevelDebug
		case "warn":
			level = slog.LevelWarn
		case "error":
			level = slog.LevelError
		}
		l.log.Log(context.Background(), level, "provider log", "stream", l.stream, "line", h.Message)
		return
	}
	l.log.Info("provider output", "stream", l.stream, "line", string(line))
}

// Handler is the provider as the broker calls it: the installed manifest, and calls held to
// it. Its calls fail as app_unresponsive while the provider is down.
func (p *Process) Handler() sdk.Handler { return handler{p} }

type handler struct{ p *Process }

var (
	_ sdk.Handler        = handler{}
	_ sdk.ParamValidator = handler{}
	_ sdk.Undoer         = handler{}
)

func (h handler) Manifest() *manifest.Document { return h.p.cfg.Manifest }

func (h handler) client() (*provider.Client, error) {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	if !h.p.up || h.p.client == nil {
		return nil, &sdk.Error{Code: sdk.CodeAppUnresponsive, AppID: string(h.p.cfg.Manifest.Manifest().AppID)}
	}
	return h.p.client, nil
}

func (h handler) ValidateParams(id string, params json.RawMessage) error {
	c, err := h.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.ValidateParams(ctx, id, params)
}

// Invoke calls the provider and holds the call to the capability's declaration: an effect
// the provider reports above the declared side_effects, or one it does not name, fails the
// call; in a dry run, so does one above read.
func (h handler) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	c, err := h.client()
	if err != nil {
		return sdk.Result{}, err
	}
	capability := h.p.cfg.Manifest.Manifest().Capability(id)
	if capability == nil {
		return sdk.Result{}, sdk.NotFound(id)
	}
	dry := sdk.IsDryRun(ctx)
	opts := provider.InvokeOptions{DryRun: dry, Progress: func(m string, f float64) { sdk.ReportProgress(ctx, m, f) }}
	var endEgress func() error
	if e := h.p.cfg.Egress; e != nil && h.p.egressSocket != "" {
		u, end, err := e.open(h.p.cfg.Manifest.Manifest().AppID, capability, ic.CallID, dry)
		if err != nil {
			return sdk.Result{}, sdk.ExecutionFailed("the call's network could not be opened", true)
		}
		opts.EgressProxy, endEgress = u, end
	}
	watch, err := h.p.watchWrites(ctx, capability, dry)
	if err != nil {
		if endEgress != nil {
			_ = endEgress()
		}
		return sdk.Result{}, err // the call's time ended while calls that may write ran
	}
	out, err := c.InvokeWith(ctx, id, params, ic, opts)
	if broke := watch(); broke != "" {
		// Observed by capgate itself, not on the provider's word.
		h.p.stopFor(fmt.Errorf("%w: %s", ErrOverreach, broke))
		return sdk.Result{}, sdk.ExecutionFailed(broke, false)
	}
	if endEgress != nil {
		if broke := endEgress(); broke != nil {
			// Observed by capgate itself, not on the provider's word.
			h.p.stopFor(fmt.Errorf("%w: %s", ErrOverreach, broke))
			return sdk.Result{}, sdk.ExecutionFailed(broke.Error(), false)
		}
	}
	if errors.Is(err, provider.ErrIgnoredCancellation) {
		// It works on past the deadline: killed, and started again by its supervision.
		h.p.log.Warn("provider ignored a call's deadline; killing it", "capability", id)
		h.p.kill()
	}
	if err != nil {
		var se *sdk.Error
		if errors.As(err, &se) {
			return sdk.Result{}, se
		}
		return sdk.Result{}, err
	}
	for _, e := range out.Effects {
		sdk.ReportEffect(ctx, e.Effect, e.Target)
	}
	for _, e := range out.Evidence {
		sdk.EmitEvidence(ctx, e.Type, e.Body)
	}
	if err := held(capability.SideEffects, dry, out.Effects); err != nil {
		h.p.stopFor(fmt.Errorf("%w: %s", ErrOverreach, err.Reason))
		return sdk.Result{}, err
	}
	return out.Result, out.Err
}

// watchWrites starts watching the provider's read_write folders for a call of c that may not
// write there (its side_effects below write, or a dry run), once no call that may write is in
// flight (phaseLock), and returns the function that ends the watch with the rule the call
// broke, or "". A write seen while only such calls run is judged against each of them: the
// provider wrote where none of them may. It fails with ctx's error when the call's time ends
// while it waits for calls that may write to finish.
func (p *Process) watchWrites(ctx context.Context, c *manifest.Capability, dryRun bool) (func() string, error) {
	folders := writableFolders(p.cfg)
	if len(folders) == 0 {
		return func() string { return "" }, nil
	}
	if !dryRun && c.SideEffects.Rank() >= manifest.SideEffectWrite.Rank() {
		if err := p.phases.lock(ctx, writerCall); err != nil {
			return nil, err
		}
		return func() string { p.phases.unlock(writerCall); return "" }, nil
	}
	if err := p.phases.lock(ctx, judgedCall); err != nil {
		return nil, err
	}
	before := stampOf(folders)
	return func() string {
		after := stampOf(folders)
		p.phases.unlock(judgedCall)
		if !before.known || !after.known || before == after {
			return ""
		}
		if dryRun {
			return "capgate saw the provider write in its read_write folder during a dry run"
		}
		return fmt.Sprintf("capgate saw the provider write in its read_write folder during a call whose capability declares side_effects %s", c.SideEffects)
	}, nil
}

// held checks the effects a call reports against its capability's declared side effects.
func held(declared manifest.SideEffect, dryRun bool, effects []sdk.Effect) *sdk.Error {
	if msg := sdk.Unheld(declared, dryRun, effects); msg != "" {
		return sdk.ExecutionFailed(msg, false)
	}
	return nil
}

func (h handler) Undo(ctx context.Context, id, undoToken string, ic sdk.InvocationContext) error {
	c, err := h.client()
	if err != nil {
		return err
	}
	return c.Undo(ctx, id, undoToken, ic)
}
