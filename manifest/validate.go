package manifest

import (
	"strings"
)

// validate applies the rules that span fields, after decoding: capability ids in the
// manifest's own app id space, no duplicates, compensation within the manifest, and what the
// kind allows.
func (d *decoder) validate(m *Manifest) {
	first := map[string]int{}
	for i, c := range m.Capabilities {
		p := index("capabilities", i)
		if c.ID == "" {
			continue
		}
		id, err := ParseCapabilityID(c.ID)
		switch {
		case err != nil:
			d.add(field(p, "id"), "must be {domain}.{app_id}.{action}: domain [a-z][a-z0-9]*, this manifest's app_id, action [a-z][a-z0-9_]*")
		case m.AppID != "" && id.AppID().String() != m.AppID:
			d.add(field(p, "id"), "must have this manifest's app_id between its domain and its action")
		}
		if j, dup := first[c.ID]; dup {
			d.add(field(p, "id"), "duplicate capability id (first at "+index("capabilities", j)+")")
		} else {
			first[c.ID] = i
		}
	}
	for i, c := range m.Capabilities {
		p := index("capabilities", i)
		if c.Compensation != "" {
			if _, ok := first[c.Compensation]; !ok || c.Compensation == c.ID {
				d.add(field(p, "compensation"), "must name another capability of this manifest")
			}
		}
		if c.Reversibility == Compensable && c.Compensation == "" {
			d.add(field(p, "compensation"), "required when reversibility is compensable")
		}
		if c.Reversibility == Reversible && c.UndoWindowMS != nil && *c.UndoWindowMS == 0 {
			d.add(field(p, "undo_window_ms"), "must be above 0 when reversibility is reversible")
		}
	}
	events := map[string]bool{}
	for i, e := range m.Events {
		if e.EventType == "" {
			continue
		}
		if events[e.EventType] {
			d.add(field(index("events", i), "event_type"), "duplicate event type")
		}
		events[e.EventType] = true
	}
	if m.Kind != "" && m.Kind != KindCapabilityProvider {
		if len(m.Capabilities) > 0 {
			d.add("capabilities", "only a capability_provider may declare capabilities")
		}
		if len(m.Ports) > 0 {
			d.add("ports", "only a capability_provider may declare ports")
		}
	}
	majors := map[string]int{}
	for i, port := range m.Ports {
		name := port[:strings.LastIndex(port, ".v")]
		if j, dup := majors[name]; dup {
			d.add(index("ports", i), "at most one major per port (another at "+index("ports", j)+")")
		}
		majors[name] = i
	}
	if m.PreviousVersion != "" && m.Version != "" {
		prev, err1 := ParseVersion(m.PreviousVersion)
		cur, err2 := ParseVersion(m.Version)
		if err1 == nil && err2 == nil && prev.Compare(cur) == 0 {
			d.add("previous_version", "must differ from version")
		}
	}
}
