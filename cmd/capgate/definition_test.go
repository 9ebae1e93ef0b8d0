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

func TestNegotiateCommand(t *testing.T) {
	dir := t.TempDir()
	trusted, defs := filepath.Join(dir, "trusted"), filepath.Join(dir, "definitions")
	key := filepath.Join(dir, "capgate.key")
	mustCode(t, capgate(t, "", nil, "keygen", "--app-id", "org.capgate", "--out", key, "--pub", filepath.Join(trusted, "org.capgate.pub")), 0)
	exKey := filepath.Join(dir, "example.key")
	mustCode(t, capgate(t, "", nil, "keygen", "--app-id", "com.example", "--out", exKey, "--pub", filepath.Join(trusted, "com.example.pub")), 0)
	mustCode(t, capgate(t, "", nil, "definition", "sign", "--key", key, "-o", filepath.Join(defs, "ride.json"), rideDefinition), 0)
	// pet.yaml extends ride@1.1; the host has ride at 1.2.
	mustCode(t, capgate(t, "", nil, "definition", "sign", "--key", exKey, "-o", filepath.Join(defs, "pet.json"), "../../internal/definition/testdata/pet.yaml"), 0)
	writeFile(t, filepath.Join(defs, "broken.json"), `{"name":`)

	supports := filepath.Join(dir, "supports.yaml")
	writeFile(t, supports, "supports:\n  - org.capgate.transport.ride.request@1.5\n  - com.example.transport.ride.request_with_pet@1.0\n  - \"@alice.example\"\n")
	r := capgate(t, "", nil, "negotiate", "--json", "--supports", supports, "--definitions", defs, "--trusted-dir", trusted)
	mustCode(t, r, 0)
	var out struct {
		Offered []string
		Choices []struct {
			Client, Offered, Why string
			Kept                 bool
		}
		NotLoaded []string `json:"not_loaded"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if strings.Join(out.Offered, " ") != "com.example.transport.ride.request_with_pet@1.0 org.capgate.transport.ride.request@1.2" ||
		len(out.Choices) != 3 || out.Choices[2].Kept || !strings.Contains(out.Choices[2].Why, "handle") || len(out.NotLoaded) != 1 {
		t.Fatalf("negotiate: %s", r.stdout)
	}
	// Without the parent, the extension is dropped, and says why.
	writeFile(t, supports, `["com.example.transport.ride.request_with_pet@1.0"]`)
	r = capgate(t, "", nil, "negotiate", "--supports", supports, "--definitions", defs, "--trusted-dir", trusted)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "not in the intersection") || !strings.Contains(r.stdout, "offered: 0 definition(s)") {
		t.Fatalf("negotiate without the parent: %s", r.stdout)
	}

	mustCode(t, capgate(t, "", nil, "negotiate"), 2)
	writeFile(t, supports, `{"supported": []}`)
	mustCode(t, capgate(t, "", nil, "negotiate", "--supports", supports, "--definitions", defs), 2)
	mustCode(t, capgate(t, "", nil, "negotiate", "--supports", filepath.Join(dir, "missing.json")), 2)
}

func TestDefinitionRootFlag(t *testing.T) {
	mustCode(t, capgate(t, "", nil, "definition", "lint", "--root", "org", rideDefinition), 2)
	// Under another root, capgate's own definition is an extension without extends.
	r := capgate(t, "", nil, "definition", "lint", "--root", "com.example", rideDefinition)
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, "extends: required") {
		t.Errorf("lint under another root: %s", r.stdout)
	}
}
