package definition_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/manifest"
)

// rideApp is a manifest with one capability implementing the ride definition, its schemas
// given.
func rideApp(t *testing.T, implements string, params, returns map[string]any) *manifest.Manifest {
	t.Helper()
	p, _ := json.Marshal(params)
	r, _ := json.Marshal(returns)
	doc := map[string]any{
		"app_id": "com.example.rides", "version": "1.0.0", "manifest_version": "1.0",
		"capabilities": []any{map[string]any{
			"id": "transport.com.example.rides.book", "name": "Book a ride", "description": "Books a ride.",
			"category": "APP_MANAGEMENT", "parameters": json.RawMessage(p), "returns": json.RawMessage(r),
			"side_effects": "write", "implements": implements,
		}},
	}
	raw, _ := json.Marshal(doc)
	d, err := manifest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if ps := d.Validate(); len(ps) > 0 {
		t.Fatal(ps)
	}
	return d.Manifest()
}

func TestCheckImplements(t *testing.T) {
	set := definition.NewSet(def(t, "org.capgate.transport.ride.request", "1.2", ""))
	const ref = "org.capgate.transport.ride.request@1.1"
	str := map[string]any{"type": "string"}
	goodParams := map[string]any{"type": "object", "required": []any{"pickup", "destination"},
		"properties": map[string]any{"pickup": str, "destination": str, "seats": map[string]any{"type": "number"}, "note": str}}
	goodReturns := map[string]any{"type": "object", "required": []any{"ride_id", "status"},
		"properties": map[string]any{"ride_id": str, "status": str, "eta_minutes": map[string]any{"type": "integer"}}}
	if ps := definition.CheckImplements(rideApp(t, ref, goodParams, goodReturns), set); len(ps) > 0 {
		t.Fatalf("compatible: %v", ps)
	}
	clone := func(m map[string]any) map[string]any {
		b, _ := json.Marshal(m)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return out
	}
	for _, c := range []struct {
		name            string
		ref             string
		params, returns func() map[string]any
		path, rule      string
	}{
		{"a later minor than loaded", "org.capgate.transport.ride.request@1.3", nil, nil, "capabilities[0].implements", "not 1.3"},
		{"another major", "org.capgate.transport.ride.request@2.0", nil, nil, "capabilities[0].implements", "not 2.0"},
		{"requires more", ref, func() map[string]any {
			p := clone(goodParams)
			p["required"] = []any{"pickup", "destination", "note"}
			return p
		}, nil, "capabilities[0].parameters.required.note", "does not require"},
		{"closed without a property", ref, func() map[string]any {
			p := clone(goodParams)
			delete(p["properties"].(map[string]any), "seats")
			p["additionalProperties"] = false
			return p
		}, nil, "capabilities[0].parameters.properties.seats", "missing"},
		{"narrower type", ref, func() map[string]any {
			p := clone(goodParams)
			p["properties"].(map[string]any)["seats"] = map[string]any{"type": "string"}
			return p
		}, nil, "capabilities[0].parameters.properties.seats", "integer"},
		{"does not return what is required", ref, nil, func() map[string]any {
			r := clone(goodReturns)
			r["required"] = []any{"ride_id"}
			return r
		}, "capabilities[0].returns.required.status", "requires this property"},
		{"returns a wider type", ref, nil, func() map[string]any {
			r := clone(goodReturns)
			r["properties"].(map[string]any)["eta_minutes"] = map[string]any{"type": []any{"integer", "string"}}
			return r
		}, "capabilities[0].returns.properties.eta_minutes", "string"},
		{"returns anything", ref, nil, func() map[string]any { return map[string]any{} }, "capabilities[0].returns", "any type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, r := goodParams, goodReturns
			if c.params != nil {
				p = c.params()
			}
			if c.returns != nil {
				r = c.returns()
			}
			ps := definition.CheckImplements(rideApp(t, c.ref, p, r), set)
			if !hasProblem(ps, c.path, c.rule) {
				t.Fatalf("no problem at %s with %q: %v", c.path, c.rule, ps)
			}
			for _, pr := range ps {
				if !strings.Contains(pr.Rule, "implements") && c.path != "capabilities[0].implements" {
					t.Errorf("a problem that does not name the definition: %v", pr)
				}
			}
		})
	}
	// A name the host has no definition of (a port's method, say) is not checked here.
	if ps := definition.CheckImplements(rideApp(t, "knowledge.search@1.0", map[string]any{}, map[string]any{}), set); len(ps) > 0 {
		t.Errorf("a port method: %v", ps)
	}
}
