package definition_test

import (
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/definition"
)

// def parses a definition from ride.yaml with name, version and extends changed.
func def(t *testing.T, name, version, extends string) *definition.Definition {
	t.Helper()
	m := readJSON(t, "ride.yaml")
	m["name"], m["version"] = name, version
	if extends != "" {
		m["extends"] = extends
	}
	d, ps := parse(t, m)
	if len(ps) > 0 {
		t.Fatalf("%s@%s: %v", name, version, ps)
	}
	return d
}

func TestNegotiate(t *testing.T) {
	const ride, pay = "org.capgate.transport.ride.request", "org.capgate.commerce.pay"
	set := definition.NewSet(
		def(t, ride, "1.0", ""), def(t, ride, "1.2", ""), def(t, ride, "2.0", ""),
		def(t, pay, "1.0", ""),
		def(t, "com.example.ride.pet", "1.0", ride+"@1.2"),                    // needs ride at 1.2 or later
		def(t, "com.example.ride.pet.vet", "1.0", "com.example.ride.pet@1.0"), // an extension of an extension
		def(t, "com.example.pay.tip", "1.0", pay+"@1.0"),
	)
	n := definition.Negotiate(set, []string{
		ride + "@1.1",              // host has 1.0 and 1.2: 1.0 is the highest in common
		"com.example.ride.pet@1.0", // its parent is offered at 1.0 only: dropped
		"com.example.ride.pet.vet@1.0",
		pay + "@1.5",              // 1.0 in common
		"com.example.pay.tip@1.0", // parent kept: kept
		"org.capgate.unknown.thing@1.0",
		pay + "@3.0",     // no 3.x, but 1.0 stays offered from the other entry
		"@alice.example", // a handle, never a name
		"not-a-reference",
	})
	got := map[string]definition.Choice{}
	for _, c := range n.Choices {
		got[c.Client] = c
	}
	for entry, want := range map[string]struct {
		kept    bool
		offered string
		why     string
	}{
		ride + "@1.1":                   {true, ride + "@1.0", "both support"},
		"com.example.ride.pet@1.0":      {false, "", "not in the intersection"},
		"com.example.ride.pet.vet@1.0":  {false, "", "not in the intersection"},
		pay + "@1.5":                    {true, pay + "@1.0", "both support"},
		"com.example.pay.tip@1.0":       {true, "com.example.pay.tip@1.0", "both support"},
		"org.capgate.unknown.thing@1.0": {false, "", "no definition of this name"},
		pay + "@3.0":                    {false, "", "no version in common"},
		"@alice.example":                {false, "", "handle"},
		"not-a-reference":               {false, "", "not a definition name"},
	} {
		c, ok := got[entry]
		if !ok || c.Kept != want.kept || c.Offered != want.offered || !strings.Contains(c.Why, want.why) {
			t.Errorf("%s: got %+v, want kept %v offered %q why ~%q", entry, c, want.kept, want.offered, want.why)
		}
	}
	var offered []string
	for _, d := range n.Offered {
		offered = append(offered, d.Ref())
	}
	if strings.Join(offered, " ") != "com.example.pay.tip@1.0 org.capgate.commerce.pay@1.0 org.capgate.transport.ride.request@1.0" {
		t.Errorf("offered %v", offered)
	}

	// With the parent at 1.2 the whole chain is kept; a higher major listed beside wins.
	n = definition.Negotiate(set, []string{ride + "@1.4", ride + "@2.3", "com.example.ride.pet@1.0", "com.example.ride.pet.vet@1.0"})
	offered = nil
	for _, d := range n.Offered {
		offered = append(offered, d.Ref())
	}
	// ride is offered at 2.0 (the higher major), so pet, which extends ride@1.2, goes.
	if strings.Join(offered, " ") != "org.capgate.transport.ride.request@2.0" {
		t.Errorf("offered %v: %+v", offered, n.Choices)
	}
	n = definition.Negotiate(set, []string{ride + "@1.4", "com.example.ride.pet@1.0", "com.example.ride.pet.vet@1.0"})
	if len(n.Offered) != 3 {
		t.Errorf("the chain under ride@1.2: %+v", n.Choices)
	}
	if n := definition.Negotiate(set, nil); len(n.Offered) != 0 || len(n.Choices) != 0 {
		t.Errorf("nothing supported: %+v", n)
	}
}
