package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/capgate/capgate/internal/archive"
)

// signFix is the command a refusal of YAML must name.
const signFix = "capgate manifest sign -o manifest.json manifest.yaml"

// Install takes the package's signed manifest.json only. The same manifest as manifest.yaml is
// refused before anything is checked, and a manifest.json that holds YAML is refused as not
// JSON, each naming the command that signs the YAML into JSON; the lock stays empty. The JSON
// twin installs.
func TestInstallRefusesYAML(t *testing.T) {
	f := newFixture(t)
	src := f.writePlugin(t, "kb", baseManifest(), "v1", f.key)
	signed, err := os.ReadFile(filepath.Join(src, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	asYAML, err := yaml.JSONToYAML(signed)
	if err != nil {
		t.Fatal(err)
	}
	twin := func(name, manifestName string, body []byte) string {
		dir := filepath.Join(f.dir, "pkgs", name)
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, "manifest.json")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, manifestName), body, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	for _, name := range []string{"manifest.yaml", "manifest.yml", "Manifest.YAML"} {
		_, err := f.host.Install(twin("yaml-"+name, name, asYAML), Options{Approve: true})
		var ae *archive.Error
		if !errors.As(err, &ae) || !errors.Is(err, archive.ErrManifest) || !strings.Contains(err.Error(), signFix) {
			t.Errorf("%s: Install = %v, want an archive refusal naming the fix", name, err)
		}
	}

	out, err := f.host.Install(twin("yaml-in-json", "manifest.json", asYAML), Options{Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Refused || out.Applied || len(out.Problems) != 1 || !strings.Contains(out.Problems[0].Rule, signFix) {
		t.Fatalf("YAML in manifest.json: %+v", out)
	}
	if lf := locked(t, f.host); len(lf.Plugins)+len(lf.Pending) != 0 {
		t.Fatal("a YAML manifest reached the lock")
	}

	if out := mustInstall(t, f.host, src, Options{Approve: true}); !out.Applied {
		t.Fatalf("the JSON twin: %+v", out)
	}
}
