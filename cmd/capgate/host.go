package main

import (
	"context"
	"fmt"
	"time"

	"github.com/capgate/capgate/internal/config"
	"github.com/capgate/capgate/internal/conformance"
	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/egress"
	"github.com/capgate/capgate/internal/hostpolicy"
	"github.com/capgate/capgate/internal/intent"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/keys"
	"github.com/capgate/capgate/manifest"
)

// hostFlags are the settings every command that checks against the host shares.
type hostFlags struct {
	trustedDir, dataDir, sandboxRoot string
	sandbox                          string // --sandbox: how a provider runs for its conformance suites
	witness                          string // --audit-witness
}

// loaded is the configuration resolved by flag > environment > file > default.
type loaded struct {
	file       config.File
	trustedDir string
	dataDir    string
	store      string // "" (SQLite in the data folder), sqlite:PATH or a postgres:// URL
	configPath string // the configuration file read, "" when there was none
	witness    string // the audit log's witness: "" for none, a folder or an http(s) URL
	sandbox    string // --sandbox of a plugin command, "" when not given
}

func (g *globals) load(hf hostFlags) (loaded, error) {
	cfg, path, err := config.Load(g.config)
	if err != nil {
		return loaded{}, usageErr("%w", err)
	}
	l := loaded{
		file:       cfg,
		configPath: path,
		trustedDir: config.Resolve(hf.trustedDir, config.EnvTrustedDir, cfg.TrustedDir, keys.DefaultTrustedDir),
		dataDir:    config.Resolve(hf.dataDir, config.EnvDataDir, cfg.DataDir, config.DefaultDataDir()),
		store:      config.Resolve(g.store, config.EnvStore, cfg.Store, ""),
		witness:    config.Resolve(hf.witness, config.EnvAuditWitness, cfg.AuditWitness, ""),
		sandbox:    hf.sandbox,
	}
	if hf.sandboxRoot != "" {
		l.file.SandboxRoot = hf.sandboxRoot
	}
	if l.file.SandboxRoot == "" {
		l.file.SandboxRoot = config.DefaultSandboxRoot
	}
	return l, nil
}

// ceilings are the signed host policy's caps on every call's timeout (0: none) and on the
// providers' resource budgets: none without a policy file.
func (l loaded) ceilings() (time.Duration, map[string]int64, error) {
	if l.file.PolicyFile == "" {
		return 0, nil, nil
	}
	p, err := hostpolicy.Load(l.file.PolicyFile, keys.TrustStore{Dir: l.trustedDir})
	if err != nil {
		return 0, nil, usageErr("config: policy_file: %w", err)
	}
	return time.Duration(p.TimeoutCeilingMS) * time.Millisecond, p.BudgetCeiling, nil
}

// triggerLifetime is the signed host policy's bound on a trigger's end date (0: capgate's
// default).
func (l loaded) triggerLifetime() (time.Duration, error) {
	if l.file.PolicyFile == "" {
		return 0, nil
	}
	p, err := hostpolicy.Load(l.file.PolicyFile, keys.TrustStore{Dir: l.trustedDir})
	if err != nil {
		return 0, usageErr("config: policy_file: %w", err)
	}
	return time.Duration(p.TriggerMaxDays) * 24 * time.Hour, nil
}

// providerPolicy is the signed host policy's rule on the providers of a definition: none
// without a policy file.
func (l loaded) providerPolicy() (definition.Policy, error) {
	if l.file.PolicyFile == "" {
		return definition.Policy{}, nil
	}
	p, err := hostpolicy.Load(l.file.PolicyFile, keys.TrustStore{Dir: l.trustedDir})
	if err != nil {
		return definition.Policy{}, usageErr("config: policy_file: %w", err)
	}
	return p.Providers, nil
}

