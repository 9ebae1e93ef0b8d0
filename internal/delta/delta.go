package delta

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/manifest"
)

// Side is one of the two manifests Diff compares, with what the host learnt about it outside
// the manifest itself.
type Side struct {
	Doc    *manifest.Document // parsed and valid manifest; nil on the old side means no lock entry
	Digest string             // the package digest the host recomputed ("" when diffing bare manifests)
	Signer string             // the verifying key's fingerprint ("" when unsigned or unknown)
}

// Change is one difference between the two manifests.
type Change struct {
	// Path is the index-based field path of the change: an index into the new manifest's
	// lists, or into the old one's for what was removed ("capabilities[3].side_effects",
	// "version"). Member names capgate does not know are quoted.
	Path string `json:"path"`
	// Change says what changed in plain words. Strings from a manifest are quoted with
	// strconv.Quote; free text (descriptions) is reported as changed, never printed.
	Change string `json:"change"`
	// Widening is set when the change hands the app or the agent more and so needs approval.
	Widening bool `json:"widening"`
	// Kind is "widening", "narrowing" (it hands less, or the same in another form) or
	// "neutral" (it hands neither more nor less: a version raised, a digest, a reference
	// to an SBOM or provenance, the declared delta).
	Kind string `json:"kind"`
}

// The kinds of a Change.
const (
	KindWidening  = "widening"
	KindNarrowing = "narrowing"
	KindNeutral   = "neutral"
)

// Verdict sums up a Result.
type Verdict string

// The verdicts, from the most to the least benign. The zero Verdict is none of them.
const (
	Unchanged Verdict = "unchanged" // the documents are canonically equal, with the same digest and signer
	Neutral   Verdict = "neutral"   // only neutral changes: a new version of the same permissions
	Narrowing Verdict = "narrowing" // something changed, nothing widens
	Widening  Verdict = "widening"  // at least one change widens: it needs approval
	Reject    Verdict = "reject"    // the new manifest does not fit the locked one: see Reasons
)

// Result is what Diff finds.
type Result struct {
	Verdict Verdict `json:"verdict"`
	// Changes is never nil. Its order is stable: the top level first, then the capabilities
	// in the new manifest's order, then the capabilities removed, in the old one's order.
	Changes []Change `json:"changes"`
	// Reasons say why the verdict is Reject, in plain words without manifest strings.
	Reasons []string `json:"reasons,omitempty"`
}

// Widens reports whether any change is a widening, whatever the verdict.
func (r Result) Widens() bool {
	for _, c := range r.Changes {
		if c.Widening {
			return true
		}
	}
	return false
}

// The reasons Diff gives for a Reject.
const (
	ReasonNoNewManifest   = "no new manifest"
	ReasonNewInvalid      = "the new manifest is not valid"
	ReasonOldInvalid      = "the locked manifest is not valid"
	ReasonAppID           = "app_id differs from the locked one"
	ReasonSameVersion     = "same version as the locked one (build metadata aside) with a different digest"
	ReasonPreviousVersion = "previous_version is not the locked version"
	ReasonDeclaredDelta   = "declared permissions_delta differs from the recomputed one"
)

// capgateRule ends the text of the widenings capgate adds to the plugin document's list.
const capgateRule = " (a widening by capgate's rule: it hands the agent more)"

// Diff compares old, the locked manifest, with new. A nil old.Doc means there is no lock
// entry: the whole new manifest is a widening, each capability an "added" change. A nil
// new.Doc, or a manifest on either side that breaks a rule of Validate, is a Reject.
//
// Capabilities are matched by id and compared in the Manifest view, defaults filled in; what
// differs only in how it is written (a default written out, the order of a list, a field
// capgate does not interpret) is a narrowing change, so that the verdict is Unchanged only
// when the canonical documents without signature are equal and so are the digests and
// signers. Diff may compile the schemas of either document (through Validate).
func Diff(old, new Side) Result {
	d := &differ{}
	var reasons []string
	if new.Doc == nil {
		return Result{Verdict: Reject, Changes: []Change{}, Reasons: []string{ReasonNoNewManifest}}
	}
	if len(new.Doc.Validate()) > 0 {
		reasons = append(reasons, ReasonNewInvalid)
	}
	if old.Doc == nil {
		d.whole(new.Doc.Manifest())
	} else {
		if len(old.Doc.Validate()) > 0 {
			reasons = append(reasons, ReasonOldInvalid)
		}
		d.compare(old, new)
		reasons = append(reasons, rejections(old, new)...)
	}
	r := Result{Changes: d.changes, Reasons: reasons}
	if r.Changes == nil {
		r.Changes = []Change{}
	}
	switch {
	case len(reasons) > 0:
		r.Verdict = Reject
	case r.Widens():
		r.Verdict = Widening
	case slices.ContainsFunc(r.Changes, func(c Change) bool { return c.Kind != KindNeutral }):
		r.Verdict = Narrowing
	case len(r.Changes) > 0:
		r.Verdict = Neutral
	default:
		r.Verdict = Unchanged
	}
	return r
}

