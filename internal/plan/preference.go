package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
	"github.com/capgate/capgate/manifest"
)

// preferencesApp is the app id the person's preferences are kept under in store.State, one
// key per definition (PreferenceKey), each value a definition.Preference in strict JSON.
const preferencesApp = "capgate.preferences"

// Errors of the preferences, which callers test with errors.Is.
var (
	// ErrNoPreferences is a preference saved or removed through a Planner that keeps none
	// (Preferences nil).
	ErrNoPreferences = errors.New("plan: this host keeps no preferences")
	// ErrProvidersChanged is a preference made among another set of providers than the
	// definition has now: one was added or removed since the person saw them.
	ErrProvidersChanged = errors.New("plan: the providers changed since the preference was made")
	// ErrNotCandidate is a preference for a provider that is not one of the definition's.
	ErrNotCandidate = errors.New("plan: not a provider of the definition")
	// ErrStoredPreference is a kept value that is not a preference's strict JSON.
	ErrStoredPreference = errors.New("plan: the kept preference is not one")
)

// PreferenceKey is the key def's preference is kept under: its name@major, since a minor
// version only adds, and a reference to any minor of a major is routed among the same
// providers (Set.Find takes the highest).
func PreferenceKey(def *definition.Definition) string {
	return def.Name + "@" + strconv.FormatUint(uint64(def.Version.Major), 10)
}

// Choice is one definition's providers as the person chooses among them on the approval page.
type Choice struct {
	// Definition is the highest minor loaded of the major; Key is PreferenceKey of it.
	Definition *definition.Definition
	Key        string
	// Candidates are every provider the host holds of the definition (hostCandidates), by
	// provider and capability id, each working or not as the listing given says.
	Candidates []definition.Candidate
	// Set is CandidateSet(Candidates): a preference made now is made among it.
	Set string
	// Route is the order the Candidates would be tried in under the host's policy and the
	// kept preference.
	Route definition.Route
	// Preference is the preference as kept, nil for none; it is stale (Route says so) when
	// its Set is not Set.
	Preference *definition.Preference
}

// RouteChoices returns what the person chooses among for the definition ref
// (name@major.minor; any minor of a major names the same preference): every provider the
// host holds of it, each working or not as listed (broker.ListAll for the widest trust) says,
// and not working, with why, when listed leaves it out; their set, their route, and the kept
// preference. Unlike Route, it says when the kept preference cannot be read, since here the
// person can be told: the Choice is then as if none were kept, beside the error, so that the
// person can still choose anew.
func (p *Planner) RouteChoices(ctx context.Context, ref string, listed []broker.Listed) (Choice, error) {
	def, err := p.find(ref)
	if err != nil {
		return Choice{}, err
	}
	seen := map[string]definition.Candidate{}
	for _, c := range p.candidates(def, listed) {
		seen[c.Capability] = c
	}
	host := p.hostCandidates(def)
	for i, c := range host {
		if l, ok := seen[c.Capability]; ok {
			host[i].Working, host[i].Why = l.Working, l.Why
		} else {
			host[i].Why = "no client's trust reaches it"
		}
	}
	ch := Choice{Definition: def, Key: PreferenceKey(def), Candidates: host, Set: definition.CandidateSet(host)}
	kept, err := p.loadPreference(ctx, def)
	switch {
	case err == nil:
		ch.Preference = &kept
	case errors.Is(err, errNoPreference):
		err = nil
	}
	ch.Route = definition.Choose(host, p.Policy, ch.Preference)
	return ch, err
}

// LoadPreference returns the person's preference kept for the definition ref
// (name@major.minor; any minor of a major names the same preference), whatever set of
// providers it was made among: an error wrapping store.ErrNotFound when none is kept, or
// when the Planner keeps none; ErrStoredPreference when the kept value is not one.
func (p *Planner) LoadPreference(ctx context.Context, ref string) (definition.Preference, error) {
	def, err := p.find(ref)
	if err != nil {
		return definition.Preference{}, err
	}
	return p.loadPreference(ctx, def)
}

