// Package demo is capgate's guided tour: a scripted agent session against a fresh gateway,
// each step told in plain words, so that a person can watch an agent ask, capgate decide and
// the apps act (capgate demo).
//
// The session drives the real thing: it starts `capgate serve` on a fresh data folder as a
// child process of the capgate executable, calls its IPC API through the public Go client
// (package client) as a Go agent would, and plays the person by running the CLI (client add,
// approvals approve, audit verify) as child processes too. Nothing here reaches into the
// gateway's packages: what the demo shows is what any agent and any person would see.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/capgate/capgate/internal/gateway"
)

// Options configure Run. Exe is required.
type Options struct {
	// Exe is the capgate executable the gateway and the CLI commands run from.
	Exe string
	// DataDir is the gateway's data folder. It must be empty or not exist, and so must the
	// workspace beside it (DATA-workspace, the gateway's default): the demo starts from
	// nothing, and never touches a folder that holds something. Both are left in place. ""
	// means a new temporary folder, removed at the end with its workspace unless Keep is set.
	DataDir string
	// Keep leaves the temporary data folder in place.
	Keep bool
	// Config, when set, is passed to every child as --config.
	Config string
	// Out receives the narration; nil discards it.
	Out io.Writer
}

// ErrNotFresh is the error of a DataDir that holds something.
var ErrNotFresh = errors.New("demo: the data folder must be empty or not exist")

// Report is what came of a session: every step that ran, in order, and whether all went as
// scripted. A step that fails ends the session; the steps after it are not run.
type Report struct {
	OK        bool   `json:"ok"`
	DataDir   string `json:"data_dir"`
	Kept      bool   `json:"kept"` // whether DataDir is still there
	Server    string `json:"server,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	Steps     []Step `json:"steps"`
}

// Failed returns the step that failed, or nil when none did.
func (r *Report) Failed() *Step {
	for i := range r.Steps {
		if !r.Steps[i].OK {
			return &r.Steps[i]
		}
	}
	return nil
}

// Step is one step of the session: what it showed and how it went.
type Step struct {
	N        int        `json:"step"`
	Title    string     `json:"title"`
	OK       bool       `json:"ok"`
	Error    string     `json:"error,omitempty"` // why it failed, in plain words
	Said     []string   `json:"said"`            // the narration, line by line
	Requests []Exchange `json:"requests,omitempty"`
	Commands []Command  `json:"commands,omitempty"`
}

// Exchange is one HTTP request the agent made and capgate's answer. Tokens and keys are
// never kept: the request names its token by the demo's label for it.
type Exchange struct {
	Endpoint     string          `json:"endpoint"` // "POST /v1/ipc"
	Action       string          `json:"action,omitempty"`
	App          string          `json:"app,omitempty"`
	Method       string          `json:"method,omitempty"`
	Params       json.RawMessage `json:"params,omitempty"` // a call's params, or a token request's body
	Token        string          `json:"token,omitempty"`  // the label of the token sent
	HTTPStatus   int             `json:"http_status"`
	Status       string          `json:"status"` // success or error
	ErrorCode    string          `json:"error_code,omitempty"`
	ErrorMessage string          `json:"error_message,omitempty"`
	TookMS       int64           `json:"took_ms"`
}

// Command is one capgate command the person ran.
type Command struct {
	Args     []string `json:"args"`
	ExitCode int      `json:"exit_code"`
}

// Run plays the session and reports it. It fails with an error only when it cannot start
// (ErrNotFresh, no executable, no temporary folder); a step that does not go as scripted is
// in the report. Cancelling ctx ends the session at the next request, and the gateway is
// stopped and the temporary folder removed all the same.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Exe == "" {
		return nil, errors.New("demo: no capgate executable")
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	dir, temp := o.DataDir, o.DataDir == ""
	if temp {
		var err error
		if dir, err = os.MkdirTemp("", "capgate-demo-"); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
	} else if err := fresh(dir); err != nil {
		return nil, err
	} else if err := fresh(gateway.DefaultWorkspace(dir)); err != nil {
		return nil, err
	}
	s := &session{ctx: ctx, o: o, data: dir, rep: &Report{DataDir: dir, Kept: !temp || o.Keep},
		tokens: map[string]string{}}
	fmt.Fprintln(o.Out, "capgate demo: an agent works through a fresh gateway, step by step; the demo also plays the person.")
	fmt.Fprintln(o.Out)
	ok := s.play()
	s.stopServe()
	if temp && !o.Keep {
		if err := errors.Join(os.RemoveAll(dir), os.RemoveAll(gateway.DefaultWorkspace(dir))); err != nil {
			s.rep.Kept = true
		}
	}
	s.rep.OK = ok
	if ok {
		fmt.Fprintf(o.Out, "All %d steps went as scripted.\n", len(s.rep.Steps))
	} else if f := s.rep.Failed(); f != nil {
		fmt.Fprintf(o.Out, "Step %d (%s) did not go as scripted: %s\n", f.N, f.Title, f.Error)
	}
	if s.rep.Kept {
		fmt.Fprintf(o.Out, "The data folder is kept: %s\n", dir)
	}
	return s.rep, nil
}

// fresh checks that dir is empty or does not exist.
func fresh(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %w", ErrNotFresh, err)
	case len(entries) > 0:
		return ErrNotFresh
	}
	return nil
}

// Limits of the session: how long it waits for what it started.
const (
	// serveStartWait bounds the gateway's start: opening a new store and signing the
	// built-in apps' manifests takes well under a second.
	serveStartWait = 30 * time.Second
	// serveStopWait bounds its graceful stop: it drains calls and signs a final checkpoint.
	serveStopWait = 20 * time.Second
	// pendingWait bounds the wait for a consent request to appear after the agent asked.
	pendingWait = 20 * time.Second
	// requestTimeout bounds one HTTP request, a wait for the person included.
	requestTimeout = 2 * time.Minute
)
