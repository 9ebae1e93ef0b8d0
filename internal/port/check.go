package port

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/capgate/capgate/manifest"
)

// Check returns every problem of m against the host's ports in r, each an index-based field
// path of the manifest and the rule broken. It applies the floors of the plugin document's
// capability table; the manifest's own rules (the shape of each field, ids, that compensation
// names a capability of the manifest) are manifest.Document.Validate's, and a caller installing
// a plugin runs both. Check repeats the few manifest rules it rests on (kind, port spelling, one
// major per port) so that it is sound on a Manifest built in Go as well as one parsed.
//
// The rules:
//
//   - A manifest whose kind is skill, playbook or control_pack (any kind but
//     capability_provider; empty reads as capability_provider, the default) declares no ports
//     and no capabilities. Nothing else is checked for it.
//   - Each port is spelled <name>.v<major>, named once, and supported by the host.
//   - A capability with implements is bounded by that method of the host's copy: its port and
//     major are among the manifest's ports, the method exists, and risk, side effect,
//     idempotency, dry run, compensation, evidence and conformance suite respect the method's
//     floors. Only one capability implements a method. The minor of implements is not checked:
//     the host's copy has one descriptor per major, and a minor adds, never lowers, floors.
//   - A capability without implements is unbounded by ports, as every capability of a manifest
//     without ports is. In a manifest that declares ports it is refused: a provider of ports
//     could otherwise declare beside its bounded capabilities an unbounded one that does the
//     same work without the floors.
//   - Every conformance_suite, of any capability, is spelled conformance/<port>/v<major>/<suite>
//     and listed in the kit index; it is compared as a string, never opened.
//   - A method of a declared port whose side effect is above read needs a capability.
//
// A nil r supports no port. A nil m has no problems.
func Check(m *manifest.Manifest, r *Registry) []manifest.Problem {
	if m == nil {
		return nil
	}
	c := &checker{m: m, r: r}
	c.run()
	return c.ps
}

type checker struct {
	m  *manifest.Manifest
	r  *Registry
	ps []manifest.Problem

	byName map[string]*declaredPort // port name → its entry in ports
	res    []resolved               // per capability
}

// declaredPort is one valid entry of the manifest's ports.
type declaredPort struct {
	name        string
	major       int
	index       int
	port        *Port           // the host's copy; nil when the host has none
	implemented map[string]bool // method → some capability implements it
}

// resolved is what a capability's implements names.
type resolved struct {
	parsed   bool   // implements is a well-formed definition reference
	portName string // from implements
	major    int    // from implements
	method   string // from implements
	decl     *declaredPort
	bound    bool // the method is in the host's copy: floors apply
	floors   Method
}

func (c *checker) add(path, rule string) {
	c.ps = append(c.ps, manifest.Problem{Path: path, Rule: rule})
}

func (c *checker) run() {
	m := c.m
	if m.Kind != "" && m.Kind != manifest.KindCapabilityProvider {
		if len(m.Ports) > 0 {
			c.add("ports", "only a capability_provider may declare ports")
		}
		if len(m.Capabilities) > 0 {
			c.add("capabilities", "only a capability_provider may declare capabilities")
		}
		return
	}
	c.ports()
	c.res = make([]resolved, len(m.Capabilities))
	for i := range m.Capabilities {
		c.resolve(i)
	}
	for i := range m.Capabilities {
		c.capability(i)
	}
	for i, s := range m.Ports {
		name, _, ok := SplitPort(s)
		d := c.byName[name]
		if !ok || d == nil || d.index != i || d.port == nil {
			continue
		}
		for _, method := range slices.Sorted(maps.Keys(d.port.Methods)) {
			if d.port.Methods[method].SideEffects.Rank() > manifest.SideEffectRead.Rank() && !d.implemented[method] {
				c.add(index("ports", i), "side-effecting method "+method+" has no capability implementing it")
			}
		}
	}
}

func (c *checker) ports() {
	c.byName = map[string]*declaredPort{}
	for i, s := range c.m.Ports {
		p := index("ports", i)
		name, major, ok := SplitPort(s)
		if !ok {
			c.add(p, `must be a port name and major such as "knowledge.v1"`)
			continue
		}
		if d, dup := c.byName[name]; dup {
			if d.major == major {
				c.add(p, "port declared twice (first at "+index("ports", d.index)+")")
			} else {
				c.add(p, "at most one major per port (another at "+index("ports", d.index)+")")
			}
			continue
		}
		d := &declaredPort{name: name, major: major, index: i, port: c.r.lookup(name, major), implemented: map[string]bool{}}
		c.byName[name] = d
		if d.port == nil {
			c.add(p, "not a port this host supports")
		}
	}
}

