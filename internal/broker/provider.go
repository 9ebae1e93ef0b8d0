package broker

import (
	"time"

	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// State is what the broker knows of an app's provider when a call names the app. The zero
// State is NoProvider: nothing runs.
type State uint8

const (
	// NoProvider: nothing on this gateway provides the app (one registered by its manifest
	// alone, whose provider runs nowhere here). The call is decided in full, so that its
	// token, params and constraints are checked, and answers APP_NOT_FOUND ("registered but
	// not running") where it would run.
	NoProvider State = iota
	// NotWorking: the app has a provider that cannot take calls right now: a built-in app
	// whose handler could not start (the terminal and python without a sandbox), a tool
	// server that is down or reconnecting. Step 1 of the decision refuses its calls as "not
	// working right now", and UsableBy lists none of its capabilities.
	NotWorking
	// Working: the provider takes calls.
	Working
)

// String returns the state's words, as the approval page shows them.
func (s State) String() string {
	switch s {
	case NotWorking:
		return "not working right now"
	case Working:
		return "working"
	}
	return "not running here"
}

// Providers finds the providers of the apps that Options.Handlers does not hold: the tool
// servers, which come and go while the gateway runs, and the built-in apps whose handler
// could not start. The broker asks it on every call and every listing, from many goroutines
// at once: its methods must be safe for concurrent use and answer from what the
// implementation already knows, never waiting on a provider.
type Providers interface {
	// Provider returns the provider of appID and its state. The handler is used only when
	// the state is Working; NoProvider is the answer for an app it knows nothing of.
	Provider(appID manifest.AppID) (sdk.Handler, State)
	// TrustedRead reports whether the Tier 2 capability capabilityID of appID was
	// classified as changing nothing (side effects none or read) by someone capgate trusts
	// rather than by the app: the operator's overlay of a tool server. Such a call runs
	// before its decision record is durable, as a Tier 1 read does, so that its answer
	// waits for one commit instead of two. false for anything it does not know.
	TrustedRead(appID manifest.AppID, capabilityID manifest.CapabilityID) bool
}

// Meter is told of every finished call, to count it: its outcome (allow, deny, ask,
// handoff), its code ("" for success) and how long the broker took. The gateway's metrics
// are one. CallDone is called by every call's goroutine at once and must not block.
type Meter interface {
	CallDone(outcome, code string, took time.Duration)
}

// provider returns the handler of appID and its state: Options.Handlers first (always
// working), then Options.Providers.
func (b *Broker) provider(appID manifest.AppID) (sdk.Handler, State) {
	if h, ok := b.o.Handlers[appID.String()]; ok {
		return h, Working
	}
	if b.o.Providers == nil {
		return nil, NoProvider
	}
	h, st := b.o.Providers.Provider(appID)
	if st == Working && h == nil {
		return nil, NoProvider
	}
	return h, st
}

// Provider returns the handler of appID's provider and its state, as a call would find it
// now; the handler is nil unless the state is Working. The gateway's evaluations run the
// conformance suites against it; nothing else should call a provider past the decision.
func (b *Broker) Provider(appID manifest.AppID) (sdk.Handler, State) {
	h, st := b.provider(appID)
	if st != Working {
		h = nil
	}
	return h, st
}

// ProviderState returns the state of appID's provider, as a call would find it now: the
// approval page shows an app that is not working.
func (b *Broker) ProviderState(appID manifest.AppID) State {
	_, st := b.provider(appID)
	return st
}
