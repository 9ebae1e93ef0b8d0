package broker

import (
	"context"

	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/manifest"
)

// Usable is one capability a caller may use, as the fronts list it (the IPC API's
// /v1/capabilities and MCP's tools/list): never one the caller would be refused outright.
type Usable struct {
	App *registry.App
	Cap *manifest.Capability
	// ID and Permission are the capability's id and the permission a token must grant for
	// it, parsed (registry.Capability's).
	ID         manifest.CapabilityID
	Permission manifest.Permission
	Method     string // the last part of the capability's id, the IPC "method"
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

// UsableBy lists the capabilities of the broker's registry that caller may use, in the
// registry's order: every capability of an enabled app whose provider is not down
// (ProviderState NotWorking), whose auth_level the caller's trust reaches, that is pinned
// (registry.Registry.Pinned) and whose last evaluation did not fail (SetFailedEvaluations).
// Unknown, disabled, not working, failed, unpinned and above-trust
// capabilities are refused outright and never listed. The fronts share it so
// that the IPC API and MCP list the same capabilities for the same client, and it reads
// step 5 of the decision as the decision does (policy.RunsWithoutToken), with the host's
// RequireToken.
func (b *Broker) UsableBy(caller Caller) []Usable {
	requireToken := b.requiresToken(caller)
	var out []Usable
	for _, app := range b.o.Registry.List() {
		if !app.Enabled {
			continue
		}
		if _, st := b.provider(app.ID); st == NotWorking {
			continue // step 1 refuses its calls: not working right now
		}
		caps := app.Doc.Manifest().Capabilities
		for i := range caps {
			c := &caps[i]
			if trustRank(caller.Trust) < c.AuthLevel.Rank() || !b.o.Registry.Pinned(c.ID) || policy.AssistantRefusal(caller.Assistant, c) != "" {
				continue // refused outright: never listed
			}
			id := c.ParsedID() // valid: the registry holds only manifests that passed Validate
			if _, failed := b.EvaluationFailed(id); failed {
				continue // step 1 refuses its calls: its last evaluation failed
			}
			// Without a token, only what policy.RunsWithoutToken names runs at once (and not
			// when it must be confirmed, or is a Tier 2 capability above read); the rest
			// waits for the person (a token request or a consent for the call), and says so.
			needs := !policy.RunsWithoutToken(*c, int(app.Tier), requireToken) || c.ConfirmationRequired ||
				(app.Tier != manifest.Tier1 && c.SideEffects.Rank() > manifest.SideEffectRead.Rank())
			out = append(out, Usable{App: app, Cap: c, ID: id, Permission: c.ParsedPermission(), Method: id.Action(), NeedsConsent: needs})
		}
	}
	return out
}

// UsableStamp is what UsableBy's answer for a caller depends on, as one comparable value:
// the registry's version, the set of failed evaluations, the caller's trust and whether it
// must hold tokens, and the state
// of every enabled app's provider. A front that read a stamp before a listing and reads an
// equal one later may keep the listing (MCP's per-request tool sync does); a listing is never
// what decides a call, which is decided afresh every time.
type UsableStamp struct {
	registry     uint64
	evaluations  uint64
	trust        manifest.AuthLevel
	assistant    policy.Assistant
	requireToken bool
	providers    uint64 // FNV-1a of each enabled app's provider state, in the registry's order
}

// UsableStamp returns the stamp of UsableBy(caller) as of now. Read it before the listing it
// stands for: a change between the two moves the next stamp.
func (b *Broker) UsableStamp(caller Caller) UsableStamp {
	st := UsableStamp{registry: b.o.Registry.Version(), evaluations: b.evaluationVersion(), trust: caller.Trust, assistant: caller.Assistant, requireToken: b.requiresToken(caller)}
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, app := range b.o.Registry.List() {
		if !app.Enabled {
			continue
		}
		_, state := b.provider(app.ID)
		h = (h ^ uint64(state)) * prime
	}
	st.providers = h
	return st
}

// NotWorkingRightNow is how a capability that cannot run at the moment is shown.
const NotWorkingRightNow = "not working right now"

// Listed is one capability of ListAll: usable, or shown as not working right now with why.
type Listed struct {
	Usable
	Working bool
	Why     string // when not working: why, in words for the person
}

// ListAll lists every capability caller's trust reaches (and, for another assistant, that
// its kind may reach), of enabled apps and of disabled
// ones: those UsableBy lists as working, and the others as not working right now, with why
// (the app is disabled, its provider is down, its tool changed since it was pinned, its last
// evaluation failed). What
// lies above the caller's trust is never listed. Nothing here is usable that UsableBy does
// not list: a front shows the rest, it never offers them.
func (b *Broker) ListAll(caller Caller) []Listed {
	usable := map[string]Usable{}
	for _, u := range b.UsableBy(caller) {
		usable[u.ID.String()] = u
	}
	var out []Listed
	for _, app := range b.o.Registry.List() {
		_, state := b.provider(app.ID)
		caps := app.Doc.Manifest().Capabilities
		for i := range caps {
			c := &caps[i]
			if trustRank(caller.Trust) < c.AuthLevel.Rank() || policy.AssistantRefusal(caller.Assistant, c) != "" {
				continue
			}
			if u, ok := usable[c.ID]; ok {
				out = append(out, Listed{Usable: u, Working: true})
				continue
			}
			id := c.ParsedID()
			l := Listed{Usable: Usable{App: app, Cap: c, ID: id, Permission: c.ParsedPermission(), Method: id.Action(), NeedsConsent: true}}
			switch {
			case !app.Enabled:
				l.Why = "the app is disabled"
			case state == NotWorking:
				l.Why = "its provider is not running"
			case !b.o.Registry.Pinned(c.ID):
				l.Why = "its definition changed since it was approved; the change waits for review"
			default:
				l.Why = NotWorkingRightNow
				if why, failed := b.EvaluationFailed(id); failed {
					l.Why = "its last evaluation failed: " + why
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// Plannable lists what planning may offer caller: UsableBy's capabilities, less those the
// person keeps to themselves (a mandate of handoff for the capability's permission: the
// agent never acts on it, so it is never a candidate). Mandates that cannot be read are an
// error, never a list without them: a mandate only narrows.
func (b *Broker) Plannable(ctx context.Context, caller Caller) ([]Usable, error) {
	usable := b.UsableBy(caller)
	out := usable[:0]
	for _, u := range usable {
		m, err := b.mandate(ctx, u.Permission)
		if err != nil {
			return nil, err
		}
		if m != nil && m.Autonomy == manifest.AutonomyHandoff {
			continue
		}
		out = append(out, u)
	}
	return out, nil
}
