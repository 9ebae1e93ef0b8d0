package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/manifest"
)

// signFix is the command every refusal of YAML where JSON is needed must name.
const signFix = "capgate manifest sign -o manifest.json manifest.yaml"

// YAML is an authoring form: ReadFile refuses a file named like it before reading it, in any
// spelling of the extension, with ErrYAML, whose text names the fix; ReadAuthoringFile reads
// it.
func TestReadFileRefusesYAML(t *testing.T) {
	yaml, err := os.ReadFile("testdata/notes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"manifest.yaml", "manifest.yml", "MANIFEST.YAML", "m.Yml", "x.json.yaml"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, yaml, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := manifest.ReadFile(path)
		if !errors.Is(err, manifest.ErrYAML) || !strings.Contains(err.Error(), signFix) {
			t.Errorf("ReadFile(%s) = %v, want ErrYAML naming the fix", name, err)
		}
		var se *manifest.SyntaxError
		if errors.As(err, &se) {
			t.Errorf("ReadFile(%s): a YAML file is no syntax error of JSON: %v", name, err)
		}
		if doc, err := manifest.ReadAuthoringFile(path); err != nil || doc.Manifest().AppID != "org.example.notes" {
			t.Errorf("ReadAuthoringFile(%s) = %v", name, err)
		}
	}
	// Refused by its name alone: a file that is not there is still ErrYAML, not "no such file".
	if _, err := manifest.ReadFile(filepath.Join(dir, "absent.yaml")); !errors.Is(err, manifest.ErrYAML) {
		t.Errorf("ReadFile(absent.yaml) = %v", err)
	}
	// JSON files are read by both.
	for _, read := range []func(string) (*manifest.Document, error){manifest.ReadFile, manifest.ReadAuthoringFile} {
		if _, err := read("testdata/notes.json"); err != nil {
			t.Errorf("notes.json: %v", err)
		}
	}
}

// YAML bytes where JSON is needed (a manifest.json that holds YAML, bytes handed to Parse,
// VerifyBytes or a registry) are a syntax error whose rule names the fix, however the YAML
// starts. JSON that is broken inside its object gets no such hint.
func TestParseNamesTheFixForYAML(t *testing.T) {
	yaml, err := os.ReadFile("testdata/notes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := string(yaml)
	for name, data := range map[string]string{
		"plain":           y,
		"comment first":   "# a manifest\n" + y,
		"document marker": "---\n" + y,
		"byte order mark": "\uFEFF" + y,
		"blank first":     " \n\t\n" + y,
		"CRLF":            strings.ReplaceAll(y, "\n", "\r\n"),
		"empty":           "",
	} {
		_, err := manifest.Parse([]byte(data))
		var se *manifest.SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Rule, signFix) {
			t.Errorf("%s: Parse = %v, want a syntax error naming the fix", name, err)
		}
		v := manifest.VerifyBytes([]byte(data), nil)
		if v.Tier != manifest.Tier2 || v.Reason != manifest.ReasonInvalidManifest || len(v.Problems) != 1 ||
			!strings.Contains(v.Problems[0].Rule, signFix) {
			t.Errorf("%s: VerifyBytes = %+v", name, v)
		}
	}
	for name, data := range map[string]string{
		"broken object":      `{"app_id": }`,
		"blank then broken":  "\n  {\"app_id\" 1}",
		"YAML flow mapping":  "{app_id: org.example.notes}",
		"BOM then broken":    "\uFEFF{,}",
		"an array, not JSON": `[1,]`,
	} {
		_, err := manifest.Parse([]byte(data))
		var se *manifest.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%s: Parse = %v, want a syntax error", name, err)
			continue
		}
		if strings.Contains(se.Rule, signFix) != (name == "an array, not JSON") {
			t.Errorf("%s: rule %q", name, se.Rule)
		}
	}
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(path, yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = manifest.ReadFile(path)
	var se *manifest.SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Rule, signFix) {
		t.Errorf("ReadFile(manifest.json holding YAML) = %v", err)
	}
}
