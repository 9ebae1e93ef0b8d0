package manifest

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/jcs"
)

// The member names of each object of the format. A member that differs from one of these only
// by case (or by Unicode case folding, such as the Kelvin sign for k) is refused: a lenient
// decoder would read it as the known field while a reviewer reads it as an unknown one.
var (
	manifestFields = []string{
		"app_id", "version", "manifest_version", "capabilities", "events", "signature",
		"kind", "ports", "digest", "signer", "sbom_ref", "provenance_ref", "previous_version",
		"permissions_delta", "deprecated_after",
	}
	capabilityFields = []string{
		"id", "name", "description", "category", "parameters", "returns", "side_effects",
		"confirmation_required", "undo_window_ms", "version", "auth_level",
		"permission", "risk",
		"idempotency", "dry_run", "compensation", "credential_intents", "network_intents",
		"filesystem_intents", "environment_scope", "evidence", "timeout_ms", "resource_budget",
		"conformance_suite",
		"implements", "extends", "examples", "autonomy_ceiling", "reversibility", "data_classes", "surface",
	}
	eventFields            = []string{"event_type", "description", "payload_schema"}
	networkIntentFields    = []string{"host", "port"}
	filesystemIntentFields = []string{"path", "mode"}
	referenceFields        = []string{"path", "digest"}
	changeFields           = []string{"name", "previous", "current"}
)

var (
	credentialIntentPattern = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,127}$`)
	namePattern             = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,127}$`)
	budgetKeyPattern        = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	portPattern             = regexp.MustCompile(`^[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)*\.v[1-9][0-9]{0,8}$`)
	conformancePattern      = regexp.MustCompile(`^conformance/[a-z][a-z0-9]*/v[1-9][0-9]{0,8}/[a-z][a-z0-9_-]{0,63}$`)
)

// decoder turns a parsed JSON document into a Manifest, collecting every problem on the way
// rather than stopping at the first.
type decoder struct{ ps Problems }

func (d *decoder) add(path, rule string) { d.ps = append(d.ps, Problem{Path: path, Rule: rule}) }

// obj is an object being decoded, at path.
type obj struct {
	d    *decoder
	path string
	v    jcs.Value
}

// object checks that v is an object and that no member name differs from a known one only by
// case.
func (d *decoder) object(v jcs.Value, path string, known []string) (obj, bool) {
	if v.Kind != jcs.Object {
		d.add(path, "must be an object")
		return obj{}, false
	}
	for _, m := range v.Members {
		if !mayFold(m.Name) {
			continue
		}
		for _, k := range known {
			if m.Name != k && strings.EqualFold(m.Name, k) {
				d.add(field(path, k), "a member name differs from this field only by case")
			}
		}
	}
	return obj{d: d, path: path, v: v}, true
}

// mayFold reports whether name could fold to a known field without being it: known fields are
// lowercase ASCII, so only a name with an upper-case or non-ASCII byte can (the Kelvin sign
// and the long s fold to k and s).
func mayFold(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
			return true
		}
	}
	return false
}

// get returns the member's value; a JSON null counts as absent.
func (o obj) get(name string) (jcs.Value, bool) {
	v, ok := o.v.Get(name)
	if !ok || v.Kind == jcs.Null {
		return jcs.Value{}, false
	}
	return v, true
}

func (o obj) missing(name string, required bool) {
	if required {
		if _, present := o.v.Get(name); present {
			o.d.add(field(o.path, name), "must not be null")
		} else {
			o.d.add(field(o.path, name), "required")
		}
	}
}

func (o obj) str(name string, required bool) string {
	v, ok := o.get(name)
	if !ok {
		o.missing(name, required)
		return ""
	}
	if v.Kind != jcs.String {
		o.d.add(field(o.path, name), "must be a string")
		return ""
	}
	if required && v.Str == "" {
		o.d.add(field(o.path, name), "must not be empty")
	}
	return v.Str
}

func (o obj) boolean(name string) bool {
	v, ok := o.get(name)
	if !ok {
		return false
	}
	if v.Kind != jcs.Bool {
		o.d.add(field(o.path, name), "must be a boolean")
		return false
	}
	return v.Bool
}

// integer reads a JSON number that is an integer in [min, max]. JSON Schema counts 1.0 as an
// integer, and so does this.
func (o obj) integer(name string, min, max int64) (int64, bool) {
	v, ok := o.get(name)
	if !ok {
		return 0, false
	}
	return o.d.integer(v, field(o.path, name), min, max)
}