// SavePreference keeps pref as the person's preference for the definition ref
// (name@major.minor; any minor of a major names the same preference), replacing any kept
// before. It is refused unless pref was made among the providers the host holds now:
// ErrProvidersChanged when pref.Set is not their CandidateSet (the person saw another set),
// ErrNotCandidate when pref.Provider is not one of them.
func (p *Planner) SavePreference(ctx context.Context, ref string, pref definition.Preference) error {
	if p.Preferences == nil {
		return ErrNoPreferences
	}
	def, err := p.find(ref)
	if err != nil {
		return err
	}
	host := p.hostCandidates(def)
	if pref.Set != definition.CandidateSet(host) {
		return fmt.Errorf("%w: set: must be the set of the definition's providers now", ErrProvidersChanged)
	}
	if !slices.ContainsFunc(host, func(c definition.Candidate) bool { return c.Provider == pref.Provider }) {
		return fmt.Errorf("%w: provider: must be one of the definition's providers", ErrNotCandidate)
	}
	return p.Preferences.PutState(ctx, preferencesApp, PreferenceKey(def), encodePreference(pref))
}

// DeletePreference removes the preference kept for the definition ref (name@major.minor;
// any minor of a major names the same preference): its providers go by id within each path
// again. None kept is no error.
func (p *Planner) DeletePreference(ctx context.Context, ref string) error {
	if p.Preferences == nil {
		return ErrNoPreferences
	}
	def, err := p.find(ref)
	if err != nil {
		return err
	}
	return p.Preferences.PutState(ctx, preferencesApp, PreferenceKey(def), nil)
}

// errNoPreference is the kept preference's absence: store.ErrNotFound, or no store at all.
var errNoPreference = fmt.Errorf("plan: preference: %w", store.ErrNotFound)

// loadPreference reads and decodes def's kept preference: errNoPreference (which wraps
// store.ErrNotFound) for none.
func (p *Planner) loadPreference(ctx context.Context, def *definition.Definition) (definition.Preference, error) {
	if p.Preferences == nil {
		return definition.Preference{}, errNoPreference
	}
	raw, err := p.Preferences.GetState(ctx, preferencesApp, PreferenceKey(def))
	if errors.Is(err, store.ErrNotFound) {
		return definition.Preference{}, errNoPreference
	}
	if err != nil {
		return definition.Preference{}, fmt.Errorf("plan: preference of %s: %w", PreferenceKey(def), err)
	}
	pref, err := decodePreference(raw)
	if err != nil {
		return definition.Preference{}, fmt.Errorf("plan: preference of %s: %w", PreferenceKey(def), err)
	}
	return pref, nil
}

// preferenceFor is def's kept preference as it applies to cands, the providers one caller
// sees: nil when none is kept; nil and stale when it was made among another set of providers
// than the host holds now. The preference is held to the host's providers rather than to a
// caller's view of them, so that the person's choice, made among every provider, holds for a
// caller whose trust reaches fewer (they come in the person's order) instead of lapsing for
// it; and any provider added to the host, whoever may use it, lapses it.
func (p *Planner) preferenceFor(ctx context.Context, def *definition.Definition, cands []definition.Candidate) (pref *definition.Preference, stale bool, err error) {
	kept, err := p.loadPreference(ctx, def)
	switch {
	case errors.Is(err, errNoPreference):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case kept.Set != definition.CandidateSet(p.hostCandidates(def)):
		return nil, true, nil
	}
	return &definition.Preference{Provider: kept.Provider, Set: definition.CandidateSet(cands)}, false, nil
}

