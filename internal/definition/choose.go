package definition

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Candidate is one provider's capability that could carry out a definition's action.
type Candidate struct {
	Provider   string `json:"provider"`   // the app id
	Capability string `json:"capability"` // the capability id
	Path       Path   `json:"path"`
	// Working says the capability passed its last evaluation, its provider is up and its pin
	// matches; Why says what is wrong when it is not.
	Working bool   `json:"working"`
	Why     string `json:"why,omitempty"`
	// Declared is whatever the provider says of itself beyond its capability (a ranking, a
	// commission, "sponsored"): kept to be shown, and never read by Choose.
	Declared map[string]any `json:"declared,omitempty"`
}

// Policy is the host's rule on providers: a Denied provider is never chosen, and when Paths is
// not empty only those paths are taken.
type Policy struct {
	Denied []string `json:"denied,omitempty"`
	Paths  []Path   `json:"paths,omitempty"`
}

// Preference is the person's choice of a provider for a definition, made on the approval page
// among the candidates whose CandidateSet is Set: it holds only while that set is unchanged,
// so that a provider added later is never passed over by a choice made before it was there.
type Preference struct {
	Provider string `json:"provider"`
	Set      string `json:"set"`
}

// CandidateSet is the identity of a set of candidates, whatever their order: the SHA-256 of
// their provider, capability and path, sorted. What a provider declares of itself, and
// whether it works right now, are not part of it.
func CandidateSet(cs []Candidate) string {
	keys := make([]string, len(cs))
	for i, c := range cs {
		keys[i] = c.Provider + "\x00" + c.Capability + "\x00" + string(c.Path)
	}
	slices.Sort(keys)
	sum := sha256.Sum256([]byte(strings.Join(keys, "\x01")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Route is the order in which a definition's action would be tried, and what was left out.
type Route struct {
	// Order holds the candidates that may run, best first; the first is the one chosen.
	Order []Candidate `json:"order"`
	// Path is the first's path, or PathHandoff when none may run: the person is handed what
	// was prepared.
	Path    Path `json:"path"`
	Handoff bool `json:"handoff"`
	// Left are the candidates not in Order, each with why.
	Left []Candidate `json:"left,omitempty"`
	// Preferred says the person's preference applied: its provider leads its path;
	// StalePreference that a preference was given for another set of candidates, and ignored.
	Preferred       bool `json:"preferred,omitempty"`
	StalePreference bool `json:"stale_preference,omitempty"`
}

// Choose orders the candidates of one definition by the host's policy, the path order and the
// person's preference, and by nothing else:
//
//   - a candidate the policy denies, on a path the policy does not take, without a path, or
//     not working right now is left out, with why;
//   - the rest go by path, best first (Path.Rank): a lower path comes only after every higher
//     one that works, so it is chosen only when they are missing or not working;
//   - within one path, the person's preferred provider comes first, when the preference was
//     made among this very set of candidates (CandidateSet); the others go by provider and
//     capability id, an order nobody can buy.
//
// What a provider declares of itself (Declared) is never read, and capgate's own apps are
// ordered like any other provider's. With nothing left, the route is a hand-off.
func Choose(cands []Candidate, policy Policy, pref *Preference) Route {
	var r Route
	for _, c := range cands {
		switch {
		case slices.Contains(policy.Denied, c.Provider):
			c.Why = "the host's policy does not take this provider"
		case c.Path.Rank() == 0:
			c.Why = "no path this host knows"
		case len(policy.Paths) > 0 && !slices.Contains(policy.Paths, c.Path):
			c.Why = "the host's policy does not take the path " + string(c.Path)
		case !c.Working:
			if c.Why == "" {
				c.Why = "not working right now"
			}
		default:
			r.Order = append(r.Order, c)
			continue
		}
		r.Left = append(r.Left, c)
	}
	preferred := ""
	if pref != nil {
		if pref.Set == CandidateSet(cands) {
			preferred = pref.Provider
		} else {
			r.StalePreference = true
		}
	}
	slices.SortStableFunc(r.Order, func(a, b Candidate) int {
		if d := a.Path.Rank() - b.Path.Rank(); d != 0 {
			return d
		}
		if ap, bp := a.Provider == preferred, b.Provider == preferred; ap != bp {
			if ap {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Provider, b.Provider); c != 0 {
			return c
		}
		return strings.Compare(a.Capability, b.Capability)
	})
	if len(r.Order) == 0 {
		r.Path, r.Handoff = PathHandoff, true
		return r
	}
	r.Path = r.Order[0].Path
	r.Handoff = r.Path == PathHandoff
	r.Preferred = preferred != "" && slices.ContainsFunc(r.Order, func(c Candidate) bool { return c.Provider == preferred })
	return r
}