func (d *decoder) integer(v jcs.Value, path string, min, max int64) (int64, bool) {
	if v.Kind != jcs.Number || v.Float != math.Trunc(v.Float) || math.Abs(v.Float) > 1<<53 {
		d.add(path, "must be an integer")
		return 0, false
	}
	n := int64(v.Float)
	if n < min || n > max {
		d.add(path, fmt.Sprintf("must be between %d and %d", min, max))
		return 0, false
	}
	return n, true
}

// list reads an array, calling each for every entry. Lists other than capabilities and events
// hold at most MaxListEntries entries.
func (o obj) list(name string, required bool, each func(v jcs.Value, path string)) bool {
	v, ok := o.get(name)
	if !ok {
		o.missing(name, required)
		return false
	}
	p := field(o.path, name)
	if v.Kind != jcs.Array {
		o.d.add(p, "must be an array")
		return false
	}
	limit := MaxListEntries
	switch {
	case o.path == "" && name == "capabilities":
		limit = MaxCapabilities
	case o.path == "" && name == "events":
		limit = MaxEvents
	}
	if len(v.Items) > limit {
		o.d.add(p, fmt.Sprintf("more than %d entries", limit))
		return false
	}
	for i, it := range v.Items {
		each(it, index(p, i))
	}
	return true
}

// strings reads an array of strings, each checked by pattern (nil: any non-empty string).
func (o obj) strings(name string, pattern *regexp.Regexp, rule string) []string {
	var out []string
	o.list(name, false, func(v jcs.Value, p string) {
		switch {
		case v.Kind != jcs.String:
			o.d.add(p, "must be a string")
		case pattern != nil && !pattern.MatchString(v.Str):
			o.d.add(p, rule)
		case v.Str == "":
			o.d.add(p, "must not be empty")
		case len(v.Str) > MaxShortStringBytes:
			o.d.add(p, fmt.Sprintf("longer than %d bytes", MaxShortStringBytes))
		default:
			out = append(out, v.Str)
		}
	})
	return out
}

// schema reads a JSON Schema member; it must be an object. The schema is kept as its canonical
// bytes; whether it compiles is a rule of Validate.
func (o obj) schema(name string, required bool) json.RawMessage {
	v, ok := o.get(name)
	if !ok {
		o.missing(name, required)
		return nil
	}
	if v.Kind != jcs.Object {
		o.d.add(field(o.path, name), "must be a JSON Schema object")
		return nil
	}
	return canonicalBytes(v)
}

// enum reads a string member that must be one of values.
func enum[T ~string](o obj, name string, required bool, valid func(T) bool, values []T) T {
	s := o.str(name, required)
	if s == "" {
		return ""
	}
	if t := T(s); valid(t) {
		return t
	}
	words := make([]string, len(values))
	for i, v := range values {
		words[i] = string(v)
	}
	o.d.add(field(o.path, name), "must be one of "+strings.Join(words, ", "))
	return ""
}

func canonicalBytes(v jcs.Value) json.RawMessage {
	b, err := v.AppendCanonical(nil)
	if err != nil {
		// The parser only builds values that have a canonical form.
		panic("manifest: parsed value has no canonical form: " + err.Error())
	}
	return b
}