// rejections returns why new cannot replace old at all, whatever it widens.
func rejections(old, new Side) []string {
	var reasons []string
	om, nm := old.Doc.Manifest(), new.Doc.Manifest()
	if om.AppID != nm.AppID {
		reasons = append(reasons, ReasonAppID)
	}
	ov, errOld := manifest.ParseVersion(om.Version)
	nv, errNew := manifest.ParseVersion(nm.Version)
	// A rollback to a version older than the locked one was built before the locked one
	// existed: its previous_version and declared delta speak of its own past, not of the lock.
	// It is a widening (a lower version), reviewed like one, not a reject.
	rollback := errOld == nil && errNew == nil && nv.Compare(ov) < 0
	if errOld == nil && errNew == nil {
		if ov.Compare(nv) == 0 {
			// One version is one content: a recomputed or a declared digest that differs
			// under it is another package wearing the locked one's version.
			if old.Digest != "" && new.Digest != "" && old.Digest != new.Digest || om.Digest != nm.Digest {
				reasons = append(reasons, ReasonSameVersion)
			}
		} else if !rollback && nm.PreviousVersion != om.Version {
			reasons = append(reasons, ReasonPreviousVersion)
		}
	}
	if !rollback && (len(nm.PermissionsDelta) > 0 || nm.PreviousVersion != "") {
		if !sameDelta(nm.PermissionsDelta, Recompute(old.Doc, new.Doc)) {
			reasons = append(reasons, ReasonDeclaredDelta)
		}
	}
	return reasons
}

// differ collects changes.
type differ struct{ changes []Change }

func (d *differ) widen(path, format string, args ...any) {
	d.changes = append(d.changes, Change{Path: path, Change: fmt.Sprintf(format, args...), Widening: true, Kind: KindWidening})
}

func (d *differ) narrow(path, format string, args ...any) {
	d.changes = append(d.changes, Change{Path: path, Change: fmt.Sprintf(format, args...), Kind: KindNarrowing})
}

// neutral records a change that hands neither more nor less.
func (d *differ) neutral(path, format string, args ...any) {
	d.changes = append(d.changes, Change{Path: path, Change: fmt.Sprintf(format, args...), Kind: KindNeutral})
}

// add records a change that widens when wider is set.
func (d *differ) add(wider bool, path, format string, args ...any) {
	if wider {
		d.widen(path, format, args...)
	} else {
		d.narrow(path, format, args...)
	}
}

// addByRule is add for a change that widens by capgate's rule rather than by the plugin
// document's list: the text of a widening ends with capgateRule.
func (d *differ) addByRule(wider bool, path, format string, args ...any) {
	if wider {
		format += capgateRule
	}
	d.add(wider, path, format, args...)
}

// touched reports whether a change has been recorded at path or under it.
func (d *differ) touched(path string) bool {
	for _, c := range d.changes {
		if c.Path == path || strings.HasPrefix(c.Path, path+".") || strings.HasPrefix(c.Path, path+"[") {
			return true
		}
	}
	return false
}

// whole records a manifest with no lock entry: everything in it is new.
func (d *differ) whole(m *manifest.Manifest) {
	d.widen("app_id", "no lock entry: app %s at version %s is new", q(m.AppID), q(m.Version))
	for i, p := range m.Ports {
		d.widen(index("ports", i), "port %s added", q(p))
	}
	for i, c := range m.Capabilities {
		d.widen(index("capabilities", i), "capability %s added", q(c.ID))
	}
}

