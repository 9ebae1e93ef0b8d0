package port_test

import (
	"fmt"

	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/manifest"
)

// A provider that claims less caution than the host's copy of the port is refused, field by
// field.
func ExampleCheck() {
	reg, err := port.LoadDir("testdata/ports")
	if err != nil {
		panic(err)
	}
	doc, err := manifest.Parse([]byte(`{
	  "app_id": "org.example.kb", "version": "1.0.0", "manifest_version": "1.0",
	  "ports": ["knowledge.v1"],
	  "capabilities": [
	    {"id": "knowledge.org.example.kb.purge", "name": "Purge", "description": "Purges a document.",
	     "category": "FILE_OPERATION", "parameters": {"type": "object"}, "returns": {"type": "object"},
	     "side_effects": "write", "idempotency": "keyed", "implements": "knowledge.purge@1.0"}
	  ]}`))
	if err != nil {
		panic(err)
	}
	for _, p := range port.Check(doc.Manifest(), reg) {
		fmt.Println(p)
	}
	// Output:
	// capabilities[0].risk: below the port's floor: must be at least high
	// capabilities[0].side_effects: below the port's floor: must be at least destructive
	// capabilities[0].idempotency: must be none: the port's method is not idempotent
	// capabilities[0].compensation: required: the port's method has the compensating action restore
	// capabilities[0].evidence: must include every evidence record of the port's method (missing audit.purge)
	// ports[0]: side-effecting method restore has no capability implementing it
}
