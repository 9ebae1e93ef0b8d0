package delta

import (
	"slices"
	"strings"

	"github.com/capgate/capgate/manifest"
)

// Recompute returns the permissions delta from old to new in the manifest's own form: for
// every capability added, removed or changed, its id as Name, its canonical form in old as
// Previous (absent when added) and in new as Current (absent when removed), sorted by Name.
// A capability counts as changed when its canonical form as received differs at all,
// unknown members included. A nil old or new is a manifest without capabilities. The result
// is empty, never nil, when nothing changed.
func Recompute(old, new *manifest.Document) []manifest.CapabilityChange {
	var ids []string
	seen := map[string]bool{}
	for _, doc := range []*manifest.Document{old, new} {
		if doc == nil {
			continue
		}
		for _, c := range doc.Manifest().Capabilities {
			if !seen[c.ID] {
				seen[c.ID] = true
				ids = append(ids, c.ID)
			}
		}
	}
	slices.Sort(ids)
	out := []manifest.CapabilityChange{}
	for _, id := range ids {
		var prev, cur []byte
		if old != nil {
			prev = old.CapabilityCanonical(id)
		}
		if new != nil {
			cur = new.CapabilityCanonical(id)
		}
		if sameJSON(prev, cur) {
			continue
		}
		out = append(out, manifest.CapabilityChange{Name: id, Previous: prev, Current: cur})
	}
	return out
}

// sameDelta reports whether a declared permissions delta says what another says: the same
// names, each once, with equal previous and current capabilities as canonical JSON, in any
// order.
func sameDelta(declared, recomputed []manifest.CapabilityChange) bool {
	if len(declared) != len(recomputed) {
		return false
	}
	sorted := func(cs []manifest.CapabilityChange) []manifest.CapabilityChange {
		cs = slices.Clone(cs)
		slices.SortStableFunc(cs, func(a, b manifest.CapabilityChange) int { return strings.Compare(a.Name, b.Name) })
		return cs
	}
	a, b := sorted(declared), sorted(recomputed)
	for i := range a {
		if i > 0 && a[i].Name == a[i-1].Name {
			return false
		}
		if a[i].Name != b[i].Name || !sameJSON(a[i].Previous, b[i].Previous) || !sameJSON(a[i].Current, b[i].Current) {
			return false
		}
	}
	return true
}
