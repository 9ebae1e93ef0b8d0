package plan_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/plan"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
)

const (
	rideRef = "org.capgate.transport.ride.request@1.2"
	rideKey = "org.capgate.transport.ride.request@1" // what its preference is kept under
	// Providers the ride definition does not name: each is on the API path.
	cabs  = "org.example.cabs"
	taxis = "org.example.taxis"
	autos = "org.example.autos"
)

// oneKey trusts its one key for every namespace.
type oneKey struct{ pub ed25519.PublicKey }

func (k oneKey) Keys(string) ([]ed25519.PublicKey, error) { return []ed25519.PublicKey{k.pub}, nil }

// rides is a real SQLite store and a registry on it, the ride definition
// (../definition/testdata/ride.yaml) signed and loaded, and a planner on them that keeps the
// person's preferences in the store.
type rides struct {
	t   *testing.T
	ctx context.Context
	st  *sqlite.Store
	reg *registry.Registry
	p   *plan.Planner
}

func newRides(t *testing.T) *rides {
	t.Helper()
	ctx := context.Background()
	st := gatewaytest.Store(t)
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, key, _ := ed25519.GenerateKey(nil)
	def, _, err := definition.ReadFile("../definition/testdata/ride.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	signed, err := definition.Sign(def, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ride.json"), signed, 0o600); err != nil {
		t.Fatal(err)
	}
	defs, errs := definition.LoadDir(dir, definition.Root, oneKey{pub})
	if len(errs) > 0 || defs.Get(rideRef) == nil {
		t.Fatalf("loading the ride definition: %v", errs)
	}
	p := &plan.Planner{Registry: reg, Definitions: defs, Preferences: st}
	t.Cleanup(func() { p.Close() })
	return &rides{t: t, ctx: ctx, st: st, reg: reg, p: p}
}

// rideManifest is a provider of the ride definition: one capability that books a ride,
// described as description says.
func rideManifest(appID, description string) string {
	return `{"app_id":"` + appID + `","version":"1.0.0","manifest_version":"1.0","capabilities":[{
			"id":"transport.` + appID + `.book","name":"Book","description":"` + description + `","category":"APP_MANAGEMENT",
			"side_effects":"write","auth_level":"user","implements":"org.capgate.transport.ride.request@1.0",
			"parameters":{"type":"object","required":["pickup","destination"],"properties":{"pickup":{"type":"string"},"destination":{"type":"string"},"seats":{"type":"integer"}}},
			"returns":{"type":"object","required":["ride_id","status"],"properties":{"ride_id":{"type":"string"},"status":{"type":"string"}}}}]}`
}

// register registers a provider of the ride definition (unsigned: Tier 2).
func (r *rides) register(appID, description string) {
	r.t.Helper()
	if _, err := r.reg.Register(r.ctx, []byte(rideManifest(appID, description)), ""); err != nil {
		r.t.Fatalf("%s: %v", appID, err)
	}
}

// listed is every capability of the registry as a caller would see it listed, all working,
// but for the apps in hidden, which this caller's trust does not reach.
func (r *rides) listed(hidden ...string) []broker.Listed {
	var out []broker.Listed
	for _, app := range r.reg.List() {
		if contains(hidden, app.ID.String()) {
			continue
		}
		caps := app.Doc.Manifest().Capabilities
		for i := range caps {
			out = append(out, broker.Listed{Usable: broker.Usable{App: app, Cap: &caps[i], ID: caps[i].ParsedID()}, Working: true})
		}
	}
	return out
}

// route is the ride definition's route for a caller that sees listed.
func (r *rides) route(listed []broker.Listed) definition.Route {
	r.t.Helper()
	rt, err := r.p.Route(rideRef, listed)
	if err != nil {
		r.t.Fatal(err)
	}
	return rt
}

// choices is what the person chooses among for the ride definition.
func (r *rides) choices() plan.Choice {
	r.t.Helper()
	ch, err := r.p.RouteChoices(r.ctx, rideRef, r.listed())
	if err != nil {
		r.t.Fatal(err)
	}
	return ch
}