// intentHost is what the host knows for checking intents. Without a catalog or environment
// list in the configuration, those are not checked against the host (a developer's lint).
func (l loaded) intentHost() (intent.Host, error) {
	h := intent.Host{SandboxRoot: l.file.SandboxRoot, Protected: l.file.ProtectedMounts}
	if l.file.PolicyFile != "" {
		p, err := hostpolicy.Load(l.file.PolicyFile, keys.TrustStore{Dir: l.trustedDir})
		if err != nil {
			return h, usageErr("config: policy_file: %w", err)
		}
		h.AllowPrivate = p.AllowPrivate
	}
	if l.file.Credentials != nil {
		h.Credentials = set(l.file.Credentials.Names())
	}
	if l.file.Environments != nil {
		h.Environments = set(l.file.Environments)
	}
	return h, nil
}

func set(ss []string) map[string]bool {
	m := make(map[string]bool, len(ss))
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// pluginHost is the install host: at install the catalog and environments are always checked
// (an empty catalog allows no credential intent).
func (l loaded) pluginHost() (*plugin.Host, error) {
	ih, err := l.intentHost()
	if err != nil {
		return nil, err
	}
	if ih.Credentials == nil {
		ih.Credentials = map[string]bool{}
	}
	if ih.Environments == nil {
		ih.Environments = map[string]bool{}
	}
	h := &plugin.Host{
		DataDir:         l.dataDir,
		Trust:           keys.TrustStore{Dir: l.trustedDir},
		Intent:          ih,
		AllowDeprecated: l.file.AllowDeprecated,
	}
	if l.file.PortsDir != "" {
		reg, err := port.LoadDir(l.file.PortsDir)
		if err != nil {
			return nil, fmt.Errorf("ports_dir: %w", err)
		}
		h.Ports = reg
	}
	if h.DataDir == "" {
		return nil, usageErr("no data folder: set --data-dir, CAPGATE_DATA_DIR or data_dir")
	}
	mode, err := sandbox.ParseMode(config.Resolve(l.sandbox, config.EnvSandbox, l.file.Sandbox, ""))
	if err != nil {
		return nil, usageErr("--sandbox: must be on or off-unsafe")
	}
	h.Test = func(doc *manifest.Document, prog plugin.Program) ([]conformance.Result, error) {
		return runSuites(doc, prog, mode, h.Ports)
	}
	return h, nil
}

// runSuites runs the conformance suites of doc against its program prog, started in a
// sandbox of mode.
func runSuites(doc *manifest.Document, prog plugin.Program, mode sandbox.Mode, suites *port.Registry) ([]conformance.Result, error) {
	ctx := context.Background()
	box, err := sandbox.Open(ctx, mode)
	if err != nil {
		return nil, err
	}
	return conformance.RunProgram(ctx, doc, conformance.Program{Command: prog.Command, Digest: prog.Digest, Dir: prog.Dir}, box, suites, nil)
}

// pluginHost loads the configuration and builds the install host from it.
func (g *globals) pluginHost(hf hostFlags) (*plugin.Host, error) {
	l, err := g.load(hf)
	if err != nil {
		return nil, err
	}
	return l.pluginHost()
}

// egressCredentials are the catalog's entries that name a secret, as the egress proxy honours
// them; a name with no source is one plugins may declare, and gets no handle.
func egressCredentials(c config.Credentials) ([]egress.Credential, error) {
	var out []egress.Credential
	for _, name := range c.Names() {
		e := c[name]
		if e == nil {
			continue
		}
		cr := egress.Credential{Intent: name, Source: egress.Source{File: e.FromFile, Env: e.FromEnv}, Header: e.Header}
		for i, d := range e.Destinations {
			hp, err := egress.ParseHostPort(d)
			if err != nil {
				return nil, fmt.Errorf("credentials.%s.destinations[%d]: %w", name, i, err)
			}
			cr.Destinations = append(cr.Destinations, hp)
		}
		out = append(out, cr)
	}
	return out, nil
}
