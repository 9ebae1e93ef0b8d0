package delta

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/manifest"
)

// capabilities compares the capabilities of two manifests, matched by id: those of the new
// manifest in its order, then those removed in the old one's order. withRoots says whether
// the canonical roots could be parsed, for the comparison of what the Manifest view hides.
func (d *differ) capabilities(om, nm *manifest.Manifest, oRoot, nRoot jcs.Value, withRoots bool) {
	oldAt := map[string]int{}
	for i, c := range om.Capabilities {
		if _, dup := oldAt[c.ID]; !dup {
			oldAt[c.ID] = i
		}
	}
	oRaw, nRaw := rawCapabilities(oRoot), rawCapabilities(nRoot)

	// The order of the capabilities both manifests hold.
	var oOrder, nOrder []string
	newIDs := map[string]bool{}
	for _, c := range nm.Capabilities {
		newIDs[c.ID] = true
		if _, ok := oldAt[c.ID]; ok {
			nOrder = append(nOrder, c.ID)
		}
	}
	for _, c := range om.Capabilities {
		if newIDs[c.ID] {
			oOrder = append(oOrder, c.ID)
		}
	}
	if !slices.Equal(oOrder, nOrder) {
		d.narrow("capabilities", "capabilities reordered")
	}

	for i := range nm.Capabilities {
		n := &nm.Capabilities[i]
		p := index("capabilities", i)
		j, ok := oldAt[n.ID]
		if !ok {
			d.widen(p, "capability %s added", q(n.ID))
			continue
		}
		d.capability(p, &om.Capabilities[j], n)
		if withRoots && j < len(oRaw) && i < len(nRaw) {
			d.residue(p, oRaw[j], nRaw[i], "")
		}
	}
	for i, c := range om.Capabilities {
		if !newIDs[c.ID] {
			d.narrow(index("capabilities", i), "capability %s removed", q(c.ID))
		}
	}
}

// rawCapabilities returns the capabilities array of a canonical root, in document order.
func rawCapabilities(root jcs.Value) []jcs.Value {
	v, ok := root.Get("capabilities")
	if !ok || v.Kind != jcs.Array {
		return nil
	}
	return v.Items
}