// decodeManifest decodes the document root.
func (d *decoder) decodeManifest(root jcs.Value) *Manifest {
	o, ok := d.object(root, "", manifestFields)
	if !ok {
		return &Manifest{}
	}
	m := &Manifest{}
	m.AppID = o.str("app_id", true)
	if m.AppID != "" {
		if _, err := ParseAppID(m.AppID); err != nil {
			d.add("app_id", "must be a reverse-DNS name: "+appIDRule(m.AppID))
		}
	}
	m.Version = o.str("version", true)
	if m.Version != "" {
		if _, err := ParseVersion(m.Version); err != nil {
			d.add("version", "must be a SemVer 2.0.0 version")
		}
	}
	m.ManifestVersion = o.str("manifest_version", true)
	if m.ManifestVersion != "" {
		if _, err := ParseMinorVersion(m.ManifestVersion); err != nil {
			d.add("manifest_version", `must match ^\d+\.\d+$`)
		}
	}
	if v, ok := o.v.Get("signature"); ok && v.Kind != jcs.Null && v.Kind != jcs.String {
		d.add("signature", "must be a string or null")
	} else if ok {
		m.Signature = v.Str
	}
	o.list("capabilities", true, func(v jcs.Value, p string) {
		m.Capabilities = append(m.Capabilities, d.decodeCapability(v, p))
	})
	o.list("events", false, func(v jcs.Value, p string) {
		m.Events = append(m.Events, d.decodeEvent(v, p))
	})

	m.Kind = enum(o, "kind", false, Kind.Valid, Kinds)
	m.Ports = o.strings("ports", portPattern, `must be a port name and major such as "files.v1"`)
	if s := o.str("digest", false); s != "" {
		if _, err := ParseDigest(s); err != nil {
			d.add("digest", `must be "sha256:" and 64 lowercase hex digits`)
		}
		m.Digest = s
	}
	m.Signer = o.str("signer", false)
	m.SBOMRef = d.decodeReference(o, "sbom_ref")
	m.ProvenanceRef = d.decodeReference(o, "provenance_ref")
	if s := o.str("previous_version", false); s != "" {
		if _, err := ParseVersion(s); err != nil {
			d.add("previous_version", "must be a SemVer 2.0.0 version")
		}
		m.PreviousVersion = s
	}
	o.list("permissions_delta", false, func(v jcs.Value, p string) {
		co, ok := d.object(v, p, changeFields)
		if !ok {
			return
		}
		c := CapabilityChange{Name: co.str("name", true)}
		for _, side := range []string{"previous", "current"} {
			if sv, ok := co.get(side); ok {
				if sv.Kind != jcs.Object {
					d.add(field(p, side), "must be an object")
					continue
				}
				if side == "previous" {
					c.Previous = canonicalBytes(sv)
				} else {
					c.Current = canonicalBytes(sv)
				}
			}
		}
		if c.Previous == nil && c.Current == nil {
			d.add(p, "needs previous, current or both")
		}
		m.PermissionsDelta = append(m.PermissionsDelta, c)
	})
	if s := o.str("deprecated_after", false); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			d.add("deprecated_after", "must be an RFC 3339 timestamp")
		} else {
			m.DeprecatedAfter = &t
		}
	}
	return m
}

func (d *decoder) decodeReference(o obj, name string) *Reference {
	v, ok := o.get(name)
	if !ok {
		return nil
	}
	p := field(o.path, name)
	ro, ok := d.object(v, p, referenceFields)
	if !ok {
		return nil
	}
	r := &Reference{Path: ro.str("path", true), Digest: ro.str("digest", true)}
	if r.Path != "" && (strings.HasPrefix(r.Path, "/") || strings.Contains(r.Path, "\\")) {
		d.add(field(p, "path"), "must be a slash-separated path relative to the package root")
	}
	if r.Digest != "" {
		if _, err := ParseDigest(r.Digest); err != nil {
			d.add(field(p, "digest"), `must be "sha256:" and 64 lowercase hex digits`)
		}
	}
	return r
}

func (d *decoder) decodeEvent(v jcs.Value, p string) Event {
	o, ok := d.object(v, p, eventFields)
	if !ok {
		return Event{}
	}
	e := Event{EventType: o.str("event_type", true), Description: o.str("description", true)}
	if len(e.Description) > MaxDescriptionBytes {
		d.add(field(p, "description"), fmt.Sprintf("longer than %d bytes", MaxDescriptionBytes))
	}
	if len(e.EventType) > MaxShortStringBytes {
		d.add(field(p, "event_type"), fmt.Sprintf("longer than %d bytes", MaxShortStringBytes))
	}
	e.PayloadSchema = o.schema("payload_schema", false)
	return e
}

