package gateway

import (
	"path/filepath"

	"github.com/capgate/capgate/internal/definition"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/manifest"
)

// DefinitionsFolder is the data folder's folder of signed definitions, when the
// configuration names none, and the ports folder's folder of the definitions of its ports.
const DefinitionsFolder = "definitions"

// definitionDirs are the folders the host's definitions are loaded from: cfg's definitions
// folder, and the definitions of its plugin ports (the ports folder's definitions).
func definitionDirs(cfg Config) []string {
	dir := cfg.DefinitionsDir
	if dir == "" {
		dir = filepath.Join(cfg.DataDir, DefinitionsFolder)
	}
	dirs := []string{dir}
	if cfg.PortsDir != "" {
		dirs = append(dirs, filepath.Join(cfg.PortsDir, DefinitionsFolder))
	}
	return dirs
}

// loadDefinitions loads the signed definitions of cfg's folders, each verified with its
// namespace's trusted key; a file left out is logged with why, and never stops the gateway.
// A port of the kit index (cfg.Suites) is the set of definitions it names: one it names that
// is not loaded is logged, and the port's capabilities implementing it are held to nothing.
func (g *Gateway) loadDefinitions(cfg Config) *definition.Set {
	dirs := definitionDirs(cfg)
	set, errs := definition.LoadDirs(dirs, cfg.DefinitionsRoot, AppKeys(cfg.DataDir, cfg.TrustedDir))
	for _, err := range errs {
		g.log.Warn("a definition file was not loaded", "folders", dirs, "err", err)
	}
	if n := len(set.All()); n > 0 {
		g.log.Info("definitions loaded", "folders", dirs, "count", n)
	}
	for _, name := range g.missingPortDefinitions(cfg, set) {
		g.log.Warn("a port names a definition that is not loaded", "definition", name)
	}
	return set
}

// missingPortDefinitions are the definitions the kit index's ports name that set lacks, as
// "PORT: NAME@MAJOR.MINOR".
func (g *Gateway) missingPortDefinitions(cfg Config, set *definition.Set) []string {
	if cfg.Suites == nil {
		return nil
	}
	var out []string
	for _, spelled := range cfg.Suites.Ports() {
		name, major, ok := port.SplitPort(spelled)
		if !ok {
			continue
		}
		p, ok := cfg.Suites.Port(name, major)
		if !ok {
			continue
		}
		for _, d := range p.Definitions {
			ref, err := manifest.ParseDefinitionRef(d)
			if err != nil || set.Find(ref.Name(), ref.Version().Major, ref.Version().Minor) == nil {
				out = append(out, spelled+": "+d)
			}
		}
	}
	return out
}