// compare records every difference between two locked-and-new manifests.
func (d *differ) compare(old, new Side) {
	om, nm := old.Doc.Manifest(), new.Doc.Manifest()
	oRoot, oOK := parseCanonical(old.Doc.Canonical())
	nRoot, nOK := parseCanonical(new.Doc.Canonical())

	if om.AppID != nm.AppID {
		d.narrow("app_id", "app_id changed from %s to %s", q(om.AppID), q(nm.AppID))
	}
	d.version(om.Version, nm.Version)
	if om.PreviousVersion != nm.PreviousVersion {
		d.neutral("previous_version", "previous_version changed from %s to %s", optQ(om.PreviousVersion), optQ(nm.PreviousVersion))
	}
	if om.ManifestVersion != nm.ManifestVersion {
		d.neutral("manifest_version", "manifest_version changed from %s to %s", q(om.ManifestVersion), q(nm.ManifestVersion))
	}
	if om.Kind != nm.Kind {
		d.widen("kind", "kind changed from %s to %s", word(string(om.Kind)), word(string(nm.Kind)))
	}
	d.ports(om.Ports, nm.Ports)
	d.signer("signer", "declared signer", om.Signer, nm.Signer)
	d.signer("signature", "verifying key", old.Signer, new.Signer)
	if old.Digest != new.Digest {
		d.neutral("digest", "package digest changed from %s to %s", optQ(old.Digest), optQ(new.Digest))
	}
	if om.Digest != nm.Digest {
		d.neutral("digest", "declared digest changed from %s to %s", optQ(om.Digest), optQ(nm.Digest))
	}
	if !sameReference(om.SBOMRef, nm.SBOMRef) {
		d.neutral("sbom_ref", "sbom_ref changed")
	}
	if !sameReference(om.ProvenanceRef, nm.ProvenanceRef) {
		d.neutral("provenance_ref", "provenance_ref changed")
	}
	if !sameDelta(om.PermissionsDelta, nm.PermissionsDelta) {
		d.neutral("permissions_delta", "declared permissions_delta changed")
	}
	if !sameTime(om, nm) {
		d.narrow("deprecated_after", "deprecated_after changed")
	}
	d.events(om.Events, nm.Events)
	if oOK && nOK {
		d.residue("", oRoot, nRoot, "capabilities")
	}
	d.capabilities(om, nm, oRoot, nRoot, oOK && nOK)

	if len(d.changes) == 0 && !bytes.Equal(old.Doc.Canonical(), new.Doc.Canonical()) {
		// Unreachable while residue covers every member; kept so that different documents
		// can never be reported unchanged.
		d.narrow("", "document changed")
	}
}

func (d *differ) version(o, n string) {
	if o == n {
		return
	}
	ov, err1 := manifest.ParseVersion(o)
	nv, err2 := manifest.ParseVersion(n)
	switch {
	case err1 != nil || err2 != nil:
		d.widen("version", "version changed from %s to %s, one of which is not SemVer", q(o), q(n))
	case nv.Compare(ov) < 0:
		d.widen("version", "version lowered from %s to %s (a rollback)", q(o), q(n))
	case nv.Compare(ov) > 0:
		d.neutral("version", "version raised from %s to %s", q(o), q(n))
	default:
		d.neutral("version", "version changed from %s to %s, equal in SemVer precedence (build metadata)", q(o), q(n))
	}
}

// ports compares ports by name: a port added, or one whose major changed, is a widening.
func (d *differ) ports(o, n []string) {
	old := map[string]string{}
	for _, p := range o {
		name, major := splitPort(p)
		if _, dup := old[name]; !dup {
			old[name] = major
		}
	}
	seen := map[string]bool{}
	for i, p := range n {
		name, major := splitPort(p)
		seen[name] = true
		switch om, ok := old[name]; {
		case !ok:
			d.widen(index("ports", i), "port %s added", q(p))
		case om != major:
			d.widen(index("ports", i), "port %s major changed from %s to %s", q(name), q(om), q(major))
		}
	}
	for i, p := range o {
		if name, _ := splitPort(p); !seen[name] {
			seen[name] = true
			d.narrow(index("ports", i), "port %s removed", q(p))
		}
	}
}

// splitPort splits "files.v1" into "files" and "v1".
func splitPort(p string) (name, major string) {
	if i := strings.LastIndex(p, ".v"); i >= 0 {
		return p[:i], p[i+1:]
	}
	return p, ""
}

