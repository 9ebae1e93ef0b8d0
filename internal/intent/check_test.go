package intent

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/capgate/capgate/manifest"
)

func TestCheck(t *testing.T) {
	m := &manifest.Manifest{
		AppID: "com.example.notes",
		Capabilities: []manifest.Capability{
			{
				ID:                "notes.com.example.notes.sync",
				NetworkIntents:    []manifest.NetworkIntent{{Host: "api.github.com", Port: 443}},
				FilesystemIntents: []manifest.FilesystemIntent{{Path: "/sandbox/notes", Mode: manifest.ModeReadWrite}},
				CredentialIntents: []string{"scm.github.api"},
				EnvironmentScope:  []string{"dev", "staging"},
			},
			{
				ID: "notes.com.example.notes.exfiltrate",
				NetworkIntents: []manifest.NetworkIntent{
					{Host: "api.github.com", Port: 443},
					{Host: "2852039166", Port: 80},
					{Host: "api.github.com", Port: 443},
					{Host: "api.github.com", Port: 0},
					{Host: "10.0.0.5", Port: 5432},
				},
				FilesystemIntents: []manifest.FilesystemIntent{
					{Path: "/sandbox/../etc/shadow"},
					{Path: "/sandbox/.capgate/keys", Mode: manifest.ModeReadOnly},
					{Path: "/sandbox/notes"},
					{Path: "/sandbox/notes", Mode: manifest.ModeReadWrite},
				},
				CredentialIntents: []string{"scm.github.api", "cloud.root.key", "scm.github.api", "Bad.Name"},
				EnvironmentScope:  []string{"dev", "ALL", "dev", "moon"},
			},
			{
				ID:               "notes.com.example.notes.empty",
				EnvironmentScope: []string{},
			},
		},
	}
	h := Host{
		Protected:    []string{"/sandbox/.capgate"},
		Credentials:  map[string]bool{"scm.github.api": true},
		Environments: map[string]bool{"dev": true, "staging": true, "ALL": true},
	}
	got := Check(m, h)
	want := []manifest.Problem{
		{Path: "capabilities[1].network_intents[1].host", Rule: ruleIPv4Numeric + ruleDenotes + "must not be a cloud instance endpoint (instance metadata service (AWS, GCP, Azure, and others))"},
		{Path: "capabilities[1].network_intents[2]", Rule: "must not repeat entry [0] (the same host and port)"},
		{Path: "capabilities[1].network_intents[3].port", Rule: rulePort},
		{Path: "capabilities[1].network_intents[4].host", Rule: "must not be a private address (" + regV4 + ": Private-Use) unless the host's policy allows it"},
		{Path: "capabilities[1].filesystem_intents[0].path", Rule: rulePathDotSegment},
		{Path: "capabilities[1].filesystem_intents[1].path", Rule: rulePathProtected},
		{Path: "capabilities[1].filesystem_intents[3]", Rule: "must not repeat entry [2] (the same path)"},
		{Path: "capabilities[1].credential_intents[1]", Rule: ruleCredentialCatalog},
		{Path: "capabilities[1].credential_intents[2]", Rule: "must not repeat entry [0] (the same credential)"},
		{Path: "capabilities[1].credential_intents[3]", Rule: ruleCredentialGrammar},
		{Path: "capabilities[1].environment_scope[1]", Rule: ruleEnvEvery},
		{Path: "capabilities[1].environment_scope[2]", Rule: "must not repeat entry [0] (the same environment)"},
		{Path: "capabilities[1].environment_scope[3]", Rule: ruleEnvUnknown},
		{Path: "capabilities[2].environment_scope", Rule: ruleScopeEmpty},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Check =\n%s\nwant\n%s", problemLines(got), problemLines(want))
	}
	// No problem echoes a value of the manifest.
	for _, p := range got {
		for _, v := range []string{"2852039166", "10.0.0.5", "etc/shadow", ".capgate", "cloud.root.key", "Bad.Name", "moon"} {
			if strings.Contains(p.String(), v) {
				t.Errorf("problem %q echoes %q", p, v)
			}
		}
	}

	// The same manifest under a policy that allows the private destination.
	h.AllowPrivate = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}
	for _, p := range Check(m, h) {
		if p.Path == "capabilities[1].network_intents[4].host" {
			t.Errorf("allowed private destination still refused: %s", p)
		}
	}
}

func TestCheckCleanAndNil(t *testing.T) {
	if ps := Check(nil, Host{}); ps != nil {
		t.Errorf("Check(nil) = %v", ps)
	}
	m := &manifest.Manifest{Capabilities: []manifest.Capability{{
		NetworkIntents:    []manifest.NetworkIntent{{Host: "api.github.com", Port: 443}, {Host: "api.github.com", Port: 22}, {Host: "2606:4700::6810:84e5", Port: 443}},
		FilesystemIntents: []manifest.FilesystemIntent{{Path: "/sandbox"}, {Path: "/sandbox/x"}},
		CredentialIntents: []string{"scm.github.api"},
	}}}
	// With the zero Host the catalog is not known, so only the grammar counts.
	if ps := Check(m, Host{}); len(ps) != 0 {
		t.Errorf("Check = %v, want none", ps)
	}
	if ps := Check(m, Host{Credentials: map[string]bool{}}); len(ps) != 1 || ps[0].Path != "capabilities[0].credential_intents[0]" {
		t.Errorf("with an empty catalog, Check = %v", ps)
	}
}

func problemLines(ps []manifest.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("\t" + p.String() + "\n")
	}
	return b.String()
}
