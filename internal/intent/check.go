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

		type hostPort struct {
			host string
			port int
		}
		seenNet := map[hostPort]int{}
		for j, ni := range c.NetworkIntents {
			p := base + ".network_intents[" + strconv.Itoa(j) + "]"
			if rule := HostRule(ni.Host, h); rule != "" {
				add(p+".host", rule)
			}
			if rule := PortRule(ni.Port); rule != "" {
				add(p+".port", rule)
			}
			key := hostPort{ni.Host, ni.Port}
			if k, dup := seenNet[key]; dup {
				add(p, duplicateRule(k, "the same host and port"))
			} else {
				seenNet[key] = j
			}
		}

		seenPath := map[string]int{}
		for j, fi := range c.FilesystemIntents {
			p := base + ".filesystem_intents[" + strconv.Itoa(j) + "]"
			if rule := PathRule(fi.Path, h); rule != "" {
				add(p+".path", rule)
			}
			if k, dup := seenPath[fi.Path]; dup {
				add(p, duplicateRule(k, "the same path"))
			} else {
				seenPath[fi.Path] = j
			}
		}

		seenCred := map[string]int{}
		for j, name := range c.CredentialIntents {
			p := base + ".credential_intents[" + strconv.Itoa(j) + "]"
			if rule := CredentialRule(name, h); rule != "" {
				add(p, rule)
			}
			if k, dup := seenCred[name]; dup {
				add(p, duplicateRule(k, "the same credential"))
			} else {
				seenCred[name] = j
			}
		}

		if c.EnvironmentScope != nil && len(c.EnvironmentScope) == 0 {
			add(base+".environment_scope", ruleScopeEmpty)
		}
		seenEnv := map[string]int{}
		for j, name := range c.EnvironmentScope {
			p := base + ".environment_scope[" + strconv.Itoa(j) + "]"
			if rule := EnvironmentRule(name, h); rule != "" {
				add(p, rule)
			}
			if k, dup := seenEnv[name]; dup {
				add(p, duplicateRule(k, "the same environment"))
			} else {
				seenEnv[name] = j
			}
		}
	}
	return ps
}

// duplicateRule says which earlier entry of the same list an entry repeats.
func duplicateRule(earlier int, what string) string {
	return "must not repeat entry [" + strconv.Itoa(earlier) + "] (" + what + ")"
}
