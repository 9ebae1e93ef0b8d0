package definition_test

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/yamljson"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
)

// readJSON returns a testdata YAML file as the JSON it denotes, decoded into a map so that a
// test can change one field.
func readJSON(t *testing.T, name string) map[string]any {
	t.Helper()
	y, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yamljson.Convert(y)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func parse(t *testing.T, m map[string]any) (*definition.Definition, manifest.Problems) {
	t.Helper()
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return definition.Parse(js, "")
}

func hasProblem(ps manifest.Problems, path, rulePart string) bool {
	return slices.ContainsFunc(ps, func(p manifest.Problem) bool { return p.Path == path && strings.Contains(p.Rule, rulePart) })
}

func TestParseDefinition(t *testing.T) {
	def, ps := parse(t, readJSON(t, "ride.yaml"))
	if len(ps) > 0 {
		t.Fatalf("problems: %v", ps)
	}
	if def.Ref() != "org.capgate.transport.ride.request@1.2" || def.Namespace() != "org.capgate" {
		t.Errorf("ref %s, namespace %s", def.Ref(), def.Namespace())
	}
	if def.Description["tr"] == "" || len(def.Examples) != 3 || len(def.Actions) != 2 || def.Actions[1].Access != "transport.ride.cancel" {
		t.Errorf("decoded %+v", def)
	}
	if def.Reversibility != manifest.Compensable || !def.ReversibilityDeclared || def.AutonomyCeiling != manifest.AutonomyAsk {
		t.Errorf("reversibility %s (declared %v), autonomy %s", def.Reversibility, def.ReversibilityDeclared, def.AutonomyCeiling)
	}
	if def.Authority != (definition.Authority{Scope: "transport.ride.request", Tier: manifest.RiskMedium}) {
		t.Errorf("authority %+v", def.Authority)
	}
	if len(def.Providers) != 2 || def.Providers[1].Path.Rank() != 3 || def.Surface.Requires[0] != "screen" {
		t.Errorf("providers %+v, surface %+v", def.Providers, def.Surface)
	}

	// Undeclared reversibility is irreversible.
	m := readJSON(t, "ride.yaml")
	delete(m, "reversibility")
	def, ps = parse(t, m)
	if len(ps) > 0 || def.Reversibility != manifest.Irreversible || def.ReversibilityDeclared {
		t.Errorf("undeclared: %s (declared %v), %v", def.Reversibility, def.ReversibilityDeclared, ps)
	}
}

// TestParseRefuses breaks one rule at a time and checks that the problem names the field.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct {
		name       string
		edit       func(m map[string]any)
		path, rule string
	}{
		{"unknown member", func(m map[string]any) { m["autonomy_celing"] = "act" }, "autonomy_celing", "not a field"},
		{"no autonomy ceiling", func(m map[string]any) { delete(m, "autonomy_ceiling") }, "autonomy_ceiling", "required"},
		{"bad autonomy", func(m map[string]any) { m["autonomy_ceiling"] = "Act" }, "autonomy_ceiling", "must be one of"},
		{"two labels", func(m map[string]any) { m["name"] = "org.capgate" }, "name", "three labels"},
		{"upper case name", func(m map[string]any) { m["name"] = "org.capgate.Ride.request" }, "name", "three labels"},
		{"outside the root, no extends", func(m map[string]any) { m["name"] = "com.example.ride.request" }, "extends", "outside the root"},
		{"root spelled as a prefix", func(m map[string]any) { m["name"] = "org.capgatex.ride.request" }, "extends", "outside the root"},
		{"extends itself", func(m map[string]any) { m["extends"] = "org.capgate.transport.ride.request@1.0" }, "extends", "another definition"},
		{"bad version", func(m map[string]any) { m["version"] = "1.2.3" }, "version", "major.minor"},
		{"version as a number", func(m map[string]any) { m["version"] = 1.2 }, "version", "must be a string"},
		{"no Turkish description", func(m map[string]any) { m["description"] = map[string]any{"en": "x"} }, "description.tr", "required"},
		{"a third language", func(m map[string]any) { m["description"] = map[string]any{"en": "x", "tr": "y", "de": "z"} }, "description.de", "not a field"},
		{"control characters", func(m map[string]any) { m["description"] = map[string]any{"en": "x\x1b[2J", "tr": "y"} }, "description.en", "control"},
		{"no Turkish example", func(m map[string]any) { m["examples"] = []any{map[string]any{"lang": "en", "text": "x"}} }, "examples", "in tr"},
		{"no actions", func(m map[string]any) { m["actions"] = []any{} }, "actions", "must not be empty"},
		{"two actions of one name", func(m map[string]any) {
			m["actions"] = []any{map[string]any{"name": "a", "access": "x.y"}, map[string]any{"name": "a", "access": "x.z"}}
		}, "actions[1].name", "another action"},
		{"bad access", func(m map[string]any) { m["actions"] = []any{map[string]any{"name": "a", "access": "nodot"}} }, "actions[0].access", "permission"},
		{"no input", func(m map[string]any) { delete(m, "input") }, "input", "required"},
		{"an older dialect", func(m map[string]any) {
			m["input"] = map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
		}, "input", "2020-12"},
		{"a remote ref", func(m map[string]any) { m["output"] = map[string]any{"$ref": "https://example.com/s.json"} }, "output", "outside itself"},
		{"not a schema", func(m map[string]any) { m["output"] = map[string]any{"type": 12} }, "output", "does not compile"},
		{"bad tier", func(m map[string]any) { m["authority"] = map[string]any{"scope": "a.b", "tier": "extreme"} }, "authority.tier", "one of"},
		{"bad surface", func(m map[string]any) { m["surface"] = map[string]any{"requires": []any{"telepathy"}} }, "surface.requires[0]", "one of"},
		{"bad path", func(m map[string]any) {
			m["providers"] = []any{map[string]any{"id": "com.example.a", "path": "carrier_pigeon"}}
		}, "providers[0].path", "one of"},
		{"bad provider id", func(m map[string]any) { m["providers"] = []any{map[string]any{"id": "../x", "path": "api"}} }, "providers[0].id", "app id"},
		{"bad test time", func(m map[string]any) { m["test_status"] = map[string]any{"at": "yesterday", "result": "pass"} }, "test_status.at", "RFC 3339"},
		{"bad signature", func(m map[string]any) { m["signature"] = "ed25519:AAAA" }, "signature", "base64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := readJSON(t, "ride.yaml")
			c.edit(m)
			_, ps := parse(t, m)
			if !hasProblem(ps, c.path, c.rule) {
				t.Fatalf("no problem at %q with %q; got %v", c.path, c.rule, ps)
			}
		})
	}
	for _, data := range []string{``, `[]`, `{"name":"a","name":"b"}`, "\xef\xbb\xbf{}", `{"version":1e400}`} {
		if _, ps := definition.Parse([]byte(data), ""); len(ps) == 0 {
			t.Errorf("%q: no problem", data)
		}
	}
}