// resolve reads capability i's implements against the manifest's ports and the host's copy.
func (c *checker) resolve(i int) {
	capab := &c.m.Capabilities[i]
	p := field(index("capabilities", i), "implements")
	if capab.Implements == "" {
		if len(c.m.Ports) > 0 {
			c.add(p, "required: every capability of a provider that declares ports implements a port method")
		}
		return
	}
	res := &c.res[i]
	ref, err := manifest.ParseDefinitionRef(capab.Implements)
	if err != nil {
		c.add(p, "must be <port>.<method>@<major>.<minor>, such as knowledge.search@1.0")
		return
	}
	name := ref.Name()
	dot := strings.LastIndexByte(name, '.') // ParseDefinitionRef guarantees two segments
	res.parsed = true
	res.portName, res.method, res.major = name[:dot], name[dot+1:], int(ref.Version().Major)
	d := c.byName[res.portName]
	if d == nil || d.major != res.major {
		c.add(p, "names a port and major not in this manifest's ports")
		return
	}
	res.decl = d
	if d.port == nil {
		return // ports[d.index] says the host has no such port
	}
	floors, ok := d.port.Methods[res.method]
	if !ok {
		c.add(p, "names a method not in the host's copy of the port")
		return
	}
	res.bound, res.floors = true, floors
	for j := range i {
		if o := c.res[j]; o.bound && o.decl == d && o.method == res.method {
			c.add(p, "another capability implements the same method (first at "+index("capabilities", j)+")")
			break
		}
	}
	d.implemented[res.method] = true
}

// capability applies the floors of capability i's method, and the kit index.
func (c *checker) capability(i int) {
	capab := &c.m.Capabilities[i]
	res := c.res[i]
	p := index("capabilities", i)
	c.suite(capab, res, p)
	if !res.bound {
		return
	}
	f := res.floors
	side := capab.SideEffects
	if side == "" {
		side = manifest.SideEffectSystem // the manifest's default: undeclared is the worst case
	}
	risk := capab.Risk
	if risk == "" {
		risk = manifest.RiskFor(side)
	}
	if riskRank(risk) < riskRank(f.Risk) {
		c.add(field(p, "risk"), "below the port's floor: must be at least "+string(f.Risk))
	}
	switch {
	case side.Rank() < f.SideEffects.Rank():
		c.add(field(p, "side_effects"), "below the port's floor: must be at least "+string(f.SideEffects))
	case riskRank(risk) > riskRank(manifest.RiskLow) && side.Rank() < manifest.SideEffectWrite.Rank():
		c.add(field(p, "side_effects"), "must be at least write when risk is above low")
	}
	if !f.Idempotent && capab.Idempotency != "" && capab.Idempotency != manifest.IdempotencyNone {
		c.add(field(p, "idempotency"), "must be none: the port's method is not idempotent")
	}
	if capab.DryRun && !f.DryRun {
		c.add(field(p, "dry_run"), "must be false: the port's method has no dry run")
	}
	if ca := f.CompensatingAction; ca != "" {
		cp := field(p, "compensation")
		if capab.Compensation == "" {
			c.add(cp, "required: the port's method has the compensating action "+ca)
		} else if j := c.capabilityIndex(capab.Compensation); j < 0 || j == i ||
			!c.res[j].parsed || c.res[j].decl != res.decl || c.res[j].method != ca {
			c.add(cp, "must name a capability of this manifest that implements the port's compensating action "+ca)
		}
	}
	var missing []string
	for _, e := range f.Evidence {
		if !slices.Contains(capab.Evidence, e) {
			missing = append(missing, e)
		}
	}
	switch {
	case len(missing) > 0:
		c.add(field(p, "evidence"), "must include every evidence record of the port's method (missing "+strings.Join(missing, ", ")+")")
	case len(capab.Evidence) == 0 && side.Rank() > manifest.SideEffectRead.Rank():
		c.add(field(p, "evidence"), "required when side_effects is above read")
	}
}

// suite checks a capability's conformance_suite against the kit index by name. It never touches
// the disk: the form admits no path other than the index's own names.
func (c *checker) suite(capab *manifest.Capability, res resolved, p string) {
	s := capab.ConformanceSuite
	if s == "" {
		return
	}
	sp := field(p, "conformance_suite")
	if !conformancePattern.MatchString(s) {
		c.add(sp, "must be conformance/<port>/v<major>/<suite>")
		return
	}
	parts := strings.Split(s, "/") // conformance, port, v<major>, suite
	if res.parsed && (parts[1] != res.portName || parts[2] != "v"+strconv.Itoa(res.major)) {
		c.add(sp, "must be a suite of the port and major the capability implements")
		return
	}
	if !c.r.HasSuite(s) {
		c.add(sp, "not in the host's kit index")
	}
}

func (c *checker) capabilityIndex(id string) int {
	for j := range c.m.Capabilities {
		if c.m.Capabilities[j].ID == id {
			return j
		}
	}
	return -1
}

// riskRank orders risks low < medium < high. An unknown risk ranks above high, so that it is
// never taken for a lesser one (as manifest.SideEffect.Rank does); the manifest refuses it.
func riskRank(r manifest.Risk) int {
	if i := slices.Index(manifest.Risks, r); i >= 0 {
		return i
	}
	return len(manifest.Risks)
}

// field joins a member name to a path.
func field(path, name string) string { return join(path, name) }

// index joins an array index to a path.
func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }
