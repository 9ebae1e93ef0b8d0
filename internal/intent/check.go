package intent

import (
	"strconv"

	"github.com/capgate/capgate/manifest"
)

// Check returns every problem of m's intents under h, in the order of the manifest: for each
// capability its network, filesystem and credential intents and its environment scope. Each
// problem's Path is index-based, such as capabilities[3].network_intents[0].host, and its Rule
// never contains the offending value. A nil manifest has no problems.
//
// Beyond the single-value rules, Check refuses a repeated intent within one capability: the
// same host and port, the same path (whatever the modes), the same credential or environment.
// The repeat is reported at the later entry, naming the index of the earlier one.
//
// An environment_scope that is present but empty is a problem; an absent one is not, since a
// manifest of the manifest document has none. (The decoder reads an empty JSON array as
// absent and reports it itself; Check sees the difference only in a Manifest built in Go.)
func Check(m *manifest.Manifest, h Host) []manifest.Problem {
	if m == nil {
		return nil
	}
	var ps []manifest.Problem
	add := func(path, rule string) {
		ps = append(ps, manifest.Problem{Path: path, Rule: rule})
	}
	for i := range m.Capabilities {
		c := &m.Capabilities[i]
		base := "capabilities[" + strconv.Itoa(i) + "]"

		eachOnce(add, base+".network_intents", c.NetworkIntents, "the same host and port",
			func(ni manifest.NetworkIntent) hostPort { return hostPort{ni.Host, ni.Port} },
			func(p string, ni manifest.NetworkIntent) {
				if rule := HostRule(ni.Host, h); rule != "" {
					add(p+".host", rule)
				}
				if rule := PortRule(ni.Port); rule != "" {
					add(p+".port", rule)
				}
			})
		eachOnce(add, base+".filesystem_intents", c.FilesystemIntents, "the same path",
			func(fi manifest.FilesystemIntent) string { return fi.Path },
			func(p string, fi manifest.FilesystemIntent) {
				if rule := PathRule(fi.Path, h); rule != "" {
					add(p+".path", rule)
				}
			})
		eachOnce(add, base+".credential_intents", c.CredentialIntents, "the same credential", itself,
			func(p, name string) {
				if rule := CredentialRule(name, h); rule != "" {
					add(p, rule)
				}
			})
		if c.EnvironmentScope != nil && len(c.EnvironmentScope) == 0 {
			add(base+".environment_scope", ruleScopeEmpty)
		}
		eachOnce(add, base+".environment_scope", c.EnvironmentScope, "the same environment", itself,
			func(p, name string) {
				if rule := EnvironmentRule(name, h); rule != "" {
					add(p, rule)
				}
			})
	}
	return ps
}

// hostPort is what makes network intents the same.
type hostPort struct {
	host string
	port int
}

// itself is a string list's key: its entries are the same when they are equal.
func itself(s string) string { return s }

// eachOnce checks each entry of list, at path list[j], with check, and adds a problem at an
// entry whose key repeats an earlier entry's, naming the earlier one; what says what
// repeats.
func eachOnce[T any, K comparable](add func(path, rule string), list string, entries []T, what string,
	key func(T) K, check func(path string, entry T)) {
	seen := map[K]int{}
	for j, e := range entries {
		p := list + "[" + strconv.Itoa(j) + "]"
		check(p, e)
		if earlier, dup := seen[key(e)]; dup {
			add(p, duplicateRule(earlier, what))
		} else {
			seen[key(e)] = j
		}
	}
}

// duplicateRule says which earlier entry of the same list an entry repeats.
func duplicateRule(earlier int, what string) string {
	return "must not repeat entry [" + strconv.Itoa(earlier) + "] (" + what + ")"
}
