package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// App is the Terminal app. Its methods are safe for concurrent use.
type App struct {
	doc    *manifest.Document
	root   root
	env    []string
	hist   history
	sb     *sandbox.Sandbox
	hidden []string

	mu         sync.Mutex
	closed     bool
	closing    chan struct{}      // closed by Close
	running    int                // foreground commands running
	background int                // background commands running
	sessions   map[int64]*session // background commands running, by id
	wg         sync.WaitGroup     // one per command running
}

// session is a background command.
type session struct {
	e *entry
	p *proc
}

var (
	_ sdk.Handler                = (*App)(nil)
	_ interface{ Close() error } = (*App)(nil)
)

// Options configures the terminal.
type Options struct {
	// Sandbox runs every command; required. A sandbox opened with sandbox.ModeOffUnsafe runs
	// them unconfined, with capgate's own rights: the only way to do that is to ask for it.
	Sandbox *sandbox.Sandbox
	// Hidden are files and folders no command sees even inside the root folder: the host
	// names its data folder, keys and configuration here, should the root hold them.
	Hidden []string
}

// New returns the terminal with its manifest (as loaded and signed by the host), its root
// folder (the folder commands run in by default, the top of the folders a cwd may name, the
// HOME of every command, and the only folder a command can write) and its options. root must
// exist; New fails off Linux and without a sandbox.
func New(doc *manifest.Document, root string, o Options) (*App, error) {
	if !supported {
		return nil, errors.New("terminal: commands run only on Linux")
	}
	if doc == nil {
		return nil, errors.New("terminal: no manifest")
	}
	if o.Sandbox == nil {
		return nil, errors.New("terminal: no sandbox to run commands in")
	}
	r, err := resolveRoot(root)
	if err != nil {
		return nil, err
	}
	return &App{
		doc:      doc,
		sb:       o.Sandbox,
		hidden:   o.Hidden,
		root:     r,
		env:      []string{"PATH=" + searchPath, "HOME=" + r.real, "LANG=C.UTF-8", "TERM=dumb"},
		closing:  make(chan struct{}),
		sessions: map[int64]*session{},
	}, nil
}

// Manifest implements sdk.Handler.
func (a *App) Manifest() *manifest.Document { return a.doc }

// Close kills every command still running, foreground and background, and waits for them to
// be reaped. Later calls of execute_command fail; the history stays readable. Close is safe to
// call more than once.
func (a *App) Close() error {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.closing)
	}
	a.mu.Unlock()
	a.wg.Wait()
	return nil
}

// Invoke implements sdk.Handler.
func (a *App) Invoke(ctx context.Context, id string, raw json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	var (
		data any
		err  error
	)
	switch id {
	case ExecuteID:
		data, err = a.execute(ctx, raw, ic)
	case GetCwdID:
		if err = decodeEmpty(raw); err == nil {
			data = map[string]string{"cwd": a.root.real}
		}
	case ReadOutputID:
		data, err = a.readOutput(raw, ic)
	case WriteInputID:
		data, err = a.writeInput(ctx, raw, ic)
	case HistoryID:
		data, err = a.history(raw, ic)
	default:
		return sdk.Result{}, sdk.NotFound(id)
	}
	if err != nil {
		return sdk.Result{}, err
	}
	b, err := json.Marshal(data)
	if err != nil {
		return sdk.Result{}, sdk.ExecutionFailed("the result could not be encoded", false)
	}
	return sdk.Result{Success: true, Data: b}, nil
}

// execResult is execute_command's answer.
type execResult struct {
	Status     string  `json:"status"`
	ID         int64   `json:"id"`
	ExitCode   *int    `json:"exit_code,omitempty"`
	Stdout     *string `json:"stdout,omitempty"`
	Stderr     *string `json:"stderr,omitempty"`
	DurationMS *int64  `json:"duration_ms,omitempty"`
	Truncated  *bool   `json:"truncated,omitempty"`
}

// commandProblem reads a SplitCommand error as the command's problem: its text names the rule,
// never the command.
func commandProblem(err error) error {
	return sdk.InvalidParams(manifest.Problems{{Path: "command", Rule: strings.TrimPrefix(err.Error(), "command: ")}})
}

