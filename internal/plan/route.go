package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/manifest"
)

// ErrDefinition is a route asked for a reference that is no name@major.minor, or for a
// definition this host has not loaded.
var ErrDefinition = errors.New("plan: no such definition")

// Route orders the providers of the definition ref (name@major.minor) among listed (what
// broker.ListAll shows the caller): every capability that implements the definition at that
// major, working or not, as definition.Choose orders them under the host's Policy. A capability's path is the one the
// definition gives its app, else a tool server's for a tool server's app, else an API's. With
// no provider working, the route is a hand-off.
func (p *Planner) Route(ref string, listed []broker.Listed) (definition.Route, error) {
	r, err := manifest.ParseDefinitionRef(ref)
	if err != nil {
		return definition.Route{}, fmt.Errorf("%w: %s is not name@major.minor", ErrDefinition, ref)
	}
	def := p.Definitions.Find(r.Name(), r.Version().Major, r.Version().Minor)
	if def == nil {
		return definition.Route{}, fmt.Errorf("%w: %s is not loaded", ErrDefinition, ref)
	}
	paths := map[string]definition.Path{}
	for _, pr := range def.Providers {
		if _, ok := paths[pr.ID]; !ok {
			paths[pr.ID] = pr.Path
		}
	}
	var cands []definition.Candidate
	for _, l := range listed {
		impl, err := manifest.ParseDefinitionRef(l.Cap.Implements)
		if err != nil || impl.Name() != def.Name || impl.Version().Major != def.Version.Major {
			continue
		}
		app := l.App.ID.String()
		path, ok := paths[app]
		switch {
		case ok:
		case strings.HasPrefix(app, toolserver.AppPrefix):
			path = definition.PathToolServer
		default:
			path = definition.PathAPI
		}
		cands = append(cands, definition.Candidate{Provider: app, Capability: l.ID.String(), Path: path, Working: l.Working, Why: l.Why})
	}
	return definition.Choose(cands, p.Policy, nil), nil
}
