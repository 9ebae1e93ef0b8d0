package broker

import (
	"strings"

	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/manifest"
)

// Usable is one capability a caller may use, as the fronts list it (the IPC API's
// /v1/capabilities and MCP's tools/list): never one the caller would be refused outright.
type Usable struct {
	App    *registry.App
	Cap    *manifest.Capability
	Method string // the last part of the capability's id, the IPC "method"
	// NeedsConsent: the capability does not run at once without a token; it waits for a
	// token (request_capability) or for the person's consent to the call.
	NeedsConsent bool
}

// trustRank ranks a client's trust level; a client is never system.
func trustRank(t manifest.AuthLevel) int {
	switch t {
	case manifest.AuthUser:
		return manifest.AuthUser.Rank()
	case manifest.AuthPrivileged, manifest.AuthSystem:
		return manifest.AuthPrivileged.Rank()
	}
	return manifest.AuthPublic.Rank()
}

// UsableBy lists the capabilities of reg that caller may use, in the registry's order: every
// capability of an enabled app whose auth_level the caller's trust reaches and that is pinned
// (registry.Registry.Pinned). Unknown, disabled, unpinned and above-trust capabilities are
// refused outright and never listed. The fronts share it so
// that the IPC API and MCP list the same capabilities for the same client.
func UsableBy(reg *registry.Registry, caller Caller) []Usable {
	var out []Usable
	for _, app := range reg.List() {
		if !app.Enabled {
			continue
		}
		caps := app.Doc.Manifest().Capabilities
		for i := range caps {
			c := &caps[i]
			if trustRank(caller.Trust) < c.AuthLevel.Rank() || !reg.Pinned(c.ID) {
				continue // refused outright: never listed
			}
			// Without a token, only public low-risk capabilities run at once; the rest wait for
			// the person (a token request or a consent for the call), and say so.
			needs := !(c.AuthLevel == manifest.AuthPublic && c.Risk == manifest.RiskLow) || c.ConfirmationRequired ||
				(app.Tier != manifest.Tier1 && c.SideEffects.Rank() > manifest.SideEffectRead.Rank())
			out = append(out, Usable{App: app, Cap: c, Method: c.ID[strings.LastIndexByte(c.ID, '.')+1:], NeedsConsent: needs})
		}
	}
	return out
}