func (a *App) execute(ctx context.Context, raw json.RawMessage, ic sdk.InvocationContext) (any, error) {
	p, err := decodeExec(raw)
	if err != nil {
		return nil, err
	}
	// The one parser: the words the token's command constraints checked are the words run.
	argv, err := token.SplitCommand(p.Command)
	if err != nil {
		return nil, commandProblem(err)
	}
	dir, err := resolveDir(a.root, p.Cwd)
	if err != nil {
		return nil, err
	}
	path, err := lookPath(argv[0], dir)
	if err != nil {
		return nil, err
	}
	// The program must be one the sandbox can see: the system's, or one in the root.
	if real, err := filepath.EvalSymlinks(path); err != nil || !a.sb.Sees(real, []string{a.root.real}) {
		return nil, notVisible
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err, 0)
	}
	release, err := a.reserve(p.Background)
	if err != nil {
		return nil, err
	}
	spec := sandbox.Spec{Program: path, Args: argv, Dir: dir, Env: a.env, Writable: []string{a.root.real}, Hidden: a.hidden}
	pr, err := start(a.sb, spec, p.CaptureOutput, p.HasStdin || p.Background)
	if err != nil {
		release()
		return nil, sdk.ExecutionFailed("the command could not be started", false)
	}
	// A revocation of the grant the command runs under ends it, in the foreground and in the
	// background alike.
	var revoked <-chan struct{}
	stopWatch := func() {}
	if ic.WatchRevocation != nil {
		revoked, stopWatch = ic.WatchRevocation()
	}
	e := &entry{client: ic.ClientID, command: p.Command, background: p.Background, started: pr.started,
		status: statusRunning, stdout: pr.stdout, stderr: pr.stderr, kept: p.CaptureOutput}
	id := a.hist.add(e)
	timer := time.NewTimer(p.Timeout)

	if p.Background {
		if p.HasStdin {
			// Taken here, so the first input goes before any write_input's.
			pr.lockInput(time.Time{})
			go func() {
				defer pr.unlockInput()
				_, _ = pr.writeLocked([]byte(p.Stdin), time.Time{}, false)
			}()
		}
		a.mu.Lock()
		a.sessions[id] = &session{e: e, p: pr}
		a.mu.Unlock()
		go func() {
			defer release()
			defer timer.Stop()
			defer stopWatch()
			status := ""
			select {
			case <-pr.exited:
			case <-timer.C:
				status = statusTimeout
			case <-a.closing:
				status = statusCancelled
			case <-revoked:
				status = statusCancelled
			}
			a.end(e, pr, status)
			a.mu.Lock()
			delete(a.sessions, id)
			a.mu.Unlock()
		}()
		return execResult{Status: statusRunning, ID: id}, nil
	}

	defer release()
	defer timer.Stop()
	defer stopWatch()
	if p.HasStdin {
		go func() { _, _ = pr.write([]byte(p.Stdin), time.Time{}, true) }()
	}
	status := ""
	var ctxErr error
	wasRevoked := false
	select {
	case <-pr.exited:
	case <-timer.C:
		status = statusTimeout
	case <-revoked:
		status, wasRevoked = statusCancelled, true
	case <-ctx.Done():
		ctxErr = ctx.Err()
		status = statusCancelled
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			status = statusTimeout
		}
	case <-a.closing:
		status = statusCancelled
	}
	code, dur, status := a.end(e, pr, status)
	switch {
	case status == statusTimeout:
		return nil, sdk.Timeout(ExecuteID, dur.Milliseconds())
	case status == statusCancelled && ctxErr != nil:
		return nil, ctxError(ctxErr, dur.Milliseconds())
	case status == statusCancelled && wasRevoked:
		return nil, sdk.ExecutionFailed("the grant the command ran under was revoked", false)
	case status == statusCancelled:
		return nil, sdk.ExecutionFailed("the terminal closed before the command finished", true)
	}
	v := e.output()
	ms := dur.Milliseconds()
	return execResult{Status: status, ID: id, ExitCode: &code, Stdout: v.Stdout, Stderr: v.Stderr, DurationMS: &ms, Truncated: v.Truncated}, nil
}

