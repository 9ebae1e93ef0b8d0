package manifest

// The model (Manifest, Capability) keeps the app id, version, capability id and permission as
// the text the document holds, and these accessors give them as value types. That is the
// choice rather than typed fields because a Manifest exists before it is valid: the decoder
// goes on past a bad id so that Validate can report every problem with its field path, and a
// typed field could only hold the zero value there, losing what the rules of later fields
// (a duplicate id, a compensation naming another capability) compare. Code past the edge (the
// registry, which indexes only valid manifests) calls these once and carries the values; each
// parses on every call; those of ids allocate nothing for valid text.

// ParsedAppID returns the manifest's app_id as an AppID, the zero AppID when it breaks the
// grammar (Validate reports it).
func (m *Manifest) ParsedAppID() AppID {
	id, _ := ParseAppID(m.AppID) // the zero AppID on error
	return id
}

// ParsedVersion returns the manifest's version, the zero Version when it is not SemVer 2.0.0
// (Validate reports it).
func (m *Manifest) ParsedVersion() Version {
	v, _ := ParseVersion(m.Version) // the zero Version on error
	return v
}

// ParsedID returns the capability's id as a CapabilityID, the zero CapabilityID when it breaks
// the grammar (Validate reports it). That its app id is the manifest's own is a rule of
// Validate, not of this accessor.
func (c *Capability) ParsedID() CapabilityID {
	id, _ := ParseCapabilityID(c.ID) // the zero CapabilityID on error
	return id
}

// ParsedPermission returns the permission a token must grant to call the capability: its
// permission field, or, when it declares none, its id (the manifest default, so a Capability
// whose defaults are not filled in reads alike). The zero Permission when the text breaks the
// grammar (Validate reports it).
func (c *Capability) ParsedPermission() Permission {
	if c.Permission == "" {
		return c.ParsedID().Permission()
	}
	p, _ := ParsePermission(c.Permission) // the zero Permission on error
	return p
}
