package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/store"
)

// The evaluation gate. Only tested, working capabilities take calls and reach planning: a
// capability whose last conformance run failed is not working right now (broker
// SetFailedEvaluations), as one whose provider is down. The runs are the host's own: at
// install (capgate plugin install and the approval page run the suites before the plugin is
// kept, conformance.Save) and on a schedule here, every Config.EvaluationInterval, against
// each running provider whose manifest names suites, with the host's kit index
// (Config.Suites). What a provider says of its own tests is never read.
//
// The failed set is read again from the stored records after every provider sync (a plugin
// installed or upgraded elsewhere), after every scheduled run, and every evaluationReload,
// so that a run made by the command line (capgate plugin test) reaches the running gateway.
// A record of another manifest than the one registered (Record.Current) says nothing of it:
// its capabilities are as untested ones, which a changed manifest's pin holds back anyway.

// DefaultEvaluationInterval is how often the suites run against the running providers when
// Config.EvaluationInterval is zero.
const DefaultEvaluationInterval = 6 * time.Hour

const (
	// evaluationReload is how often the stored test records are read again for runs made
	// elsewhere: a few reads of the state table, one per app that names suites.
	evaluationReload = 10 * time.Second
	// evaluationPoll is how often the registry's version is looked at: an app registered
	// is held to its record within it.
	evaluationPoll = 250 * time.Millisecond
)

// loadEvaluations reads the stored test record of every registered app whose manifest names
// suites and tells the broker which capabilities failed their last run. An app whose record
// cannot be read keeps what the broker knew of it (the read is retried at the next reload),
// so that a store that blinks never lets a failed capability back in.
func (g *Gateway) loadEvaluations(ctx context.Context) {
	failed := map[string]string{}
	for _, app := range g.Registry.List() {
		doc := app.Doc
		if !conformance.HasSuites(doc) {
			continue
		}
		rec, err := conformance.Load(ctx, g.Store, doc.Manifest().AppID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			g.log.Warn("an app's test record cannot be read: its capabilities keep their last status", "app", app.ID.String(), "err", err)
			for _, c := range doc.Manifest().Capabilities {
				if why, was := g.Broker.EvaluationFailed(c.ParsedID()); was {
					failed[c.ID] = why
				}
			}
			continue
		case !rec.Current(doc):
			continue
		}
		for _, res := range rec.Results {
			if res.Status.Failed() {
				failed[res.Capability] = evaluationWhy(res)
			}
		}
	}
	g.Broker.SetFailedEvaluations(failed)
}

// evaluationWhy says why a result failed, in the host's words: the case and the rule.
func evaluationWhy(res conformance.Result) string {
	why := string(res.Status)
	if res.Case != "" {
		why += " at case " + res.Case
	}
	if res.Reason != "" {
		why += ": " + res.Reason
	}
	return why
}

// Evaluate runs the suites of every enabled app whose manifest names suites and whose
// provider takes calls, against that provider, and saves the results as its test status.
// Without a kit index (Config.Suites) nothing runs: every suite would be unknown, which is
// the host's lack, not the provider's failure. It runs on its schedule (followEvaluations);
// call it to run the suites now.
func (g *Gateway) Evaluate(ctx context.Context) {
	if g.cfg.Suites == nil {
		return
	}
	for _, app := range g.Registry.List() {
		if !app.Enabled || !conformance.HasSuites(app.Doc) {
			continue
		}
		h, state := g.Broker.Provider(app.ID)
		if state != broker.Working {
			continue // not working already; its next run waits for it to come up
		}
		results, err := conformance.Run(ctx, h, g.cfg.Suites, nil)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			g.log.Warn("an app's conformance suites could not run", "app", app.ID.String(), "err", err)
			continue
		}
		if err := conformance.Save(ctx, g.Store, h.Manifest(), results); err != nil {
			g.log.Warn("an app's test status cannot be saved", "app", app.ID.String(), "err", err)
			continue
		}
		for _, res := range results {
			if res.Status.Failed() {
				g.log.Warn("a capability failed its conformance suite: it is not working right now", "capability", res.Capability, "why", evaluationWhy(res))
			}
		}
	}
	g.loadEvaluations(ctx)
}

// followEvaluations runs the suites on their schedule, and reads the stored records again
// whenever the registry changes (an app registered, here or by another process, brings its
// record from install) and every evaluationReload, from Open to Close.
func (g *Gateway) followEvaluations(ctx context.Context) {
	every := g.cfg.EvaluationInterval
	if every == 0 {
		every = DefaultEvaluationInterval
	}
	tick := time.NewTicker(evaluationPoll)
	defer tick.Stop()
	var run <-chan time.Time
	if every > 0 && g.cfg.Suites != nil {
		t := time.NewTicker(every)
		defer t.Stop()
		run = t.C
	}
	seen, last := g.Registry.Version(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if v := g.Registry.Version(); v != seen || time.Since(last) >= evaluationReload {
				seen, last = v, time.Now()
				g.loadEvaluations(ctx)
			}
		case <-run:
			g.Evaluate(ctx)
		}
	}
}