// end ends a command that exited or is to be stopped (status timeout or cancelled) and records
// how it ended. A command that exited before it was stopped counts as exited. It answers the
// exit code, the time it ran and its status.
func (a *App) end(e *entry, pr *proc, status string) (int, time.Duration, string) {
	if status != "" {
		select {
		case <-pr.exited:
			status = "" // it finished on its own, just in time
		default:
		}
	}
	st, dur := pr.finish()
	code := -1
	if st != nil {
		code = exitCode(st)
	}
	if status == "" {
		status = statusError
		if code == 0 {
			status = statusSuccess
		}
	}
	var c *int
	if status == statusSuccess || status == statusError {
		c = &code
	}
	a.hist.finish(e, status, c, dur)
	return code, dur, status
}

// ctxError reads the end of the call's context as the call's error.
func ctxError(err error, elapsedMS int64) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return sdk.Timeout(ExecuteID, elapsedMS)
	}
	return sdk.ExecutionFailed("the call was cancelled", true)
}

// reserve takes a slot for a foreground or background command, or fails when all are taken
// or the app is closed. release gives it back.
func (a *App) reserve(background bool) (release func(), err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.closed:
		return nil, sdk.ExecutionFailed("the terminal is closed", false)
	case background && a.background >= MaxSessions:
		return nil, sdk.ExecutionFailed("too many background commands are running", true)
	case !background && a.running >= MaxRunning:
		return nil, sdk.ExecutionFailed("too many commands are running", true)
	}
	n := &a.running
	if background {
		n = &a.background
	}
	*n++
	a.wg.Add(1)
	return func() {
		a.mu.Lock()
		*n--
		a.mu.Unlock()
		a.wg.Done()
	}, nil
}

// lookup returns the caller's entry id (its latest when id is 0), from the history or, for a
// background command that has left it, from the running sessions.
func (a *App) lookup(client string, id int64) *entry {
	if e := a.hist.get(client, id); e != nil {
		return e
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[id]; s != nil && s.e.client == client {
		return s.e
	}
	return nil
}

func (a *App) readOutput(raw json.RawMessage, ic sdk.InvocationContext) (any, error) {
	id, err := decodeID(raw)
	if err != nil {
		return nil, err
	}
	e := a.lookup(ic.ClientID, id)
	if e == nil {
		return nil, sdk.InvalidParams(manifest.Problems{{Path: "id", Rule: "not a command of this caller in the history"}})
	}
	return e.output(), nil
}

func (a *App) writeInput(ctx context.Context, raw json.RawMessage, ic sdk.InvocationContext) (any, error) {
	p, err := decodeInput(raw)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	s := a.sessions[p.ID]
	a.mu.Unlock()
	if s == nil || s.e.client != ic.ClientID {
		return nil, sdk.InvalidParams(manifest.Problems{{Path: "id", Rule: "not a running background command of this caller"}})
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err, 0)
	}
	begin := time.Now()
	deadline := begin.Add(InputWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	n, err := s.p.write([]byte(p.Input), deadline, p.Close)
	switch {
	case errors.Is(err, errInputClosed):
		return nil, sdk.InvalidParams(manifest.Problems{{Path: "id", Rule: "the command's input is closed"}})
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, sdk.Timeout(WriteInputID, time.Since(begin).Milliseconds())
	case err != nil:
		return nil, sdk.ExecutionFailed("the command no longer reads its input", false)
	}
	return map[string]any{"id": p.ID, "bytes_written": n, "closed": p.Close}, nil
}

func (a *App) history(raw json.RawMessage, ic sdk.InvocationContext) (any, error) {
	count, offset, err := decodeHistory(raw)
	if err != nil {
		return nil, err
	}
	es, total := a.hist.list(ic.ClientID, count, offset)
	lines := make([]view, 0, len(es))
	for _, e := range es {
		lines = append(lines, e.summary())
	}
	return map[string]any{"entries": lines, "total": total}, nil
}
