package manifest_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/capgate/capgate/manifest"
)

// A developer signs a manifest from Go; a host verifies it against the trusted key.
func Example() {
	src := []byte(`{
	  "app_id": "org.example.notes",
	  "version": "1.0.0",
	  "manifest_version": "1.0",
	  "capabilities": [{
	    "id": "notes.org.example.notes.search",
	    "name": "Search notes",
	    "description": "Finds notes containing the query.",
	    "category": "TEXT_QUERY",
	    "parameters": {"type": "object", "required": ["query"], "properties": {"query": {"type": "string"}}},
	    "returns": {"type": "object"},
	    "side_effects": "read"
	  }]
	}`)
	doc, err := manifest.Load(src) // parse strictly and check every rule
	if err != nil {
		fmt.Println(err)
		return
	}
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize)) // keys.LoadPrivateKey in real use
	signed, err := manifest.Sign(doc, key)
	if err != nil {
		fmt.Println(err)
		return
	}

	trusted := oneKey{key.Public().(ed25519.PublicKey)} // keys.TrustStore in real use
	v := manifest.VerifyBytes(signed, trusted)
	fmt.Println(v.AppID, "tier", v.Tier, v.Reason)

	tampered := bytes.Replace(signed, []byte(`"read"`), []byte(`"none"`), 1)
	v = manifest.VerifyBytes(tampered, trusted)
	fmt.Println(v.AppID, "tier", v.Tier, v.Reason)
	// Output:
	// org.example.notes tier 1 verified
	// org.example.notes tier 2 bad_signature
}

// Lint reports every problem as a field path and a rule, never the offending value.
func ExampleDocument_Validate() {
	doc, err := manifest.Parse([]byte(`{
	  "app_id": "org.example.notes",
	  "version": "1.0",
	  "manifest_version": "1.0",
	  "capabilities": [{
	    "id": "notes.org.other.search",
	    "name": "Search",
	    "description": "Search.",
	    "category": "SEARCH",
	    "parameters": {"type": "objekt"},
	    "returns": {}
	  }]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range doc.Validate() {
		fmt.Println(p)
	}
	// Output:
	// version: must be a SemVer 2.0.0 version
	// capabilities[0].category: must be one of APP_MANAGEMENT, SURFACE_MANAGEMENT, ELEMENT_INTERACTION, TEXT_INPUT, TEXT_QUERY, NAVIGATION, STATE_QUERY, SYSTEM, MEDIA_PLAYBACK, COMMUNICATION, FILE_OPERATION, HARDWARE
	// capabilities[0].id: must have this manifest's app_id between its domain and its action
	// capabilities[0].parameters.type: is not a valid JSON Schema: breaks the meta-schema's enum rule
}