// hostCandidates are every provider the host holds of def, by provider and capability id:
// each capability of a registered app, enabled or not and whatever its auth level, that
// implements def at its major, with its path. Whether it works is left false: it does not
// change the set (CandidateSet), and the listing a caller sees says it.
func (p *Planner) hostCandidates(def *definition.Definition) []definition.Candidate {
	paths := providerPaths(def)
	var out []definition.Candidate
	for _, app := range p.Registry.List() {
		if app.Doc == nil || app.Doc.Manifest() == nil {
			continue
		}
		caps := app.Doc.Manifest().Capabilities
		for i := range caps {
			if c, ok := candidate(def, paths, app, &caps[i]); ok {
				out = append(out, c)
			}
		}
	}
	slices.SortFunc(out, func(a, b definition.Candidate) int {
		if c := strings.Compare(a.Provider, b.Provider); c != 0 {
			return c
		}
		return strings.Compare(a.Capability, b.Capability)
	})
	return out
}

// candidates are the providers of def among listed, each working or not as listed says.
func (p *Planner) candidates(def *definition.Definition, listed []broker.Listed) []definition.Candidate {
	paths := providerPaths(def)
	var out []definition.Candidate
	for _, l := range listed {
		if c, ok := candidate(def, paths, l.App, l.Cap); ok {
			c.Working, c.Why = l.Working, l.Why
			out = append(out, c)
		}
	}
	return out
}

// providerPaths are the paths def gives the apps it names, the first for an app named twice.
func providerPaths(def *definition.Definition) map[string]definition.Path {
	paths := map[string]definition.Path{}
	for _, pr := range def.Providers {
		if _, ok := paths[pr.ID]; !ok {
			paths[pr.ID] = pr.Path
		}
	}
	return paths
}

// candidate is the capability c of app as a provider of def, when it implements def at its
// major. Its path is the one def gives the app, else a tool server's for a tool server's
// app, else an API's.
func candidate(def *definition.Definition, paths map[string]definition.Path, app *registry.App, c *manifest.Capability) (definition.Candidate, bool) {
	if app == nil || c == nil {
		return definition.Candidate{}, false
	}
	impl, err := manifest.ParseDefinitionRef(c.Implements)
	if err != nil || impl.Name() != def.Name || impl.Version().Major != def.Version.Major {
		return definition.Candidate{}, false
	}
	id := app.ID.String()
	path, ok := paths[id]
	switch {
	case ok:
	case strings.HasPrefix(id, toolserver.AppPrefix):
		path = definition.PathToolServer
	default:
		path = definition.PathAPI
	}
	return definition.Candidate{Provider: id, Capability: c.ParsedID().String(), Path: path}, true
}

// setPattern is CandidateSet's form: "sha256:" and 64 lowercase hex digits.
var setPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// encodePreference is pref's one encoding: encoding/json's of the struct, its members in
// declaration order.
func encodePreference(pref definition.Preference) []byte {
	raw, _ := json.Marshal(pref) // two strings: cannot fail
	return raw
}

// decodePreference reads a kept preference strictly: exactly encodePreference's bytes of a
// preference whose provider is an app id and whose set has CandidateSet's form. Re-encoding
// and comparing refuses what encoding/json alone lets through: unknown, duplicate or
// differently cased members, other spacing, trailing data.
func decodePreference(raw []byte) (definition.Preference, error) {
	if len(raw) > MaxPreferenceBytes {
		return definition.Preference{}, fmt.Errorf("%w: longer than %d bytes", ErrStoredPreference, MaxPreferenceBytes)
	}
	var pref definition.Preference
	if err := json.Unmarshal(raw, &pref); err != nil {
		return definition.Preference{}, fmt.Errorf("%w: not JSON of a preference", ErrStoredPreference)
	}
	if !bytes.Equal(raw, encodePreference(pref)) {
		return definition.Preference{}, fmt.Errorf("%w: not in its one encoding", ErrStoredPreference)
	}
	var problems []error
	if _, err := manifest.ParseAppID(pref.Provider); err != nil {
		problems = append(problems, errors.New("provider: must be an app id"))
	}
	if !setPattern.MatchString(pref.Set) {
		problems = append(problems, errors.New("set: must be sha256: and 64 lowercase hex digits"))
	}
	if len(problems) > 0 {
		return definition.Preference{}, fmt.Errorf("%w: %w", ErrStoredPreference, errors.Join(problems...))
	}
	return pref, nil
}
