package plan

import (
	"context"
	"errors"
	"fmt"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/manifest"
)

// ErrDefinition is a route asked for a reference that is no name@major.minor, or for a
// definition this host has not loaded.
var ErrDefinition = errors.New("plan: no such definition")

// Route orders the providers of the definition ref (name@major.minor) among listed (what
// broker.ListAll shows the caller): every capability that implements the definition at that
// major, working or not, as definition.Choose orders them under the host's Policy and the
// person's preference. A capability's path is the one the definition gives its app, else a
// tool server's for a tool server's app, else an API's. With no provider working, the route
// is a hand-off.
//
// The preference kept in Preferences applies while the host holds the very providers it was
// made among (preferenceFor); once one was added or removed it is ignored and the route says
// StalePreference. A preference that cannot be read within PreferenceReadTimeout, or is not
// one, is no preference: the route is the one nobody chose, by provider id within each path.
// The approval page, which reads it with RouteChoices, says what is wrong.
func (p *Planner) Route(ref string, listed []broker.Listed) (definition.Route, error) {
	def, err := p.find(ref)
	if err != nil {
		return definition.Route{}, err
	}
	cands := p.candidates(def, listed)
	ctx, cancel := context.WithTimeout(context.Background(), PreferenceReadTimeout)
	defer cancel()
	pref, stale, err := p.preferenceFor(ctx, def, cands)
	if err != nil {
		pref, stale = nil, false
	}
	r := definition.Choose(cands, p.Policy, pref)
	r.StalePreference = r.StalePreference || stale
	return r, nil
}

// find returns the loaded definition ref (name@major.minor) names: the highest minor of that
// major that is at least minor.
func (p *Planner) find(ref string) (*definition.Definition, error) {
	r, err := manifest.ParseDefinitionRef(ref)
	if err != nil {
		return nil, fmt.Errorf("%w: definition: must be name@major.minor", ErrDefinition)
	}
	def := p.Definitions.Find(r.Name(), r.Version().Major, r.Version().Minor)
	if def == nil {
		return nil, fmt.Errorf("%w: definition: must name a definition this host has loaded", ErrDefinition)
	}
	return def, nil
}
