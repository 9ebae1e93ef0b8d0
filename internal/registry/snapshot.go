package registry

import (
	"slices"
	"strings"

	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// snapshot is one immutable state of the registry with every index built. A write builds a
// new snapshot from the old one's apps and swaps it in whole; nothing in a published snapshot
// changes afterwards, so readers need no lock.
type snapshot struct {
	apps    map[string]*App  // by ID's text
	aliases map[string]*App  // by Alias
	list    []*App           // ordered by ID
	caps    []Capability     // every app's, enabled or not, ordered by capability id
	byID    map[string]int   // capability id's text → index in caps
	byPerm  map[string][]int // permission's text → indexes in caps
	// route maps an IPC address without dots in its method (an app's id or alias, and an
	// action) to the index in caps of the one capability of that app with that action, or
	// ambiguous when more than one has it: resolving a call's address is two lookups of
	// strings, by app then by action (maps of a few strings each, which Go's maps search
	// without hashing).
	route   map[string]map[string]int
	skipped []Skipped // ordered by AppID
}

const ambiguous = -1

// build indexes apps, which the new snapshot owns from now on.
func build(apps map[string]*App, skipped []Skipped) *snapshot {
	s := &snapshot{
		apps:    apps,
		aliases: make(map[string]*App, len(apps)),
		list:    make([]*App, 0, len(apps)),
		byID:    map[string]int{},
		byPerm:  map[string][]int{},
		route:   map[string]map[string]int{},
		skipped: skipped,
	}
	for _, a := range apps {
		s.list = append(s.list, a)
		if a.Alias != "" {
			s.aliases[a.Alias] = a
		}
	}
	slices.SortFunc(s.list, func(a, b *App) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	for _, a := range s.list {
		m := a.Doc.Manifest()
		for i := range m.Capabilities {
			c := &m.Capabilities[i]
			params := a.Doc.ParametersSchema(c.ID)
			s.caps = append(s.caps, Capability{
				// Valid: the registry indexes only manifests that passed Validate.
				ID:         c.ParsedID(),
				Permission: c.ParsedPermission(),
				App:        a,
				Cap:        c,
				Params:     params,
				Returns:    a.Doc.ReturnsSchema(c.ID),
				// Built once per compiled schema (which is shared by every snapshot and
				// every manifest with the same schema), here, not on the first call.
				Classes: params.Classes(),
			})
		}
	}
	slices.SortFunc(s.caps, func(a, b Capability) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	for i, c := range s.caps {
		s.byID[c.ID.String()] = i
		perm := c.Permission.String()
		s.byPerm[perm] = append(s.byPerm[perm], i)
		// Ids hold dots and aliases never do, so an app's two names never meet another's.
		act := c.ID.Action()
		names := []string{c.App.ID.String()}
		if c.App.Alias != "" {
			names = append(names, c.App.Alias)
		}
		for _, name := range names {
			acts := s.route[name]
			if acts == nil {
				acts = map[string]int{}
				s.route[name] = acts
			}
			if _, dup := acts[act]; dup {
				acts[act] = ambiguous
			} else {
				acts[act] = i
			}
		}
	}
	return s
}

// with returns a new snapshot: this one's apps with change applied to a copy of the app map,
// and appID no longer among the skipped.
func (s *snapshot) with(appID string, change func(apps map[string]*App)) *snapshot {
	apps := make(map[string]*App, len(s.apps)+1)
	for id, a := range s.apps {
		apps[id] = a
	}
	change(apps)
	skipped := slices.DeleteFunc(slices.Clone(s.skipped), func(k Skipped) bool { return k.AppID == appID })
	return build(apps, skipped)
}

// App returns the app with the id or alias, enabled or not. Ids hold dots and aliases never
// do, so one name never means two apps.
func (r *Registry) App(idOrAlias string) (*App, bool) {
	s := r.snap.Load()
	if a, ok := s.apps[idOrAlias]; ok {
		return a, true
	}
	a, ok := s.aliases[idOrAlias]
	return a, ok
}

// List returns every app, enabled or not, ordered by ID. The slice is the caller's.
func (r *Registry) List() []*App {
	return slices.Clone(r.snap.Load().list)
}

// Skipped returns the stored apps the last load could not index, ordered by app id, less
// those registered or removed since. The slice is the caller's.
func (r *Registry) Skipped() []Skipped {
	return slices.Clone(r.snap.Load().skipped)
}

// Capability returns the capability with the id, if its app is enabled.
func (r *Registry) Capability(id string) (Capability, bool) {
	s := r.snap.Load()
	i, ok := s.byID[id]
	if !ok || !s.caps[i].App.Enabled {
		return Capability{}, false
	}
	return s.caps[i], true
}

// Method resolves an IPC address: app is an app's alias or id, method the action of one of
// its capabilities (the last part of the capability's id), or the capability's full id. It
// reports false when the app is unknown or disabled, when it has no such capability, and
// when two of its capabilities share the action under different domains: an ambiguous
// action never picks one, and the caller must name the full id.
func (r *Registry) Method(app, method string) (Capability, bool) {
	s := r.snap.Load()
	if !strings.Contains(method, ".") {
		i, ok := s.route[app][method]
		if !ok || i == ambiguous || !s.caps[i].App.Enabled {
			return Capability{}, false
		}
		return s.caps[i], true
	}
	a, ok := s.apps[app]
	if !ok {
		a, ok = s.aliases[app]
	}
	if !ok || !a.Enabled {
		return Capability{}, false
	}
	i, ok := s.byID[method]
	if !ok || s.caps[i].App != a {
		return Capability{}, false
	}
	return s.caps[i], true
}

// ByPermission returns every capability of an enabled app whose permission (its id when it
// declares none) equals permission, ordered by capability id. The slice is the caller's.
func (r *Registry) ByPermission(permission string) []Capability {
	s := r.snap.Load()
	var out []Capability
	for _, i := range s.byPerm[permission] {
		if s.caps[i].App.Enabled {
			out = append(out, s.caps[i])
		}
	}
	return out
}

// Covered returns every capability of an enabled app whose permission the grants cover, as
// token.Covers decides ("fs.*" covers fs.read and fs.write.x), ordered by capability id. The
// slice is the caller's.
func (r *Registry) Covered(grants []string) []Capability {
	if len(grants) == 0 {
		return nil
	}
	s := r.snap.Load()
	var out []Capability
	for _, c := range s.caps {
		if c.App.Enabled && token.Covers(grants, c.Permission.String()) {
			out = append(out, c)
		}
	}
	return out
}

// RiskOf returns the highest risk among the capabilities that grant covers, "" when it
// covers none. It counts the capabilities of disabled apps too: consent to issue a token
// must hold for what the token could do once an app is enabled again.
func (r *Registry) RiskOf(grant string) manifest.Risk {
	s := r.snap.Load()
	grants := []string{grant}
	var worst manifest.Risk
	for _, c := range s.caps {
		if token.Covers(grants, c.Permission.String()) && riskRank(c.Cap.Risk) > riskRank(worst) {
			worst = c.Cap.Risk
		}
	}
	return worst
}

// riskRank orders risks: "" below low < medium < high. An unknown risk ranks above high, so
// that it is never taken for a lesser one.
func riskRank(r manifest.Risk) int {
	if r == "" {
		return -1
	}
	if i := slices.Index(manifest.Risks, r); i >= 0 {
		return i
	}
	return len(manifest.Risks)
}
