// Package sandboxtest opens the real sandbox for tests: bubblewrap on this machine. Without
// it a test skips saying so, except in CI (CI=true), where .ci/run installs bubblewrap and a
// missing sandbox is a failure, never a silent skip.
package sandboxtest

import (
	"context"
	"os"
	"testing"

	"github.com/capgate/capgate/internal/sandbox"
)

// Open returns the enforcing sandbox, or ends the test: a skip outside CI, a failure in CI.
func Open(tb testing.TB) *sandbox.Sandbox {
	tb.Helper()
	s, err := sandbox.Open(context.Background(), sandbox.ModeOn)
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("the sandbox is required in CI: %v", err)
		}
		tb.Skipf("no sandbox on this machine (install bubblewrap to run this test): %v", err)
	}
	return s
}
