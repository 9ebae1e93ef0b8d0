package archive

import (
	"errors"
	"strings"
	"testing"
)

// signFix is the command the refusal of a YAML manifest must name.
const signFix = "capgate manifest sign -o manifest.json manifest.yaml"

// A package carries its signed manifest.json: a root entry named like the YAML authoring form
// is refused, alone, beside manifest.json (before or after it), in any case, as .yml, and as a
// folder, from a folder and from a .tar.gz alike, and the refusal names the command that
// makes the JSON. Deeper in the tree such a name is content.
func TestRefuseYAMLManifest(t *testing.T) {
	yaml := func(name string) ent { return reg(name, "app_id: org.example.hello\n") }
	for _, tc := range []struct {
		name string
		ents []ent
		path string
	}{
		{"manifest.yaml alone", []ent{yaml("manifest.yaml"), reg("README.md", "x")}, "manifest.yaml"},
		{"manifest.yml alone", []ent{yaml("manifest.yml")}, "manifest.yml"},
		{"upper case", []ent{yaml("MANIFEST.YAML")}, "MANIFEST.YAML"},
		{"mixed case .yml", []ent{yaml("Manifest.Yml")}, "Manifest.Yml"},
		{"long s folds to s", []ent{yaml("manife\u017ft.yaml")}, "manife\u017ft.yaml"},
		{"after manifest.json", []ent{manifestEnt, yaml("manifest.yaml")}, "manifest.yaml"},
		{"before manifest.json", []ent{yaml("manifest.yaml"), manifestEnt}, "manifest.yaml"},
		{"a folder", []ent{manifestEnt, dirEnt("manifest.yaml"), reg("manifest.yaml/x", "")}, "manifest.yaml"},
	} {
		for kind, open := range map[string]func(testing.TB, ...ent) string{"tar.gz": tarGzPath, "folder": folderPath} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				_, err := Open(open(t, tc.ents...))
				checkRefusal(t, err, ErrManifest, tc.path)
				var e *Error
				if errors.As(err, &e) && !strings.Contains(e.Rule, signFix) {
					t.Errorf("the refusal does not name the fix: %v", err)
				}
				if !strings.Contains(err.Error(), signFix) {
					t.Errorf("the error text does not name the fix: %v", err)
				}
			})
		}
	}

	nested := append(baseEnts(), yaml("src/manifest.yaml"))
	for kind, path := range map[string]string{"tar.gz": tarGzPath(t, nested...), "folder": folderPath(t, nested...)} {
		p := mustOpen(t, path)
		if _, ok := p.File("src/manifest.yaml"); !ok {
			t.Errorf("%s: a nested manifest.yaml is not content", kind)
		}
	}
}
