package gateway

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/store"
)

// AuditWitnesses reads the witness a configuration names (audit.ParseWitness: an absolute
// folder or an http(s) URL; "" for none). A folder witness inside the data folder is refused:
// whoever can cut the store's tail and its head file can cut it there too, so it would prove
// nothing the head file does not.
func AuditWitnesses(dataDir, spec string) ([]audit.Witness, error) {
	if spec == "" {
		return nil, nil
	}
	w, err := audit.ParseWitness(spec)
	if err != nil {
		return nil, err
	}
	if f, ok := w.(*audit.FolderWitness); ok {
		abs, err := filepath.Abs(dataDir)
		if err != nil {
			return nil, fmt.Errorf("gateway: data folder: %w", err)
		}
		if rel, err := filepath.Rel(abs, f.Dir); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return nil, errors.New("audit witness: a folder witness must be outside the data folder")
		}
	}
	return []audit.Witness{w}, nil
}

// AuditVerifyOptions are what `capgate audit verify` holds the store's log of the data folder
// dir against: the head file and the mirror beside the store, the state of st that only
// recorded calls make, and the witnesses.
func AuditVerifyOptions(dir string, st store.Store, witnesses []audit.Witness) *audit.VerifyOptions {
	return &audit.VerifyOptions{
		HeadFile:  filepath.Join(dir, HeadFile),
		Mirror:    filepath.Join(dir, AuditFile),
		Witnesses: witnesses,
		State:     st,
	}
}