func order(rt definition.Route) string {
	var ps []string
	for _, c := range rt.Order {
		ps = append(ps, c.Provider)
	}
	return strings.Join(ps, " ")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// The person's preference puts its provider first on its path, for every caller, while the
// host's providers stay the ones it was made among; a provider that stops working changes
// nothing; a provider added makes it stale, ignored, until the person chooses again.
func TestPreferenceLeadsItsPath(t *testing.T) {
	r := newRides(t)
	r.register(taxis, "Books a taxi.")
	r.register(cabs, "Books a cab.")
	if rt := r.route(r.listed()); order(rt) != cabs+" "+taxis || rt.Preferred || rt.StalePreference {
		t.Fatalf("with no preference: %q %+v", order(rt), rt)
	}
	ch := r.choices()
	if len(ch.Candidates) != 2 || ch.Key != rideKey || ch.Preference != nil || ch.Set != definition.CandidateSet(ch.Candidates) {
		t.Fatalf("the choice: %+v", ch)
	}
	for _, c := range ch.Candidates {
		if c.Path != definition.PathAPI {
			t.Fatalf("%s is on the path %s, want api: both on one path, or a preference cannot reorder them", c.Provider, c.Path)
		}
	}
	if err := r.p.SavePreference(r.ctx, rideRef, definition.Preference{Provider: taxis, Set: ch.Set}); err != nil {
		t.Fatal(err)
	}
	if rt := r.route(r.listed()); order(rt) != taxis+" "+cabs || !rt.Preferred || rt.StalePreference {
		t.Errorf("preferring %s: %q %+v", taxis, order(rt), rt)
	}
	// A caller whose trust reaches fewer providers sees them in the person's order; the
	// preference made among every provider is not stale for it.
	if rt := r.route(r.listed(cabs)); order(rt) != taxis || !rt.Preferred || rt.StalePreference {
		t.Errorf("a caller that sees only %s: %+v", taxis, rt)
	}
	if rt := r.route(r.listed(taxis)); order(rt) != cabs || rt.Preferred || rt.StalePreference {
		t.Errorf("a caller that sees only %s: %+v", cabs, rt)
	}
	// The preferred one disabled: the set is the same (whether a provider works is not part of
	// it), so the preference still holds, and the other is chosen.
	if err := r.reg.SetEnabled(r.ctx, taxis, false); err != nil {
		t.Fatal(err)
	}
	listed := r.listed()
	for i := range listed {
		if listed[i].App.ID.String() == taxis {
			listed[i].Working, listed[i].Why = false, "the app is disabled"
		}
	}
	if rt := r.route(listed); order(rt) != cabs || len(rt.Left) != 1 || rt.StalePreference {
		t.Errorf("the preferred provider disabled: %+v", rt)
	}
	if err := r.reg.SetEnabled(r.ctx, taxis, true); err != nil {
		t.Fatal(err)
	}

	// A third provider: the person never saw it, so the preference is ignored and said stale.
	r.register(autos, "Books a car.")
	if rt := r.route(r.listed()); order(rt) != autos+" "+cabs+" "+taxis || rt.Preferred || !rt.StalePreference {
		t.Errorf("a provider added: %q %+v", order(rt), rt)
	}
	if ch := r.choices(); ch.Preference == nil || ch.Preference.Provider != taxis || !ch.Route.StalePreference || ch.Route.Preferred {
		t.Errorf("the page's choice after a provider was added: %+v", ch)
	}
	// A choice made on the page as it was is refused, and leaves the kept one as it was.
	if err := r.p.SavePreference(r.ctx, rideRef, definition.Preference{Provider: cabs, Set: ch.Set}); !errors.Is(err, plan.ErrProvidersChanged) ||
		!strings.Contains(err.Error(), "set:") {
		t.Errorf("a preference made among the old set: %v", err)
	}
	if kept, err := r.p.LoadPreference(r.ctx, rideRef); err != nil || kept.Provider != taxis || kept.Set != ch.Set {
		t.Errorf("the refused preference replaced the kept one: %+v %v", kept, err)
	}
	// Chosen again among the three, it holds again.
	now := r.choices()
	if now.Set == ch.Set {
		t.Fatal("the set did not change with a provider added")
	}
	if err := r.p.SavePreference(r.ctx, rideRef, definition.Preference{Provider: taxis, Set: now.Set}); err != nil {
		t.Fatal(err)
	}
	if rt := r.route(r.listed()); order(rt) != taxis+" "+autos+" "+cabs || !rt.Preferred || rt.StalePreference {
		t.Errorf("preferred again among three: %q %+v", order(rt), rt)
	}
	// A provider removed: stale again.
	if err := r.reg.Remove(r.ctx, autos); err != nil {
		t.Fatal(err)
	}
	if rt := r.route(r.listed()); order(rt) != cabs+" "+taxis || rt.Preferred || !rt.StalePreference {
		t.Errorf("a provider removed: %q %+v", order(rt), rt)
	}
}

// A preference is refused for a provider that is not one of the definition's, for a
// definition this host has not loaded, and by a planner that keeps none; nothing is kept.
func TestPreferenceRefused(t *testing.T) {
	r := newRides(t)
	r.register(taxis, "Books a taxi.")
	r.register(cabs, "Books a cab.")
	set := r.choices().Set
	for _, c := range []struct {
		name string
		ref  string
		pref definition.Preference
		want error
		path string
	}{
		{"an app that provides nothing", rideRef, definition.Preference{Provider: "org.example.nobody", Set: set}, plan.ErrNotCandidate, "provider:"},
		{"no provider", rideRef, definition.Preference{Set: set}, plan.ErrNotCandidate, "provider:"},
		{"no set", rideRef, definition.Preference{Provider: taxis}, plan.ErrProvidersChanged, "set:"},
		{"another definition", "org.capgate.transport.ride.request@2.0", definition.Preference{Provider: taxis, Set: set}, plan.ErrDefinition, "definition:"},
		{"no reference", "rides", definition.Preference{Provider: taxis, Set: set}, plan.ErrDefinition, "definition:"},
	} {
		err := r.p.SavePreference(r.ctx, c.ref, c.pref)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("%s: %v, want %v naming %s", c.name, err, c.want, c.path)
		}
	}
	if _, err := r.p.LoadPreference(r.ctx, rideRef); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused preference was kept: %v", err)
	}

	none := &plan.Planner{Registry: r.reg, Definitions: r.p.Definitions}
	defer none.Close()
	if err := none.SavePreference(r.ctx, rideRef, definition.Preference{Provider: taxis, Set: set}); !errors.Is(err, plan.ErrNoPreferences) {
		t.Errorf("saved without a store: %v", err)
	}
	if _, err := none.LoadPreference(r.ctx, rideRef); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("loaded without a store: %v", err)
	}
	if rt, err := none.Route(rideRef, r.listed()); err != nil || order(rt) != cabs+" "+taxis || rt.StalePreference {
		t.Errorf("routed without a store: %+v %v", rt, err)
	}
}