// capability compares one capability of the locked manifest, o, with the same capability of
// the new one, n, at path p, in the Manifest view (defaults filled in).
func (d *differ) capability(p string, o, n *manifest.Capability) {
	at := func(name string) string { return field(p, name) }

	if o.Name != n.Name {
		d.narrow(at("name"), "name changed from %s to %s", q(o.Name), q(n.Name))
	}
	if o.Description != n.Description {
		d.narrow(at("description"), "description changed")
	}
	if o.Category != n.Category {
		d.narrow(at("category"), "category changed from %s to %s", word(string(o.Category)), word(string(n.Category)))
	}
	if !sameJSON(o.Parameters, n.Parameters) {
		d.narrow(at("parameters"), "parameters schema changed")
	}
	if !sameJSON(o.Returns, n.Returns) {
		d.narrow(at("returns"), "returns schema changed")
	}
	if o.SideEffects != n.SideEffects {
		wider := lower(manifest.SideEffects, o.SideEffects, n.SideEffects)
		d.add(wider, at("side_effects"), "side effect %s from %s to %s", direction(wider, "lowered", "raised"), word(string(o.SideEffects)), word(string(n.SideEffects)))
	}
	if o.ConfirmationRequired != n.ConfirmationRequired {
		if n.ConfirmationRequired {
			d.narrow(at("confirmation_required"), "confirmation now required")
		} else {
			d.widen(at("confirmation_required"), "confirmation no longer required"+capgateRule)
		}
	}
	d.undoWindow(at("undo_window_ms"), o.UndoWindowMS, n.UndoWindowMS)
	if o.Version != n.Version {
		d.narrow(at("version"), "capability version changed from %s to %s", q(o.Version), q(n.Version))
	}
	if o.AuthLevel != n.AuthLevel {
		wider := lower(manifest.AuthLevels, o.AuthLevel, n.AuthLevel)
		d.addByRule(wider, at("auth_level"), "auth level %s from %s to %s", direction(wider, "lowered", "raised"), word(string(o.AuthLevel)), word(string(n.AuthLevel)))
	}
	if o.Permission != n.Permission {
		d.widen(at("permission"), "permission changed from %s to %s"+capgateRule, q(o.Permission), q(n.Permission))
	}
	if o.Risk != n.Risk {
		wider := lower(manifest.Risks, o.Risk, n.Risk)
		d.add(wider, at("risk"), "risk %s from %s to %s", direction(wider, "lowered", "raised"), word(string(o.Risk)), word(string(n.Risk)))
	}
	if o.Idempotency != n.Idempotency {
		// Raised toward natural widens: the host may repeat the call on its own.
		wider := !lower(manifest.Idempotencies, o.Idempotency, n.Idempotency) || unknown(manifest.Idempotencies, o.Idempotency, n.Idempotency)
		d.add(wider, at("idempotency"), "idempotency %s from %s to %s", direction(wider, "raised", "lowered"), word(string(o.Idempotency)), word(string(n.Idempotency)))
	}
	if o.DryRun != n.DryRun {
		if n.DryRun {
			d.narrow(at("dry_run"), "dry run now offered")
		} else {
			d.widen(at("dry_run"), "dry run no longer offered")
		}
	}
	switch {
	case o.Compensation == n.Compensation:
	case n.Compensation == "":
		d.widen(at("compensation"), "compensation %s removed", q(o.Compensation))
	case o.Compensation == "":
		d.narrow(at("compensation"), "compensation %s added", q(n.Compensation))
	default:
		d.narrow(at("compensation"), "compensation changed from %s to %s", q(o.Compensation), q(n.Compensation))
	}
	addedEntries(d, at("credential_intents"), "credential intent", o.CredentialIntents, n.CredentialIntents, q)
	addedEntries(d, at("network_intents"), "network intent", o.NetworkIntents, n.NetworkIntents, func(ni manifest.NetworkIntent) string {
		return q(ni.Host) + " port " + strconv.Itoa(ni.Port)
	})
	d.filesystem(at("filesystem_intents"), o.FilesystemIntents, n.FilesystemIntents)
	if len(o.EnvironmentScope) > 0 && len(n.EnvironmentScope) == 0 {
		// No scope at all is no narrowing of the grant: every environment.
		d.widen(at("environment_scope"), "environment scope removed: no longer limited to named environments"+capgateRule)
	} else {
		addedEntries(d, at("environment_scope"), "environment scope entry", o.EnvironmentScope, n.EnvironmentScope, q)
	}
	d.evidence(at("evidence"), o.Evidence, n.Evidence)
	if o.TimeoutMS != n.TimeoutMS {
		wider := limit(n.TimeoutMS) > limit(o.TimeoutMS)
		d.add(wider, at("timeout_ms"), "timeout %s from %s to %s", direction(wider, "raised", "lowered"), ms(o.TimeoutMS), ms(n.TimeoutMS))
	}
	d.budget(at("resource_budget"), o.ResourceBudget, n.ResourceBudget)
	if o.ConformanceSuite != n.ConformanceSuite {
		d.narrow(at("conformance_suite"), "conformance suite changed from %s to %s", optQ(o.ConformanceSuite), optQ(n.ConformanceSuite))
	}
	if o.Implements != n.Implements {
		d.narrow(at("implements"), "implements changed from %s to %s", optQ(o.Implements), optQ(n.Implements))
	}
	if o.Extends != n.Extends {
		d.narrow(at("extends"), "extends changed from %s to %s", optQ(o.Extends), optQ(n.Extends))
	}
	if !slices.EqualFunc(o.Examples, n.Examples, func(a, b json.RawMessage) bool { return sameJSON(a, b) }) {
		d.narrow(at("examples"), "examples changed")
	}
	if o.AutonomyCeiling != n.AutonomyCeiling {
		// manifest.Autonomies runs from act to handoff: an earlier entry is more autonomous.
		wider := lower(manifest.Autonomies, o.AutonomyCeiling, n.AutonomyCeiling)
		d.addByRule(wider, at("autonomy_ceiling"), "autonomy ceiling %s from %s to %s", direction(wider, "raised", "lowered"), word(string(o.AutonomyCeiling)), word(string(n.AutonomyCeiling)))
	}
	if o.Reversibility != n.Reversibility {
		wider := !lower(manifest.Reversibilities, o.Reversibility, n.Reversibility) || unknown(manifest.Reversibilities, o.Reversibility, n.Reversibility)
		d.addByRule(wider, at("reversibility"), "reversibility changed from %s to %s, %s", word(string(o.Reversibility)), word(string(n.Reversibility)), direction(wider, "less reversible", "more reversible"))
	}
	if !slices.Equal(o.DataClasses, n.DataClasses) {
		d.narrow(at("data_classes"), "data classes changed")
	}
	if !slices.Equal(o.Surface, n.Surface) {
		d.narrow(at("surface"), "surface changed")
	}
}

// undoWindow compares undo windows, absent and 0 both meaning no undo: removed or shortened
// widens (the person has less time, or none, to take the action back).
func (d *differ) undoWindow(p string, o, n *int64) {
	ov, nv := undo(o), undo(n)
	switch {
	case (o == nil) == (n == nil) && ov == nv:
	case nv == 0 && ov > 0:
		d.widen(p, "undo window of %d ms removed"+capgateRule, ov)
	case nv < ov:
		d.widen(p, "undo window shortened from %d ms to %d ms"+capgateRule, ov, nv)
	case nv > ov:
		d.narrow(p, "undo window lengthened from %d ms to %d ms", ov, nv)
	default:
		d.narrow(p, "undo window written differently, still %d ms", nv)
	}
}

