package definition_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/capgate/capgate/internal/definition"
)

func providers(r definition.Route) []string {
	var out []string
	for _, c := range r.Order {
		out = append(out, c.Provider)
	}
	return out
}

func TestChoose(t *testing.T) {
	cands := []definition.Candidate{
		{Provider: "com.example.web", Capability: "transport.com.example.web.book", Path: definition.PathBrowser, Working: true},
		{Provider: "org.capgate.rides", Capability: "transport.org.capgate.rides.book", Path: definition.PathAPI, Working: true},
		{Provider: "com.zeta.rides", Capability: "transport.com.zeta.rides.book", Path: definition.PathToolServer, Working: true},
		{Provider: "com.alpha.rides", Capability: "transport.com.alpha.rides.book", Path: definition.PathAPI, Working: true},
		{Provider: "com.intent", Capability: "transport.com.intent.book", Path: definition.PathOSIntent, Working: true},
	}
	want := []string{"com.alpha.rides", "com.zeta.rides", "org.capgate.rides", "com.intent", "com.example.web"}
	if got := providers(definition.Choose(cands, definition.Policy{}, nil)); !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}

	// Whatever the providers declare of themselves, and in whatever order they come, the
	// order is the same: capgate's own app is ranked like the others, by path and id.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		shuffled := slices.Clone(cands)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for i := range shuffled {
			shuffled[i].Declared = map[string]any{"commission": rng.Float64(), "sponsored": rng.IntN(2) == 0,
				"ranking": rng.IntN(100), "priority": "highest", "path": "api"}
		}
		if got := providers(definition.Choose(shuffled, definition.Policy{}, nil)); !slices.Equal(got, want) {
			t.Fatalf("declared metadata or input order changed the order: %v", got)
		}
	}

	// A lower path only when every higher one is missing or not working.
	broken := slices.Clone(cands)
	for i := range broken {
		if broken[i].Path.Rank() == 1 {
			broken[i].Working, broken[i].Why = false, "its last evaluation failed"
		}
	}
	r := definition.Choose(broken, definition.Policy{}, nil)
	if r.Path != definition.PathOSIntent || len(r.Left) != 3 || r.Left[0].Why != "its last evaluation failed" {
		t.Errorf("with the API and tool servers down: %+v", r)
	}

	// The host's policy.
	r = definition.Choose(cands, definition.Policy{Denied: []string{"com.alpha.rides"}, Paths: []definition.Path{definition.PathAPI, definition.PathBrowser}}, nil)
	if got := providers(r); !slices.Equal(got, []string{"org.capgate.rides", "com.example.web"}) {
		t.Errorf("under the policy: %v", got)
	}

	// The person's preference holds within its path, and only while the set is unchanged.
	set := definition.CandidateSet(cands)
	r = definition.Choose(cands, definition.Policy{}, &definition.Preference{Provider: "org.capgate.rides", Set: set})
	if got := providers(r); got[0] != "org.capgate.rides" || !r.Preferred {
		t.Errorf("preferred: %v", got)
	}
	r = definition.Choose(cands, definition.Policy{}, &definition.Preference{Provider: "com.example.web", Set: set})
	if got := providers(r); got[0] != "com.alpha.rides" || got[4] != "com.example.web" {
		t.Errorf("a preference does not lift a browser over an API: %v", got)
	}
	more := append(slices.Clone(cands), definition.Candidate{Provider: "com.new.rides", Capability: "transport.com.new.rides.book", Path: definition.PathAPI, Working: true})
	r = definition.Choose(more, definition.Policy{}, &definition.Preference{Provider: "org.capgate.rides", Set: set})
	if got := providers(r); got[0] != "com.alpha.rides" || !r.StalePreference || r.Preferred {
		t.Errorf("a preference made before a provider was added: %v %+v", got, r)
	}
	shuffled := slices.Clone(cands)
	slices.Reverse(shuffled)
	shuffled[0].Declared = map[string]any{"sponsored": true}
	shuffled[1].Working = false
	if definition.CandidateSet(shuffled) != set {
		t.Error("the candidate set depends on order, declarations or working state")
	}

	// Nothing works: a hand-off.
	for i := range broken {
		broken[i].Working = false
	}
	if r := definition.Choose(broken, definition.Policy{}, nil); !r.Handoff || r.Path != definition.PathHandoff || len(r.Order) != 0 || len(r.Left) != 5 {
		t.Errorf("nothing works: %+v", r)
	}
	if r := definition.Choose(nil, definition.Policy{}, nil); !r.Handoff {
		t.Errorf("no candidate: %+v", r)
	}
	if r := definition.Choose([]definition.Candidate{{Provider: "a.b", Path: "carrier_pigeon", Working: true}}, definition.Policy{}, nil); !r.Handoff || r.Left[0].Why != "no path this host knows" {
		t.Errorf("an unknown path: %+v", r)
	}
}
