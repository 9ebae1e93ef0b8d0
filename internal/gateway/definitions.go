package gateway

import (
	"path/filepath"

	"github.com/capgate/capgate/internal/definition"
)

// DefinitionsFolder is the data folder's folder of signed definitions, when the
// configuration names none.
const DefinitionsFolder = "definitions"

// loadDefinitions loads the signed definitions of cfg's folder, each verified with its
// namespace's trusted key; a file left out is logged with why, and never stops the gateway.
func (g *Gateway) loadDefinitions(cfg Config) *definition.Set {
	dir := cfg.DefinitionsDir
	if dir == "" {
		dir = filepath.Join(cfg.DataDir, DefinitionsFolder)
	}
	set, errs := definition.LoadDir(dir, cfg.DefinitionsRoot, AppKeys(cfg.DataDir, cfg.TrustedDir))
	for _, err := range errs {
		g.log.Warn("a definition file was not loaded", "folder", dir, "err", err)
	}
	if n := len(set.All()); n > 0 {
		g.log.Info("definitions loaded", "folder", dir, "count", n)
	}
	return set
}
