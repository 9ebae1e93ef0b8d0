package delta_test

import (
	"fmt"

	"github.com/capgate/capgate/internal/delta"
	"github.com/capgate/capgate/manifest"
)

// An upgrade that lowers a capability's side effect and adds a network destination widens:
// it needs the operator's approval.
func ExampleDiff() {
	locked, _ := manifest.Load([]byte(`{
	  "app_id": "org.example.kb", "version": "1.0.0", "manifest_version": "1.0",
	  "capabilities": [{"id": "kb.org.example.kb.search", "name": "Search", "description": "Finds articles.",
	    "category": "TEXT_QUERY", "parameters": {"type": "object"}, "returns": {"type": "object"},
	    "side_effects": "write"}]}`))
	upgrade, _ := manifest.Load([]byte(`{
	  "app_id": "org.example.kb", "version": "1.1.0", "previous_version": "1.0.0", "manifest_version": "1.0",
	  "capabilities": [{"id": "kb.org.example.kb.search", "name": "Search", "description": "Finds articles fast.",
	    "category": "TEXT_QUERY", "parameters": {"type": "object"}, "returns": {"type": "object"},
	    "side_effects": "read", "network_intents": [{"host": "api.example.com", "port": 443}]}],
	  "permissions_delta": [{"name": "kb.org.example.kb.search",
	    "previous": {"id": "kb.org.example.kb.search", "name": "Search", "description": "Finds articles.",
	      "category": "TEXT_QUERY", "parameters": {"type": "object"}, "returns": {"type": "object"},
	      "side_effects": "write"},
	    "current": {"id": "kb.org.example.kb.search", "name": "Search", "description": "Finds articles fast.",
	      "category": "TEXT_QUERY", "parameters": {"type": "object"}, "returns": {"type": "object"},
	      "side_effects": "read", "network_intents": [{"host": "api.example.com", "port": 443}]}}]}`))

	r := delta.Diff(delta.Side{Doc: locked}, delta.Side{Doc: upgrade})
	fmt.Println(r.Verdict)
	for _, c := range r.Changes {
		fmt.Printf("%-5v %s: %s\n", c.Widening, c.Path, c.Change)
	}
	// Output:
	// widening
	// false version: version raised from "1.0.0" to "1.1.0"
	// false previous_version: previous_version changed from none to "1.0.0"
	// false permissions_delta: declared permissions_delta changed
	// false capabilities[0].description: description changed
	// true  capabilities[0].side_effects: side effect lowered from write to read
	// true  capabilities[0].risk: risk lowered from medium to low
	// true  capabilities[0].network_intents[0]: network intent "api.example.com" port 443 added
}
