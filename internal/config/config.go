// Package config reads capgate's configuration file and resolves each setting in one order:
// command-line flag, then environment variable, then the file, then the default.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/capgate/capgate/internal/yamljson"
)

// MaxFileBytes bounds the configuration file: it is a handful of settings.
const MaxFileBytes = 1 << 20

// EnvConfig names the environment variable that points at the configuration file.
const EnvConfig = "CAPGATE_CONFIG"

// EnvTrustedDir names the environment variable for the trusted-keys folder.
const EnvTrustedDir = "CAPGATE_TRUSTED_DIR"

// EnvDataDir names the environment variable for capgate's data folder.
const EnvDataDir = "CAPGATE_DATA_DIR"

// EnvStore names the environment variable for the store: empty for SQLite in the data
// folder, or a postgres:// URL for replicas on PostgreSQL.
const EnvStore = "CAPGATE_STORE"

// EnvWorkspace names the environment variable for the built-in apps' workspace.
const EnvWorkspace = "CAPGATE_WORKSPACE"

// EnvSandbox names the environment variable for capgate serve's sandbox mode.
const EnvSandbox = "CAPGATE_SANDBOX"

// EnvAuditWitness names the environment variable for the audit log's witness.
const EnvAuditWitness = "CAPGATE_AUDIT_WITNESS"

// DefaultSandboxRoot is where plugins' filesystem intents must point.
const DefaultSandboxRoot = "/sandbox"

// File is the configuration file's content. Every field is optional; unknown fields are
// refused so that a misspelt setting is not silently ignored.
type File struct {
	// TrustedDir is the folder of trusted app public keys ({app_id}.pub and {app_id}.d/*.pub).
	TrustedDir string `json:"trusted_dir,omitempty"`
	// DataDir holds the lockfile and the store (default $XDG_DATA_HOME/capgate).
	DataDir string `json:"data_dir,omitempty"`
	// Store is where the gateway keeps its state: empty for SQLite in the data folder (the
	// default), "sqlite:PATH", or a postgres:// URL, which several replicas can share.
	Store string `json:"store,omitempty"`
	// Workspace is the folder the built-in files, editor, terminal and python apps work in
	// (default: beside the data folder, DATA-workspace).
	Workspace string `json:"workspace,omitempty"`
	// Sandbox is how the terminal's commands and python's scripts run: "on" (the default) in
	// a bubblewrap sandbox each, or "off-unsafe" with capgate's own rights.
	Sandbox string `json:"sandbox,omitempty"`
	// AuditWitness is where the gateway also sends every audit checkpoint it signs, and what
	// `capgate audit verify` compares the log with: an absolute folder outside the data
	// folder (another disk or machine), or the http(s) URL of a `capgate audit witness`.
	AuditWitness string `json:"audit_witness,omitempty"`

	// SandboxRoot is the folder every filesystem intent must lie in (default /sandbox).
	SandboxRoot string `json:"sandbox_root,omitempty"`
	// ProtectedMounts are folders under the sandbox root no intent may reach.
	ProtectedMounts []string `json:"protected_mounts,omitempty"`
	// Credentials is the host's credential catalog: the intent names a plugin may ask for,
	// and where the secret of each that capgate honours comes from (see Credentials).
	Credentials Credentials `json:"credentials,omitempty"`
	// EgressResolver is the DNS server the egress proxy asks for its destinations' addresses,
	// as IP:PORT ("192.0.2.53:53", "[2001:db8::53]:53"); empty for the servers of
	// /etc/resolv.conf. A name is still resolved once per connection and every address
	// classified, whichever server answers.
	EgressResolver string `json:"egress_resolver,omitempty"`
	// Environments are the environment names and tags the host knows.
	Environments []string `json:"environments,omitempty"`
	// PortsDir is the host's own copy of the port descriptors, with kits.json.
	PortsDir string `json:"ports_dir,omitempty"`
	// EvaluationInterval is how often capgate serve runs the conformance suites of
	// ports_dir against the running providers, as a duration ("6h", the default; at least
	// "1m"), or "off" for never; a capability that fails its last run is not working right
	// now until one passes.
	EvaluationInterval string `json:"evaluation_interval,omitempty"`
	// DefinitionsDir is the folder of signed definitions (capabilities by meaning) the host
	// knows (default: DATA/definitions).
	DefinitionsDir string `json:"definitions_dir,omitempty"`
	// DefinitionsRoot is the reverse-DNS root of the host's own definition names (default
	// org.capgate); a definition outside it must extend another.
	DefinitionsRoot string `json:"definitions_root,omitempty"`
	// PolicyFile is the host's signed policy (private destinations plugins may declare,
	// ceilings), verified with the trusted key for "capgate.policy".
	PolicyFile string `json:"policy_file,omitempty"`
	// AllowDeprecated lets a version past its deprecated_after install.
	AllowDeprecated bool `json:"allow_deprecated,omitempty"`
	// RequireToken requires a token for every call of every client (capgate serve
	// --require-token): a low-risk read then runs without one only when it is public.
	RequireToken bool `json:"require_token,omitempty"`
}

// DefaultDataDir returns $XDG_DATA_HOME/capgate, or ~/.local/share/capgate.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "capgate")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".local", "share", "capgate")
}

// DefaultPath returns the configuration file's default location:
// $XDG_CONFIG_HOME/capgate/config.yaml, or ~/.config/capgate/config.yaml.
func DefaultPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "capgate", "config.yaml")
}

// Load reads the configuration file at path, or, when path is empty, at $CAPGATE_CONFIG or
// DefaultPath. A missing file at a default location is an empty configuration; a missing
// file that was named explicitly is an error.
func Load(path string) (File, string, error) {
	explicit := path != ""
	if !explicit {
		path = os.Getenv(EnvConfig)
		explicit = path != ""
	}
	if path == "" {
		path = DefaultPath()
	}
	if path == "" {
		return File{}, "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return File{}, "", nil
		}
		return File{}, path, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return File{}, path, fmt.Errorf("config: read %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return File{}, path, fmt.Errorf("config: %s: larger than %d bytes", path, MaxFileBytes)
	}
	cfg, err := Parse(data)
	if err != nil {
		return File{}, path, fmt.Errorf("config: %s: %w", path, err)
	}
	// Folders named in the file are relative to the file, not to wherever capgate runs.
	base := filepath.Dir(path)
	for _, p := range []*string{&cfg.TrustedDir, &cfg.DataDir, &cfg.Workspace, &cfg.PortsDir, &cfg.PolicyFile, &cfg.DefinitionsDir} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	cfg.Credentials.resolveFiles(base)
	return cfg, path, nil
}

// Parse reads a configuration file's YAML (or JSON, which is YAML too).
func Parse(data []byte) (File, error) {
	js, err := yamljson.Convert(data)
	if err != nil {
		return File{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var cfg File
	if err := dec.Decode(&cfg); err != nil {
		return File{}, fmt.Errorf("not a capgate configuration: %w", err)
	}
	if cfg.EgressResolver != "" {
		if ap, err := netip.ParseAddrPort(cfg.EgressResolver); err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" {
			return File{}, errors.New("egress_resolver: must be a DNS server's IP:PORT, such as 192.0.2.53:53 or [2001:db8::53]:53")
		}
	}
	return cfg, nil
}

// Resolve returns the first non-empty of flag, the environment variable env, the file's
// value and def.
func Resolve(flag, env, file, def string) string {
	for _, v := range []string{flag, os.Getenv(env), file} {
		if v != "" {
			return v
		}
	}
	return def
}
