// Package gatewaytest holds test fixtures shared by the gateway's packages' tests: the
// broker's, the gateway's, the MCP and web fronts' and the tool servers'. Each is built of
// real parts and fails the test on any error, so that a test says what it checks, not how its
// world was made: a SQLite store in t.TempDir() (Store, OpenStore), a registry that verifies
// signatures with an app signed at Tier 1 (Registry, Register, NewKey, ProbeManifest), a
// client with a key minted as `capgate client add` mints one (AddClient), a token signed and
// recorded as an issuer does (Mint), the audit log's records (AuditRecords), the person
// answering consent requests (AnswerNext, WaitPending) and a tool server added to a data
// folder (AddToolServer, OpenRegistry).
//
// It imports none of the broker, the gateway or the fronts (nor internal/ipc, which imports
// the broker), so that the broker's own internal tests can use it without an import cycle; a
// fixture that needs one of them (a whole gateway opened on a data folder) stays beside its
// tests.
package gatewaytest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/capgate/capgate/internal/store/sqlite"
)

// Store opens a real SQLite store on a fresh file in t.TempDir(), closed when the test ends.
func Store(t testing.TB) *sqlite.Store {
	t.Helper()
	return OpenStore(t, filepath.Join(t.TempDir(), "capgate.db"))
}

// OpenStore opens the SQLite store at path, as another process on the same data folder would
// (the command line, a replica), closed when the test ends.
func OpenStore(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
