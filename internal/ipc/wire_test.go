package ipc

import (
	"slices"
	"testing"

	"github.com/capgate/capgate/client/wire"
)

// TestWireCodes checks that the public wire form names every error code the code base
// answers with, and no other: a code added to policy or the broker without the client
// knowing it fails here.
func TestWireCodes(t *testing.T) {
	got, want := wire.Codes(), slices.Clone(errorCodes)
	slices.Sort(got)
	slices.Sort(want)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		t.Errorf("wire.Codes() = %v, want the codes the gateway answers with, %v", got, want)
	}
}
