package intent_test

import (
	"fmt"
	"net/netip"

	"github.com/capgate/capgate/internal/intent"
	"github.com/capgate/capgate/manifest"
)

func ExampleHostRule() {
	var h intent.Host // the zero Host is the strictest
	for _, host := range []string{"api.github.com", "2852039166", "10.0.0.5"} {
		if rule := intent.HostRule(host, h); rule != "" {
			fmt.Println("refused:", rule)
		} else {
			fmt.Println("accepted")
		}
	}
	h.AllowPrivate = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}
	fmt.Printf("with policy: %q\n", intent.HostRule("10.0.0.5", h))
	// Output:
	// accepted
	// refused: must not be a numeric spelling of an IPv4 address: an IPv4 literal is canonical dotted-quad decimal without leading zeros; and the address it denotes must not be a cloud instance endpoint (instance metadata service (AWS, GCP, Azure, and others))
	// refused: must not be a private address (IANA IPv4 Special-Purpose Address Registry: Private-Use) unless the host's policy allows it
	// with policy: ""
}

func ExampleCheck() {
	m := &manifest.Manifest{Capabilities: []manifest.Capability{{
		NetworkIntents:    []manifest.NetworkIntent{{Host: "api.github.com", Port: 443}, {Host: "metadata.google.internal", Port: 80}},
		FilesystemIntents: []manifest.FilesystemIntent{{Path: "/sandbox/../etc"}},
		CredentialIntents: []string{"scm.github.api"},
	}}}
	for _, p := range intent.Check(m, intent.Host{Credentials: map[string]bool{"scm.github.api": true}}) {
		fmt.Println(p)
	}
	// Output:
	// capabilities[0].network_intents[1].host: must not name a cloud instance endpoint or in-cluster service
	// capabilities[0].filesystem_intents[0].path: must not have a dot or dot-dot segment
}
