package delta

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/capgate/capgate/manifest"
)

// genManifest builds a random valid manifest of app org.example.kb from r: a random
// combination of the optional fields, each with a random value.
func genManifest(r *rand.Rand) obj {
	pick := func(words ...string) string { return words[r.IntN(len(words))] }
	some := func(words ...string) []any {
		var out []any
		for _, w := range words {
			if r.IntN(2) == 0 {
				out = append(out, w)
			}
		}
		return out
	}
	maybe := func() bool { return r.IntN(2) == 0 }

	m := obj{
		"app_id":           "org.example.kb",
		"version":          fmt.Sprintf("%d.%d.%d", 1+r.IntN(3), r.IntN(5), r.IntN(5)),
		"manifest_version": "1.0",
	}
	if maybe() {
		m["kind"] = "capability_provider"
	}
	if ports := some("kb.v1", "search.v2", "files.v1"); len(ports) > 0 {
		m["ports"] = ports
	}
	if maybe() {
		m["signer"] = pick("https://issuer.example.com kb", "https://issuer.example.com other")
	}
	if maybe() {
		m["digest"] = digestA
	}
	if maybe() {
		m["previous_version"] = "0.9.0"
	}
	if maybe() {
		m["events"] = []any{obj{"event_type": "kb.changed", "description": "Changed.", "payload_schema": obj{"type": "object"}}}
	}
	if maybe() {
		m["deprecated_after"] = "2030-01-01T00:00:00Z"
	}

	n := 1 + r.IntN(4)
	var caps []any
	for i := range n {
		id := fmt.Sprintf("kb.org.example.kb.a%d", i)
		c := obj{
			"id": id, "name": fmt.Sprintf("Action %d", i), "description": "Does a thing.",
			"category":   pick("TEXT_QUERY", "FILE_OPERATION", "STATE_QUERY"),
			"parameters": obj{"type": "object"}, "returns": obj{"type": "object"},
		}
		opt := func(key string, v func() any) {
			if maybe() {
				c[key] = v()
			}
		}
		opt("side_effects", func() any { return pick("none", "read", "write", "network", "destructive", "system") })
		opt("risk", func() any { return pick("low", "medium", "high") })
		opt("confirmation_required", func() any { return maybe() })
		opt("undo_window_ms", func() any { return 1 + r.IntN(60000) })
		opt("version", func() any { return pick("1.0", "1.2") })
		opt("auth_level", func() any { return pick("public", "user", "privileged", "system") })
		opt("permission", func() any { return pick("kb.read", "kb.write") })
		opt("idempotency", func() any { return pick("none", "keyed", "natural") })
		opt("dry_run", func() any { return maybe() })
		if n > 1 && maybe() {
			c["compensation"] = fmt.Sprintf("kb.org.example.kb.a%d", (i+1)%n)
		}
		opt("credential_intents", func() any { return append(some("kb.api", "kb.admin"), "kb.base") })
		opt("network_intents", func() any {
			return []any{obj{"host": pick("api.example.com", "cdn.example.com"), "port": pick2(r, 443, 8443)}}
		})
		opt("filesystem_intents", func() any {
			fi := obj{"path": pick("/data/kb", "/data/cache")}
			if maybe() {
				fi["mode"] = pick("read_only", "read_write")
			}
			return []any{fi}
		})
		opt("environment_scope", func() any { return append(some("dev", "staging"), "test") })
		opt("evidence", func() any { return append(some("kb.audit", "kb.trace"), "kb.log") })
		opt("timeout_ms", func() any { return r.IntN(3) * 1000 })
		opt("resource_budget", func() any {
			b := obj{}
			for _, k := range []string{"calls", "bytes"} {
				if maybe() {
					b[k] = r.IntN(3) * 10
				}
			}
			return b
		})
		opt("conformance_suite", func() any { return "conformance/kb/v1/basic" })
		opt("autonomy_ceiling", func() any { return pick("act", "act_if_agreed", "ask", "handoff") })
		opt("reversibility", func() any {
			if _, ok := c["compensation"]; ok {
				return pick("reversible", "compensable", "irreversible")
			}
			return pick("reversible", "irreversible")
		})
		opt("data_classes", func() any { return some("personal", "financial") })
		opt("x_vendor", func() any { return "opaque" })
		caps = append(caps, c)
	}
	m["capabilities"] = caps
	return m
}

func pick2(r *rand.Rand, a, b int) int {
	if r.IntN(2) == 0 {
		return a
	}
	return b
}

// mutation widens one field of a manifest, parsed as mv, or reports that it does not apply.
type mutation struct {
	name  string
	apply func(r *rand.Rand, m obj, mv *manifest.Manifest, side *Side) bool
}