// TestSecretFields is the lint an attacker would try to get a credential field past: other
// spellings, case, separators, compatibility and look-alike letters, formats, and hiding
// places in the schema.
func TestSecretFields(t *testing.T) {
	props := func(name string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{name: map[string]any{"type": "string"}}}
	}
	refused := map[string]any{
		"password":         props("password"),
		"Password":         props("Password"),
		"user_password":    props("user_password"),
		"pass_word":        props("pass_word"),
		"PASSWD":           props("PASSWD"),
		"passphrase":       props("passphrase"),
		"apiKey":           props("apiKey"),
		"API-KEY":          props("API-KEY"),
		"x_api_key":        props("x_api_key"),
		"access_key":       props("access_key"),
		"authToken":        props("authToken"),
		"refresh_token":    props("refresh_token"),
		"client_secret":    props("client_secret"),
		"card_number":      props("card_number"),
		"cardNumber":       props("cardNumber"),
		"credit-card":      props("credit-card"),
		"card":             props("card"),
		"cvv":              props("cvv"),
		"CVC":              props("CVC"),
		"pin":              props("pin"),
		"card_pin":         props("card_pin"),
		"otp":              props("otp"),
		"iban":             props("iban"),
		"private_key":      props("private_key"),
		"fullwidth":        props("ｐａｓｓｗｏｒｄ"),
		"cyrillic a":       props("pаssword"),
		"format password":  map[string]any{"type": "string", "format": "password"},
		"format card":      map[string]any{"type": "string", "format": "credit-card-number"},
		"required only":    map[string]any{"type": "object", "required": []any{"api_key"}},
		"in items":         map[string]any{"type": "array", "items": props("token")},
		"in prefixItems":   map[string]any{"type": "array", "prefixItems": []any{props("secret")}},
		"in $defs":         map[string]any{"$defs": map[string]any{"c": props("cvv")}, "$ref": "#/$defs/c"},
		"in allOf":         map[string]any{"allOf": []any{map[string]any{"anyOf": []any{props("password")}}}},
		"in then":          map[string]any{"if": true, "then": props("password")},
		"in not":           map[string]any{"not": map[string]any{"not": props("password")}},
		"additional":       map[string]any{"type": "object", "additionalProperties": props("password")},
		"pattern":          map[string]any{"type": "object", "patternProperties": map[string]any{"^pass(word)?$": true}},
		"dependent":        map[string]any{"type": "object", "dependentRequired": map[string]any{"user": []any{"password"}}},
		"dependent schema": map[string]any{"type": "object", "dependentSchemas": map[string]any{"secret": true}},
		"deep":             props("x"),
	}
	deep := map[string]any{"type": "string", "format": "password"}
	for range definition.MaxSchemaDepth + 5 {
		deep = map[string]any{"items": deep}
	}
	refused["deep"] = deep
	for name, schema := range refused {
		if ps := definition.SecretFields(roundTrip(t, schema), "input"); len(ps) == 0 {
			t.Errorf("%s: not refused", name)
		}
	}
	allowed := []string{"display_name", "preferred_language", "time_zone", "cardinality", "postcard", "pinned", "spinner", "discount_code", "passenger_count", "shopping_list"}
	for _, name := range allowed {
		if ps := definition.SecretFields(roundTrip(t, props(name)), "input"); len(ps) > 0 {
			t.Errorf("%s: refused: %v", name, ps)
		}
	}
	// The problem names the path, never more than the field's own name.
	ps := definition.SecretFields(roundTrip(t, map[string]any{"properties": map[string]any{"a": map[string]any{"items": props("password")}}}), "input")
	if len(ps) != 1 || ps[0].Path != "input.properties.a.items.properties.password" {
		t.Errorf("path: %v", ps)
	}
}

