package python

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// AppID is the app's reverse-DNS id; Alias the name agents use.
const (
	AppID = "org.capgate.python"
	Alias = "python"
)

// The capability ids.
const (
	ExecuteScriptID = "python.org.capgate.python.execute_script"
	ExecuteFileID   = "python.org.capgate.python.execute_file"
	ReadOutputID    = "python.org.capgate.python.read_output"
)

// outcome is one execution as the agent sees it: the data of execute_script and
// execute_file, and what read_output answers.
type outcome struct {
	Status     string  `json:"status"`
	Output     string  `json:"output"`
	Truncated  bool    `json:"truncated"`
	Error      *string `json:"error"`
	DurationMS int64   `json:"duration_ms"`
	Steps      uint64  `json:"steps"`
}

// App is the Python Interpreter app. Its zero value is not usable; New makes one. It is safe
// for concurrent use.
type App struct {
	doc     *manifest.Document
	box     *box
	scripts *scripts // nil: execute_file is refused

	mu   sync.Mutex
	last map[string]kept // by client
	seq  uint64
}

// kept is the last execution of one client.
type kept struct {
	outcome outcome
	seq     uint64 // for forgetting the oldest
}

// Options configures the app.
type Options struct {
	// Sandbox runs every script's process; required. A sandbox opened with
	// sandbox.ModeOffUnsafe runs them unconfined, with capgate's own rights.
	Sandbox *sandbox.Sandbox
}

// New returns the app with its manifest (as loaded and signed by the host), the folder
// execute_file reads scripts from, and its options. An empty scriptsDir refuses every
// execute_file; a folder that cannot be opened is an error. The folder is opened once:
// renaming it later does not redirect the app. Close releases it.
func New(doc *manifest.Document, scriptsDir string, o Options) (*App, error) {
	if o.Sandbox == nil {
		return nil, errors.New("python: no sandbox to run scripts in")
	}
	box, err := newBox(o.Sandbox)
	if err != nil {
		return nil, err
	}
	a := &App{doc: doc, box: box, last: map[string]kept{}}
	if scriptsDir != "" {
		if a.scripts, err = openScripts(scriptsDir); err != nil {
			box.close()
			return nil, err
		}
	}
	return a, nil
}

// Close releases the scripts folder and the running binary's file. Calls after Close fail.
func (a *App) Close() error {
	err := a.box.close()
	if a.scripts != nil {
		err = errors.Join(err, a.scripts.root.Close())
	}
	return err
}

// Manifest implements sdk.Handler.
func (a *App) Manifest() *manifest.Document { return a.doc }

type params struct {
	Code    *string `json:"code"`
	Path    *string `json:"path"`
	Timeout *int64  `json:"timeout"`
}

// timeout reads the timeout param in milliseconds: DefaultTimeout when absent.
func (p params) timeout() (time.Duration, error) {
	if p.Timeout == nil {
		return DefaultTimeout, nil
	}
	d := time.Duration(*p.Timeout) * time.Millisecond
	if *p.Timeout < 1 || d > MaxTimeout {
		return 0, sdk.InvalidParams(manifest.Problems{{Path: "timeout", Rule: "must be an integer from 1 to 60000 (milliseconds)"}})
	}
	return d, nil
}

// Invoke implements sdk.Handler. A script that fails is a result with status "error", not a
// Go error; a script that runs out of time is sdk.Timeout.
func (a *App) Invoke(ctx context.Context, id string, raw json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
	var p params
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Rule: "params must be an object"}})
	}
	switch id {
	case ExecuteScriptID:
		if p.Code == nil {
			return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Path: "code", Rule: "required"}})
		}
		if len(*p.Code) > MaxSourceBytes {
			return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Path: "code", Rule: "longer than 256 KiB"}})
		}
		return a.execute(ctx, id, ic, p, "<script>", []byte(*p.Code))
	case ExecuteFileID:
		if p.Path == nil {
			return sdk.Result{}, sdk.InvalidParams(manifest.Problems{{Path: "path", Rule: "required"}})
		}
		if a.scripts == nil {
			return sdk.Result{}, sdk.PermissionDenied("execute_file: no scripts folder is configured")
		}
		if _, err := p.timeout(); err != nil {
			return sdk.Result{}, err
		}
		name, src, err := a.scripts.read(*p.Path)
		if err != nil {
			return sdk.Result{}, err
		}
		return a.execute(ctx, id, ic, p, name, src)
	case ReadOutputID:
		a.mu.Lock()
		k, ok := a.last[ic.ClientID]
		a.mu.Unlock()
		o := k.outcome
		if !ok {
			o = outcome{Status: statusNone}
		}
		data, _ := json.Marshal(o)
		return sdk.Result{Success: true, Data: data}, nil
	}
	return sdk.Result{}, sdk.NotFound(id)
}

func (a *App) execute(ctx context.Context, id string, ic sdk.InvocationContext, p params, name string, src []byte) (sdk.Result, error) {
	timeout, err := p.timeout()
	if err != nil {
		return sdk.Result{}, err
	}
	o, err := a.box.run(ctx, id, name, src, timeout)
	if o.Status != "" {
		a.keep(ic.ClientID, o)
	}
	if err != nil {
		return sdk.Result{}, err
	}
	data, _ := json.Marshal(o)
	return sdk.Result{Success: true, Data: data}, nil
}

// keep records o as the client's last execution, forgetting the oldest client's beyond
// MaxKeptOutputs. Each client reads its own: one agent never sees what another's script
// printed.
func (a *App) keep(client string, o outcome) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	a.last[client] = kept{outcome: o, seq: a.seq}
	for len(a.last) > MaxKeptOutputs {
		oldest, first := "", true
		for c, k := range a.last {
			if first || k.seq < a.last[oldest].seq {
				oldest, first = c, false
			}
		}
		delete(a.last, oldest)
	}
}

var _ sdk.Handler = (*App)(nil)