// onCap applies f to a random capability of m, with its parsed view.
func onCap(f func(r *rand.Rand, c obj, cv *manifest.Capability) bool) func(*rand.Rand, obj, *manifest.Manifest, *Side) bool {
	return func(r *rand.Rand, m obj, mv *manifest.Manifest, _ *Side) bool {
		caps := m["capabilities"].([]any)
		start := r.IntN(len(caps))
		for k := range caps {
			i := (start + k) % len(caps)
			if f(r, caps[i].(obj), &mv.Capabilities[i]) {
				return true
			}
		}
		return false
	}
}

// lowerIn sets key to a value before cur in order (least to most cautious), if there is one.
func lowerIn[T ~string](c obj, key string, order []T, cur T) bool {
	i := slices.Index(order, cur)
	if i <= 0 {
		return false
	}
	c[key] = string(order[i-1])
	return true
}

var mutations = []mutation{
	{"capability added", func(_ *rand.Rand, m obj, _ *manifest.Manifest, _ *Side) bool {
		m["capabilities"] = append(m["capabilities"].([]any), obj{"id": "kb.org.example.kb.extra", "name": "Extra", "description": "More.",
			"category": "TEXT_QUERY", "parameters": obj{"type": "object"}, "returns": obj{"type": "object"}})
		return true
	}},
	{"risk lowered", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		return lowerIn(c, "risk", manifest.Risks, cv.Risk)
	})},
	{"side effect lowered", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		return lowerIn(c, "side_effects", manifest.SideEffects, cv.SideEffects)
	})},
	{"dry run lowered", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		if !cv.DryRun {
			return false
		}
		c["dry_run"] = false
		return true
	})},
	{"idempotency raised", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		if cv.Idempotency == manifest.IdempotencyNatural {
			return false
		}
		c["idempotency"] = "natural"
		return true
	})},
	{"compensation removed", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		if cv.Compensation == "" || cv.Reversibility == manifest.Compensable {
			return false
		}
		delete(c, "compensation")
		return true
	})},
	{"credential intent added", onCap(func(_ *rand.Rand, c obj, _ *manifest.Capability) bool {
		l, _ := c["credential_intents"].([]any)
		c["credential_intents"] = append(l, "kb.new")
		return true
	})},
	{"network intent added", onCap(func(_ *rand.Rand, c obj, _ *manifest.Capability) bool {
		l, _ := c["network_intents"].([]any)
		c["network_intents"] = append(l, obj{"host": "new.example.net", "port": 443})
		return true
	})},
	{"filesystem intent added", onCap(func(_ *rand.Rand, c obj, _ *manifest.Capability) bool {
		l, _ := c["filesystem_intents"].([]any)
		c["filesystem_intents"] = append(l, obj{"path": "/data/new"})
		return true
	})},
	{"filesystem mode to read_write", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		if len(cv.FilesystemIntents) == 0 || cv.FilesystemIntents[0].Mode == manifest.ModeReadWrite {
			return false
		}
		c["filesystem_intents"].([]any)[0].(obj)["mode"] = "read_write"
		return true
	})},
	{"environment scope entry added", onCap(func(_ *rand.Rand, c obj, _ *manifest.Capability) bool {
		l, _ := c["environment_scope"].([]any)
		c["environment_scope"] = append(l, "prod")
		return true
	})},
	{"evidence removed", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		if len(cv.Evidence) == 0 {
			return false
		}
		delete(c, "evidence")
		return true
	})},
	{"timeout raised", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		if cv.TimeoutMS == 0 {
			return false
		}
		c["timeout_ms"] = 0
		return true
	})},
	{"budget raised", onCap(func(r *rand.Rand, c obj, cv *manifest.Capability) bool {
		for _, k := range []string{"calls", "bytes"} {
			if v, ok := cv.ResourceBudget[k]; ok && v != 0 {
				if r.IntN(2) == 0 {
					delete(c["resource_budget"].(obj), k)
				} else {
					c["resource_budget"].(obj)[k] = v + 1
				}
				return true
			}
		}
		return false
	})},
	{"port major changed or added", func(_ *rand.Rand, m obj, mv *manifest.Manifest, _ *Side) bool {
		if len(mv.Ports) > 0 && mv.Ports[0] == "kb.v1" {
			m["ports"].([]any)[0] = "kb.v7"
			return true
		}
		l, _ := m["ports"].([]any)
		m["ports"] = append(l, "extra.v1")
		return true
	}},
	{"verifying key changed", func(_ *rand.Rand, _ obj, _ *manifest.Manifest, side *Side) bool {
		if side.Signer == "" {
			return false
		}
		side.Signer += "-other"
		return true
	}},
	{"rollback", func(_ *rand.Rand, m obj, mv *manifest.Manifest, _ *Side) bool {
		m["previous_version"] = mv.Version
		m["version"] = "0.1.0"
		return true
	}},
	{"auth level lowered", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		return lowerIn(c, "auth_level", manifest.AuthLevels, cv.AuthLevel)
	})},
	{"confirmation off", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		if !cv.ConfirmationRequired {
			return false
		}
		c["confirmation_required"] = false
		return true
	})},
	{"autonomy raised", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		// Autonomies runs from the most autonomous: "lower" in it is raised toward act.
		return lowerIn(c, "autonomy_ceiling", manifest.Autonomies, cv.AutonomyCeiling)
	})},
	{"undo window shortened or removed", onCap(func(r *rand.Rand, c obj, cv *manifest.Capability) bool {
		if cv.UndoWindowMS == nil || *cv.UndoWindowMS == 0 {
			return false
		}
		if *cv.UndoWindowMS > 1 && r.IntN(2) == 0 {
			c["undo_window_ms"] = *cv.UndoWindowMS - 1
		} else {
			delete(c, "undo_window_ms")
		}
		return true
	})},
	{"less reversible", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		if cv.Reversibility == manifest.Irreversible {
			return false
		}
		c["reversibility"] = "irreversible"
		return true
	})},
	{"permission changed", onCap(func(_ *rand.Rand, c obj, cv *manifest.Capability) bool {
		c["permission"] = "kb.other"
		return true
	})},
}

