package conformance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/manifest"
)

// Program is a provider program to run suites against: as providers.Config starts one.
type Program struct {
	Command string // its path
	Digest  string // its content digest: a program that is not it is not run
	Dir     string // its package, its working folder
}

// HasSuites reports whether any capability of doc declares a conformance suite.
func HasSuites(doc *manifest.Document) bool {
	for _, c := range doc.Manifest().Capabilities {
		if c.ConformanceSuite != "" {
			return true
		}
	}
	return false
}

// ErrNotStarted is a provider that could not be started to run its suites against.
var ErrNotStarted = errors.New("conformance: the provider was not started")

// RunProgram starts the provider prog in box, held to doc as the gateway holds it, runs the
// suites of doc's capabilities against it (Run), and stops it. A provider that does not come
// up (its program or manifest is not the installed one, it does not complete the handshake)
// is ErrNotStarted, wrapped with why.
func RunProgram(ctx context.Context, doc *manifest.Document, prog Program, box *sandbox.Sandbox, suites *port.Registry, log *slog.Logger) ([]Result, error) {
	if box == nil {
		return nil, errors.New("conformance: no sandbox to run the provider in")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := providers.Start(providers.Config{Manifest: doc, Command: prog.Command, Digest: prog.Digest, Dir: prog.Dir,
		Env: providers.DefaultEnv, Sandbox: box, Logger: log})
	defer p.Close()
	wctx, cancel := context.WithTimeout(ctx, providers.StartTimeout+providers.MinBackoff)
	p.WaitStarted(wctx)
	cancel()
	if up, why := p.State(); !up {
		if why == nil {
			why = errors.New("it did not start in time")
		}
		return nil, fmt.Errorf("%w: %w", ErrNotStarted, why)
	}
	return Run(ctx, p.Handler(), suites, nil)
}