func (d *decoder) decodeCapability(v jcs.Value, p string) Capability {
	o, ok := d.object(v, p, capabilityFields)
	if !ok {
		return Capability{}
	}
	c := Capability{}
	c.ID = o.str("id", true)
	c.Name = o.str("name", true)
	if len(c.Name) > MaxNameBytes {
		d.add(field(p, "name"), fmt.Sprintf("longer than %d bytes", MaxNameBytes))
	}
	c.Description = o.str("description", true)
	if len(c.Description) > MaxDescriptionBytes {
		d.add(field(p, "description"), fmt.Sprintf("longer than %d bytes", MaxDescriptionBytes))
	}
	c.Category = enum(o, "category", true, Category.Valid, Categories)
	c.Parameters = o.schema("parameters", true)
	c.Returns = o.schema("returns", true)
	c.SideEffects = enum(o, "side_effects", false, SideEffect.Valid, SideEffects)
	c.ConfirmationRequired = o.boolean("confirmation_required")
	if n, ok := o.integer("undo_window_ms", 0, math.MaxInt64); ok {
		c.UndoWindowMS = &n
	}
	if s := o.str("version", false); s != "" {
		if _, err := ParseMinorVersion(s); err != nil {
			d.add(field(p, "version"), `must match ^\d+\.\d+$`)
		}
		c.Version = s
	}
	c.AuthLevel = enum(o, "auth_level", false, AuthLevel.Valid, AuthLevels)

	if s := o.str("permission", false); s != "" {
		if _, err := ParsePermission(s); err != nil {
			d.add(field(p, "permission"), "must be a dotted name of at least two segments, each [a-z]([a-z0-9_-]*[a-z0-9_])?")
		}
		c.Permission = s
	}
	c.Risk = enum(o, "risk", false, Risk.Valid, Risks)

	c.Idempotency = enum(o, "idempotency", false, Idempotency.Valid, Idempotencies)
	c.DryRun = o.boolean("dry_run")
	c.Compensation = o.str("compensation", false)
	c.CredentialIntents = o.strings("credential_intents", credentialIntentPattern, "must match ^[a-z][a-z0-9._-]{0,127}$")
	o.list("network_intents", false, func(v jcs.Value, ip string) {
		io, ok := d.object(v, ip, networkIntentFields)
		if !ok {
			return
		}
		ni := NetworkIntent{Host: io.str("host", true)}
		if port, ok := io.integer("port", 1, 65535); ok {
			ni.Port = int(port)
		} else if _, present := io.get("port"); !present {
			io.missing("port", true)
		}
		c.NetworkIntents = append(c.NetworkIntents, ni)
	})
	o.list("filesystem_intents", false, func(v jcs.Value, ip string) {
		io, ok := d.object(v, ip, filesystemIntentFields)
		if !ok {
			return
		}
		fi := FilesystemIntent{Path: io.str("path", true)}
		if fi.Path != "" && !strings.HasPrefix(fi.Path, "/") {
			d.add(field(ip, "path"), "must be an absolute path")
		}
		fi.Mode = enum(io, "mode", false, FilesystemMode.Valid, []FilesystemMode{ModeReadOnly, ModeReadWrite})
		c.FilesystemIntents = append(c.FilesystemIntents, fi)
	})
	if _, present := o.get("environment_scope"); present {
		c.EnvironmentScope = o.strings("environment_scope", nil, "")
		if ev, _ := o.get("environment_scope"); ev.Kind == jcs.Array && len(ev.Items) == 0 {
			d.add(field(p, "environment_scope"), "must not be empty: an empty scope is never read as all")
		}
		for i, s := range c.EnvironmentScope {
			if strings.EqualFold(s, "all") {
				d.add(index(field(p, "environment_scope"), i), `must name an environment or tag, never "all"`)
			}
		}
	}
	c.Evidence = o.strings("evidence", namePattern, "must match ^[a-z][a-z0-9._-]{0,127}$")
	if n, ok := o.integer("timeout_ms", 0, math.MaxInt64); ok {
		c.TimeoutMS = n
	}
	if bv, ok := o.get("resource_budget"); ok {
		bp := field(p, "resource_budget")
		if bv.Kind != jcs.Object {
			d.add(bp, "must be an object")
		} else {
			c.ResourceBudget = map[string]int64{}
			for _, mem := range bv.Members {
				if !budgetKeyPattern.MatchString(mem.Name) {
					d.add(bp, "member names must match ^[a-z][a-z0-9_]{0,63}$")
					continue
				}
				if n, ok := d.integer(mem.Value, field(bp, mem.Name), 0, math.MaxInt64); ok {
					c.ResourceBudget[mem.Name] = n
				}
			}
		}
	}
	if s := o.str("conformance_suite", false); s != "" {
		if !conformancePattern.MatchString(s) {
			d.add(field(p, "conformance_suite"), "must be conformance/<port>/v<major>/<suite>")
		}
		c.ConformanceSuite = s
	}

	for _, name := range []string{"implements", "extends"} {
		if s := o.str(name, false); s != "" {
			if _, err := ParseDefinitionRef(s); err != nil {
				d.add(field(p, name), "must be a definition name and @major.minor")
			}
			if name == "implements" {
				c.Implements = s
			} else {
				c.Extends = s
			}
		}
	}
	o.list("examples", false, func(v jcs.Value, _ string) {
		c.Examples = append(c.Examples, canonicalBytes(v))
	})
	c.AutonomyCeiling = enum(o, "autonomy_ceiling", false, Autonomy.Valid, Autonomies)
	c.Reversibility = enum(o, "reversibility", false, Reversibility.Valid, Reversibilities)
	c.DataClasses = o.strings("data_classes", namePattern, "must match ^[a-z][a-z0-9._-]{0,127}$")
	c.Surface = o.strings("surface", namePattern, "must match ^[a-z][a-z0-9._-]{0,127}$")
	return c
}