// signer compares signers: a different one, or none where the lock had one, widens; a signer
// where the lock had none is a narrowing.
func (d *differ) signer(path, what, o, n string) {
	switch {
	case o == n:
	case o != "" && n != "":
		d.widen(path, "%s changed from %s to %s", what, q(o), q(n))
	case o != "":
		d.widen(path, "%s %s removed: no longer signed as locked", what, q(o))
	default:
		d.narrow(path, "%s %s added where the lock had none", what, q(n))
	}
}

// events compares events by event type; every event change is a narrowing.
func (d *differ) events(o, n []manifest.Event) {
	old := map[string]manifest.Event{}
	for _, e := range o {
		old[e.EventType] = e
	}
	seen := map[string]bool{}
	for i, e := range n {
		seen[e.EventType] = true
		p := index("events", i)
		oe, ok := old[e.EventType]
		switch {
		case !ok:
			d.narrow(p, "event %s added", q(e.EventType))
		case oe.Description != e.Description:
			d.narrow(field(p, "description"), "description changed")
		}
		if ok && !sameJSON(oe.PayloadSchema, e.PayloadSchema) {
			d.narrow(field(p, "payload_schema"), "payload schema changed")
		}
	}
	for i, e := range o {
		if !seen[e.EventType] {
			seen[e.EventType] = true
			d.narrow(index("events", i), "event %s removed", q(e.EventType))
		}
	}
}

// residue records, as a narrowing, every member of the objects o and n (but skip) whose
// canonical form differs while no change was recorded under its path: defaults written out,
// lists reordered, fields capgate does not interpret.
func (d *differ) residue(prefix string, o, n jcs.Value, skip string) {
	var names []string
	seen := map[string]bool{}
	for _, vs := range [][]jcs.Member{o.Members, n.Members} {
		for _, m := range vs {
			if !seen[m.Name] && m.Name != skip {
				seen[m.Name] = true
				names = append(names, m.Name)
			}
		}
	}
	for _, name := range names {
		ov, inOld := o.Get(name)
		nv, inNew := n.Get(name)
		p := field(prefix, memberPath(name))
		if d.touched(p) {
			continue
		}
		switch {
		case !inOld:
			d.narrow(p, "member added, with the same meaning as before or one capgate does not interpret")
		case !inNew:
			d.narrow(p, "member removed, with the same meaning as before or one capgate does not interpret")
		case !bytes.Equal(canonical(ov), canonical(nv)):
			d.narrow(p, "changed in form only (order, written-out default) or in a member capgate does not interpret")
		}
	}
}

// parseCanonical parses canonical bytes made by the manifest package.
func parseCanonical(b []byte) (jcs.Value, bool) {
	v, err := jcs.Parse(b, &jcs.Options{MaxDepth: manifest.MaxDepth, MaxBytes: 4 * manifest.MaxManifestBytes})
	return v, err == nil && v.Kind == jcs.Object
}

func canonical(v jcs.Value) []byte {
	b, err := v.AppendCanonical(nil)
	if err != nil {
		return nil
	}
	return b
}

// sameJSON reports whether two JSON texts are the same value: byte-equal, or equal once
// canonicalized. Absent and empty are the same.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	ca, err1 := jcs.Canonicalize(a)
	cb, err2 := jcs.Canonicalize(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

func sameReference(a, b *manifest.Reference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func sameTime(a, b *manifest.Manifest) bool {
	if a.DeprecatedAfter == nil || b.DeprecatedAfter == nil {
		return a.DeprecatedAfter == b.DeprecatedAfter
	}
	return a.DeprecatedAfter.Equal(*b.DeprecatedAfter)
}

// q quotes a string from a manifest, so that no control character reaches a terminal.
func q(s string) string { return strconv.Quote(s) }

// optQ quotes s, or says "none" when it is empty.
func optQ(s string) string {
	if s == "" {
		return "none"
	}
	return q(s)
}

// word prints an enumerated value bare when it is a plain word, as valid manifests' are, and
// quoted otherwise.
func word(s string) string {
	if s == "" {
		return "none"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return q(s)
		}
	}
	return s
}

// memberPath is a member name as a path element: bare when it is a plain snake_case name,
// quoted otherwise.
func memberPath(name string) string {
	if name == "" {
		return q(name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return q(name)
		}
	}
	return name
}

func field(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func index(prefix string, i int) string { return prefix + "[" + strconv.Itoa(i) + "]" }
