// Package providertest builds the test provider (sdk/provider/internal/testprovider), a real
// provider process with flags that make it misbehave, for the tests of the packages that
// start providers.
package providertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once     sync.Once
	built    string
	manifest []byte
	failure  string
)

// Build builds the test provider once per test binary and returns its path.
func Build(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		dir, err := os.MkdirTemp("", "testprovider")
		if err != nil {
			failure = err.Error()
			return
		}
		built = filepath.Join(dir, "testprovider")
		if out, err := exec.Command("go", "build", "-o", built, "github.com/capgate/capgate/sdk/provider/internal/testprovider").CombinedOutput(); err != nil {
			failure = "building the test provider: " + string(out)
			return
		}
		if manifest, err = exec.Command(built, "-manifest").Output(); err != nil {
			failure = "the test provider's manifest: " + err.Error()
		}
	})
	if failure != "" {
		t.Fatal(failure)
	}
	return built
}

// Manifest is the manifest the test provider reports (unsigned: at Tier 2).
func Manifest(t testing.TB) []byte {
	t.Helper()
	Build(t)
	return manifest
}