func clone(t testing.TB, m obj) obj {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var c obj
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// checkSelf checks, for the manifest seed generates, that it does not differ from itself, and
// that mutation k of it (modulo those that apply) is a widening.
func checkSelf(t *testing.T, seed uint64, k int) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	m := genManifest(r)
	doc := parse(t, m)
	side := Side{Doc: doc}
	if r.IntN(2) == 0 {
		side.Digest = digestA
	}
	if r.IntN(2) == 0 {
		side.Signer = "SHA256:key"
	}
	if res := Diff(side, side); res.Verdict != Unchanged || len(res.Changes) != 0 {
		t.Fatalf("seed %d: Diff(a, a) = %s", seed, show(res))
	}
	if got := Recompute(doc, doc); len(got) != 0 {
		t.Fatalf("seed %d: Recompute(a, a) = %s", seed, mustJSON(got))
	}
	// The same manifest parsed again, from its canonical form, is unchanged too.
	again, err := manifest.Parse(doc.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	if res := Diff(side, Side{Doc: again, Digest: side.Digest, Signer: side.Signer}); res.Verdict != Unchanged {
		t.Fatalf("seed %d: Diff(a, canonical a) = %s", seed, show(res))
	}

	for tries := range len(mutations) {
		mu := mutations[(k+tries)%len(mutations)]
		n := clone(t, m)
		delete(n, "previous_version") // a declared previous_version would ask for a declared delta
		newSide := side
		if !mu.apply(r, n, doc.Manifest(), &newSide) {
			continue
		}
		newSide.Doc = parse(t, n)
		if newSide.Digest != "" && mu.name == "rollback" {
			newSide.Digest = digestB
		}
		res := Diff(side, newSide)
		if res.Verdict != Widening {
			t.Fatalf("seed %d, %s: verdict %s, want widening\nold %s\nnew %s\n%s",
				seed, mu.name, res.Verdict, doc.Canonical(), newSide.Doc.Canonical(), show(res))
		}
		return
	}
	t.Fatalf("seed %d: no mutation applies", seed)
}

func TestDiffSelfProperty(t *testing.T) {
	for seed := range uint64(500) {
		checkSelf(t, seed, int(seed))
	}
}

// Every mutation applies to some generated manifest and is caught as a widening.
func TestMutationsCovered(t *testing.T) {
	for k, mu := range mutations {
		applied := false
		for seed := range uint64(200) {
			r := rand.New(rand.NewPCG(seed, 1))
			m := genManifest(r)
			doc := parse(t, m)
			side := Side{Doc: doc, Signer: "SHA256:key"}
			n := clone(t, m)
			delete(n, "previous_version")
			newSide := side
			if !mu.apply(r, n, doc.Manifest(), &newSide) {
				continue
			}
			applied = true
			newSide.Doc = parse(t, n)
			if res := Diff(side, newSide); res.Verdict != Widening {
				t.Fatalf("mutation %d %s, seed %d: verdict %s\n%s", k, mu.name, seed, res.Verdict, show(res))
			}
		}
		if !applied {
			t.Errorf("mutation %s never applied", mu.name)
		}
	}
}

func FuzzDiffSelf(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed, uint8(seed))
	}
	f.Fuzz(func(t *testing.T, seed uint64, k uint8) {
		checkSelf(t, seed, int(k))
	})
}
