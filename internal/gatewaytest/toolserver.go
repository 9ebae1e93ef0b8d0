package gatewaytest

import (
	"context"
	"os"
	"testing"

	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/internal/toolserver"
)

// OpenRegistry opens the SQLite store at db and a registry on it that trusts no key, as the
// command line does on a data folder with no gateway running; both close when the test ends.
func OpenRegistry(t testing.TB, db string) (*sqlite.Store, *registry.Registry) {
	t.Helper()
	st := OpenStore(t, db)
	reg, err := registry.New(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, reg
}

// AddToolServer adds the tool server c to the data folder data, whose store is the SQLite
// file db, as `capgate toolserver add` does with no gateway running: the store is open only
// while it adds, so that a gateway opened next is its only user. It returns what was added.
func AddToolServer(t testing.TB, db, data string, c toolserver.Config) toolserver.Report {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := toolserver.Add(ctx, &toolserver.Env{Store: st, Registry: reg, DataDir: data, Sandbox: sandboxtest.Open(t)}, c)
	if err != nil {
		t.Fatalf("add the tool server %s: %v", c.Name, err)
	}
	return r
}