func undo(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// addedEntries records every entry of n that o lacks as a widening at its index, and every entry of
// o that n lacks as a narrowing at the list's path.
func addedEntries[T comparable](d *differ, p, what string, o, n []T, show func(T) string) {
	had := map[T]bool{}
	for _, v := range o {
		had[v] = true
	}
	has := map[T]bool{}
	for i, v := range n {
		if !had[v] && !has[v] {
			d.widen(index(p, i), "%s %s added", what, show(v))
		}
		has[v] = true
	}
	for _, v := range o {
		if !has[v] {
			has[v] = true
			d.narrow(p, "%s %s removed", what, show(v))
		}
	}
}

// filesystem compares filesystem intents by path: a path added, or one whose mode becomes
// read_write, widens.
func (d *differ) filesystem(p string, o, n []manifest.FilesystemIntent) {
	rw := func(list []manifest.FilesystemIntent) map[string]bool {
		m := map[string]bool{}
		for _, fi := range list {
			m[fi.Path] = m[fi.Path] || fi.Mode != manifest.ModeReadOnly
		}
		return m
	}
	om, nm := rw(o), rw(n)
	done := map[string]bool{}
	for i, fi := range n {
		if done[fi.Path] {
			continue
		}
		done[fi.Path] = true
		wasRW, had := om[fi.Path]
		switch {
		case !had:
			d.widen(index(p, i), "filesystem intent %s (%s) added", q(fi.Path), mode(nm[fi.Path]))
		case nm[fi.Path] && !wasRW:
			d.widen(field(index(p, i), "mode"), "filesystem intent %s mode changed from read_only to read_write", q(fi.Path))
		case !nm[fi.Path] && wasRW:
			d.narrow(field(index(p, i), "mode"), "filesystem intent %s mode changed from read_write to read_only", q(fi.Path))
		}
	}
	for _, fi := range o {
		if _, ok := nm[fi.Path]; !ok && !done[fi.Path] {
			done[fi.Path] = true
			d.narrow(p, "filesystem intent %s removed", q(fi.Path))
		}
	}
}

func mode(rw bool) string {
	if rw {
		return string(manifest.ModeReadWrite)
	}
	return string(manifest.ModeReadOnly)
}

// evidence compares declared evidence: an entry removed widens (less is recorded of what the
// capability did); one added narrows.
func (d *differ) evidence(p string, o, n []string) {
	has := map[string]bool{}
	for _, e := range n {
		has[e] = true
	}
	gone := map[string]bool{}
	for _, e := range o {
		if !has[e] && !gone[e] {
			gone[e] = true
			d.widen(p, "evidence %s no longer declared", q(e))
		}
	}
	had := map[string]bool{}
	for _, e := range o {
		had[e] = true
	}
	for i, e := range n {
		if !had[e] {
			had[e] = true
			d.narrow(index(p, i), "evidence %s now declared", q(e))
		}
	}
}

// budget compares resource budgets key by key as effective limits: 0 and a missing key both
// mean no limit, so removing a key raises it to unlimited.
func (d *differ) budget(p string, o, n map[string]int64) {
	keys := make([]string, 0, len(o)+len(n))
	for k := range o {
		keys = append(keys, k)
	}
	for k := range n {
		if _, ok := o[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		ov, inOld := o[k]
		nv, inNew := n[k]
		kp := field(p, memberPath(k))
		switch {
		case inOld && inNew && ov == nv:
		case inOld && !inNew:
			d.add(limit(ov) < math.MaxInt64, kp, "resource budget %s removed: raised from %s to no limit", q(k), limitText(ov))
		case !inOld:
			d.narrow(kp, "resource budget %s added at %s", q(k), limitText(nv))
		default:
			wider := limit(nv) > limit(ov)
			d.add(wider, kp, "resource budget %s %s from %s to %s", q(k), direction(wider, "raised", "lowered"), limitText(ov), limitText(nv))
		}
	}
}

// limit is the effective value of a limit where 0 means none.
func limit(v int64) int64 {
	if v == 0 {
		return math.MaxInt64
	}
	return v
}

func limitText(v int64) string {
	if v == 0 {
		return "no limit"
	}
	return strconv.FormatInt(v, 10)
}

func ms(v int64) string {
	if v == 0 {
		return "no limit"
	}
	return strconv.FormatInt(v, 10) + " ms"
}

// lower reports whether n comes before o in order, the list running from the least to the
// most cautious. A value outside the list counts as lowered, so that nothing unknown passes
// as a narrowing.
func lower[T comparable](order []T, o, n T) bool {
	oi, ni := slices.Index(order, o), slices.Index(order, n)
	if oi < 0 || ni < 0 {
		return true
	}
	return ni < oi
}

// unknown reports whether o or n is outside order.
func unknown[T comparable](order []T, o, n T) bool {
	return !slices.Contains(order, o) || !slices.Contains(order, n)
}

func direction(wider bool, widening, narrowing string) string {
	if wider {
		return widening
	}
	return narrowing
}
