package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv(EnvConfig, "")

	// No file at the default location is an empty configuration.
	cfg, path, err := Load("")
	if err != nil || !reflect.DeepEqual(cfg, File{}) || path != "" {
		t.Fatalf("Load with no file = %+v %q %v", cfg, path, err)
	}

	def := filepath.Join(dir, "capgate", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(def), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(def, []byte("# trusted keys\ntrusted_dir: /srv/keys\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, _, err := Load(""); err != nil || cfg.TrustedDir != "/srv/keys" {
		t.Fatalf("default file: %+v %v", cfg, err)
	}

	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"trusted_dir": "/other"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvConfig, other)
	if cfg, _, err := Load(""); err != nil || cfg.TrustedDir != "/other" {
		t.Fatalf("$CAPGATE_CONFIG: %+v %v", cfg, err)
	}
	if cfg, _, err := Load(def); err != nil || cfg.TrustedDir != "/srv/keys" {
		t.Fatalf("explicit path: %+v %v", cfg, err)
	}
	rel := filepath.Join(dir, "rel", "host.yaml")
	if err := os.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rel, []byte("trusted_dir: keys\nports_dir: ../ports\ndata_dir: /abs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err = Load(rel)
	if err != nil || cfg.TrustedDir != filepath.Join(dir, "rel", "keys") || cfg.PortsDir != filepath.Join(dir, "ports") || cfg.DataDir != "/abs" {
		t.Fatalf("relative folders: %+v %v", cfg, err)
	}
	if _, _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("a named file that is missing is not an error")
	}
}

func TestParseRefusesUnknownSettings(t *testing.T) {
	for _, in := range []string{"trusted_dirr: /x\n", "trusted_dir: [1]\n", "- a\n", "a: &x 1\nb: *x\n"} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		} else if strings.Contains(err.Error(), "/x") {
			t.Errorf("Parse(%q) error echoes the value: %v", in, err)
		}
	}
}

func TestResolveOrder(t *testing.T) {
	t.Setenv("CAPGATE_TEST_SETTING", "env")
	if got := Resolve("flag", "CAPGATE_TEST_SETTING", "file", "def"); got != "flag" {
		t.Errorf("flag: %s", got)
	}
	if got := Resolve("", "CAPGATE_TEST_SETTING", "file", "def"); got != "env" {
		t.Errorf("env: %s", got)
	}
	t.Setenv("CAPGATE_TEST_SETTING", "")
	if got := Resolve("", "CAPGATE_TEST_SETTING", "file", "def"); got != "file" {
		t.Errorf("file: %s", got)
	}
	if got := Resolve("", "CAPGATE_TEST_SETTING", "", "def"); got != "def" {
		t.Errorf("default: %s", got)
	}
}

// egress_resolver is an IP literal and a port: a name would need resolving itself, and the
// proxy's answers must come from the server the operator named.
func TestEgressResolver(t *testing.T) {
	for in, want := range map[string]string{"192.0.2.53:53": "192.0.2.53:53", "'[2001:db8::53]:5353'": "[2001:db8::53]:5353"} {
		f, err := Parse([]byte("egress_resolver: " + in))
		if err != nil || f.EgressResolver != want {
			t.Errorf("%s: %q, %v", in, f.EgressResolver, err)
		}
	}
	for _, in := range []string{"dns.example.com:53", "192.0.2.53", "192.0.2.53:0", "192.0.2.53:65536", "'[fe80::1%eth0]:53'", "'2001:db8::53'", "udp://192.0.2.53:53", "' 192.0.2.53:53'"} {
		if _, err := Parse([]byte("egress_resolver: " + in)); err == nil || !strings.Contains(err.Error(), "egress_resolver") {
			t.Errorf("%s: %v", in, err)
		}
	}
}