func roundTrip(t *testing.T, v any) any {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// keyDir writes a trusted-keys folder with the public key of namespace and returns the
// folder and the private key.
func keyDir(t *testing.T, dir, namespace string) ed25519.PrivateKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.WritePublicKey(filepath.Join(dir, namespace+".pub"), pub, true); err != nil {
		t.Fatal(err)
	}
	return priv
}

func sign(t *testing.T, m map[string]any, key ed25519.PrivateKey) []byte {
	t.Helper()
	def, ps := parse(t, m)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	signed, err := definition.Sign(def, key)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func TestSignVerify(t *testing.T) {
	trusted := t.TempDir()
	capgateKey := keyDir(t, trusted, "org.capgate")
	exampleKey := keyDir(t, trusted, "com.example")
	ks := keys.TrustStore{Dir: trusted}

	signed := sign(t, readJSON(t, "ride.yaml"), capgateKey)
	def, ps := definition.Parse(signed, "")
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if err := definition.Verify(def, ks); err != nil {
		t.Fatalf("verify: %v", err)
	}
	// Signing again replaces the signature and verifies the same way.
	again, err := definition.Sign(def, capgateKey)
	if err != nil {
		t.Fatal(err)
	}
	if def2, _ := definition.Parse(again, ""); definition.Verify(def2, ks) != nil {
		t.Error("re-signed definition does not verify")
	}

	// Another namespace's key does not sign capgate's definitions.
	byOther := sign(t, readJSON(t, "ride.yaml"), exampleKey)
	def, _ = definition.Parse(byOther, "")
	if err := definition.Verify(def, ks); !errors.Is(err, definition.ErrBadSignature) {
		t.Errorf("signed by another namespace: %v", err)
	}
	// A changed byte, a reordering that keeps the meaning, and an unsigned file.
	tampered := strings.Replace(string(signed), `"ask"`, `"act"`, 1)
	def, _ = definition.Parse([]byte(tampered), "")
	if err := definition.Verify(def, ks); !errors.Is(err, definition.ErrBadSignature) {
		t.Errorf("tampered: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(signed, &m); err != nil {
		t.Fatal(err)
	}
	reordered, _ := json.Marshal(m) // sorted members, compact: the same canonical form
	def, _ = definition.Parse(reordered, "")
	if err := definition.Verify(def, ks); err != nil {
		t.Errorf("reordered: %v", err)
	}
	def, _ = parse(t, readJSON(t, "ride.yaml"))
	if err := definition.Verify(def, ks); !errors.Is(err, definition.ErrUnsigned) {
		t.Errorf("unsigned: %v", err)
	}
	// No key for the namespace.
	noKeys := keys.TrustStore{Dir: t.TempDir()}
	def, _ = definition.Parse(signed, "")
	if err := definition.Verify(def, noKeys); !errors.Is(err, definition.ErrNoKey) {
		t.Errorf("no key: %v", err)
	}
}

func TestLoadDir(t *testing.T) {
	trusted, dir := t.TempDir(), t.TempDir()
	capgateKey := keyDir(t, trusted, "org.capgate")
	exampleKey := keyDir(t, trusted, "com.example")
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ride.json", sign(t, readJSON(t, "ride.yaml"), capgateKey))
	write("pet.json", sign(t, readJSON(t, "pet.yaml"), exampleKey))
	write("copy.json", sign(t, readJSON(t, "ride.yaml"), capgateKey))
	unsigned, _ := json.Marshal(readJSON(t, "ride.yaml"))
	write("unsigned.json", unsigned)
	orphan := readJSON(t, "pet.yaml")
	orphan["name"], orphan["extends"] = "com.example.other", "org.capgate.nothing.here@1.0"
	write("orphan.json", sign(t, orphan, exampleKey))
	newer := readJSON(t, "pet.yaml")
	newer["extends"] = "org.capgate.transport.ride.request@1.3" // only 1.2 is loaded
	newer["version"] = "2.0"
	write("newer.json", sign(t, newer, exampleKey))
	write("notes.txt", []byte("not a definition"))

	set, errs := definition.LoadDir(dir, "", keys.TrustStore{Dir: trusted})
	var got []string
	for _, d := range set.All() {
		got = append(got, d.Ref())
	}
	if want := []string{"com.example.transport.ride.request_with_pet@1.0", "org.capgate.transport.ride.request@1.2"}; !slices.Equal(got, want) {
		t.Errorf("loaded %v, want %v", got, want)
	}
	why := map[string]error{}
	for _, err := range errs {
		var le *definition.LoadError
		if !errors.As(err, &le) {
			t.Fatalf("not a LoadError: %v", err)
		}
		why[le.File] = err
	}
	for file, want := range map[string]error{"unsigned.json": definition.ErrUnsigned, "orphan.json": definition.ErrNoParent, "newer.json": definition.ErrNoParent} {
		if !errors.Is(why[file], want) {
			t.Errorf("%s: %v, want %v", file, why[file], want)
		}
	}
	if why["copy.json"] == nil && why["ride.json"] == nil || len(errs) != 4 {
		t.Errorf("errors: %v", errs)
	}
	if set.Find("org.capgate.transport.ride.request", 1, 0) == nil || set.Find("org.capgate.transport.ride.request", 1, 3) != nil {
		t.Error("Find does not follow major.minor")
	}
	if empty, errs := definition.LoadDir(filepath.Join(dir, "missing"), "", keys.TrustStore{Dir: trusted}); len(empty.All()) != 0 || len(errs) != 0 {
		t.Errorf("a missing folder: %v", errs)
	}
}

// TestProblemPathsShowNoRawNames checks that a member name with control characters or
// look-alike letters reaches a problem's path only quoted in ASCII.
func TestProblemPathsShowNoRawNames(t *testing.T) {
	m := readJSON(t, "ride.yaml")
	m["\x1b[2Jevil"] = 1
	m["input"] = map[string]any{"type": "object", "properties": map[string]any{"pаss\x07": map[string]any{}}}
	_, ps := parse(t, m)
	if len(ps) < 2 {
		t.Fatalf("problems: %v", ps)
	}
	for _, p := range ps {
		for _, r := range p.Path + p.Rule {
			if r < 0x20 || r > 0x7e {
				t.Errorf("a problem shows a raw byte: %q", p.String())
			}
		}
	}
}

func TestAsksForSecrets(t *testing.T) {
	form := func(name string) any {
		return roundTrip(t, map[string]any{"type": "object", "properties": map[string]any{name: map[string]any{"type": "string"}}})
	}
	for _, name := range []string{"password", "şifre", "Parola", "kart_numarası", "cvv", "api-key"} {
		if !definition.AsksForSecrets(form(name)) {
			t.Errorf("%s: not flagged", name)
		}
	}
	for _, name := range []string{"display_name", "açıklama", "ad_soyad", "time_zone", "preferred_language"} {
		if definition.AsksForSecrets(form(name)) {
			t.Errorf("%s: flagged", name)
		}
	}
	if !definition.AsksForSecrets(roundTrip(t, map[string]any{"type": "string", "format": "password"})) {
		t.Error("format password: not flagged")
	}
}