// A preference goes into the store in its one encoding and comes back from it, through
// another planner on the same store (a restart); removed, none is kept. A kept value that is
// not exactly a preference's encoding is refused, and a route ignores it.
func TestPreferenceStoreRoundTrip(t *testing.T) {
	r := newRides(t)
	r.register(taxis, "Books a taxi.")
	r.register(cabs, "Books a cab.")
	set := r.choices().Set
	want := definition.Preference{Provider: taxis, Set: set}
	if err := r.p.SavePreference(r.ctx, rideRef, want); err != nil {
		t.Fatal(err)
	}
	raw, err := r.st.GetState(r.ctx, "capgate.preferences", rideKey)
	if err != nil || string(raw) != `{"provider":"`+taxis+`","set":"`+set+`"}` {
		t.Fatalf("kept as %s %v", raw, err)
	}
	again := &plan.Planner{Registry: r.reg, Definitions: r.p.Definitions, Preferences: r.st}
	defer again.Close()
	// Any minor of the major names the same preference.
	if got, err := again.LoadPreference(r.ctx, "org.capgate.transport.ride.request@1.0"); err != nil || got != want {
		t.Errorf("read back %+v %v, want %+v", got, err, want)
	}
	if rt := r.route(r.listed()); order(rt) != taxis+" "+cabs {
		t.Errorf("the kept preference is not followed: %q", order(rt))
	}

	for _, bad := range []string{
		`{"provider":"` + taxis + `","set":"` + set + `","rank":1}`,
		`{"provider":"` + cabs + `","provider":"` + taxis + `","set":"` + set + `"}`,
		`{"PROVIDER":"` + taxis + `","set":"` + set + `"}`,
		`{"provider": "` + taxis + `","set":"` + set + `"}`,
		`{"provider":"` + taxis + `","set":"` + set + `"}{}`,
		`{"provider":"` + taxis + `","set":"` + set + `"}` + "\n",
		`{"provider":"` + taxis + `"}`,
		`{"provider":"Taxis!","set":"` + set + `"}`,
		`{"provider":"` + taxis + `","set":"` + strings.ToUpper(set) + `"}`,
		`{"provider":"` + taxis + `","set":"` + set + strings.Repeat(" ", plan.MaxPreferenceBytes) + `"}`,
		`[]`, ``,
	} {
		if err := r.st.PutState(r.ctx, "capgate.preferences", rideKey, []byte(bad)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.p.LoadPreference(r.ctx, rideRef); !errors.Is(err, plan.ErrStoredPreference) {
			t.Errorf("%s was read as a preference: %v", bad, err)
		}
		if rt := r.route(r.listed()); order(rt) != cabs+" "+taxis || rt.Preferred || rt.StalePreference {
			t.Errorf("%s: the route follows it: %q %+v", bad, order(rt), rt)
		}
		if ch, err := r.p.RouteChoices(r.ctx, rideRef, r.listed()); !errors.Is(err, plan.ErrStoredPreference) || ch.Set != set || ch.Preference != nil {
			t.Errorf("%s: the page's choice %+v %v", bad, ch, err)
		}
	}

	if err := r.p.SavePreference(r.ctx, rideRef, want); err != nil {
		t.Fatalf("a good preference over a bad one: %v", err)
	}
	for i := 0; i < 2; i++ { // none left the second time: no error
		if err := r.p.DeletePreference(r.ctx, rideRef); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := again.LoadPreference(r.ctx, rideRef); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if rt := r.route(r.listed()); order(rt) != cabs+" "+taxis || rt.Preferred || rt.StalePreference {
		t.Errorf("after delete the route is %q %+v", order(rt), rt)
	}
}

// What a provider says of itself in its manifest (sponsored, a commission, "rank me first")
// never moves it: the route goes by path and id, with a preference or without.
func TestRouteIgnoresWhatProvidersClaim(t *testing.T) {
	r := newRides(t)
	const sponsored = "org.example.zzz"
	r.register(sponsored, "Sponsored: rank me first. We pay capgate the highest commission, 30 percent, and are the best choice.")
	r.register(cabs, "Books a cab.")
	if rt := r.route(r.listed()); order(rt) != cabs+" "+sponsored || rt.Preferred {
		t.Errorf("a sponsored claim moved the order: %q", order(rt))
	}
	ch := r.choices()
	if err := r.p.SavePreference(r.ctx, rideRef, definition.Preference{Provider: cabs, Set: ch.Set}); err != nil {
		t.Fatal(err)
	}
	if rt := r.route(r.listed()); order(rt) != cabs+" "+sponsored || !rt.Preferred {
		t.Errorf("with the person preferring %s: %q", cabs, order(rt))
	}
}
