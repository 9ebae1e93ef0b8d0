package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

const rideDefinition = "../../internal/definition/testdata/ride.yaml"

func TestDefinitionLintSignVerify(t *testing.T) {
	mustCode(t, capgate(t, "", nil, "definition", "lint", rideDefinition, "../../internal/definition/testdata/pet.yaml"), 0)

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, strings.Replace(readFile(t, rideDefinition), "seats:", "card_number:", 1))
	r := capgate(t, "", nil, "definition", "lint", "--json", rideDefinition, bad)
	mustCode(t, r, 1)
	var out []struct {
		File     string
		Valid    bool
		Problems []struct{ Path, Rule string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out) != 2 || !out[0].Valid || out[1].Valid ||
		len(out[1].Problems) != 1 || out[1].Problems[0].Path != "input.properties.card_number" {
		t.Fatalf("lint --json: %s (%v)", r.stdout, err)
	}

	// Signed with the namespace's key, it verifies; with another's, or changed, it does not.
	key, pub := filepath.Join(dir, "capgate.key"), filepath.Join(dir, "trusted", "org.capgate.pub")
	mustCode(t, capgate(t, "", nil, "keygen", "--app-id", "org.capgate", "--out", key, "--pub", pub), 0)
	other, otherPub := filepath.Join(dir, "other.key"), filepath.Join(dir, "other.pub")
	mustCode(t, capgate(t, "", nil, "keygen", "--app-id", "com.example", "--out", other, "--pub", otherPub), 0)
	signed := filepath.Join(dir, "ride.json")
	mustCode(t, capgate(t, "", nil, "definition", "sign", "--key", key, "-o", signed, rideDefinition), 0)
	trusted := filepath.Join(dir, "trusted")
	r = capgate(t, "", nil, "definition", "verify", "--trusted-dir", trusted, signed)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "org.capgate.transport.ride.request@1.2 verified") {
		t.Errorf("verify: %s", r.stdout)
	}
	byOther := filepath.Join(dir, "other.json")
	mustCode(t, capgate(t, "", nil, "definition", "sign", "--key", other, "-o", byOther, rideDefinition), 0)
	r = capgate(t, "", nil, "definition", "verify", "--json", "--trusted-dir", trusted, byOther)
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, `"reason": "bad_signature"`) {
		t.Errorf("verify of another namespace's signature: %s", r.stdout)
	}
	changed := filepath.Join(dir, "changed.json")
	writeFile(t, changed, strings.Replace(readFile(t, signed), `"ask"`, `"act"`, 1))
	mustCode(t, capgate(t, "", nil, "definition", "verify", "--trusted-dir", trusted, changed), 1)
	r = capgate(t, "", nil, "definition", "verify", "--trusted-dir", t.TempDir(), signed)
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, "no_trusted_key") {
		t.Errorf("verify without a key: %s", r.stdout)
	}
	// A definition with a problem is not signed.
	r = capgate(t, "", nil, "definition", "sign", "--key", key, bad)
	mustCode(t, r, 1)
	if !strings.Contains(r.stderr, "card_number") || r.stdout != "" {
		t.Errorf("sign of an invalid definition: %s / %s", r.stdout, r.stderr)
	}

	mustCode(t, capgate(t, "", nil, "definition", "lint"), 2)
	mustCode(t, capgate(t, "", nil, "definition", "lint", filepath.Join(dir, "missing.yaml")), 2)
	mustCode(t, capgate(t, "", nil, "definition", "sign", rideDefinition), 2)
	mustCode(t, capgate(t, "", nil, "definition", "verify", rideDefinition), 2)
	mustCode(t, capgate(t, "", nil, "definition", "frobnicate"), 2)
}
