// Package sdk is the handler interface that Tier 1 apps written in Go implement, the Go form of
// the manifest document's CapabilityHandler: the gateway calls Invoke with a context carrying
// the call's deadline and an InvocationContext saying who asks and when.
//
// A handler acts on its app's own data model, never on a rendered surface: script injection
// into a view and UI automation are forbidden in capability handlers.
//
//	type notes struct{ doc *manifest.Document }
//
//	func (n *notes) Manifest() *manifest.Document { return n.doc }
//
//	func (n *notes) Invoke(ctx context.Context, id string, params json.RawMessage, ic sdk.InvocationContext) (sdk.Result, error) {
//		switch id {
//		case "notes.org.example.notes.search":
//			...
//			return sdk.Result{Success: true, Data: data}, nil
//		}
//		return sdk.Result{}, sdk.NotFound(id)
//	}
//
// The gateway checks params against the capability's parameters schema before Invoke, and
// then, for a handler that implements ParamValidator, by the handler's own rules: a call
// whose params break either is refused as INVALID_REQUEST, naming the field paths, and
// Invoke never sees it. ValidateParams runs the same two checks, for tests and hosts of
// their own.
package sdk

import (
	"context"
	"encoding/json"
	"time"

	"github.com/capgate/capgate/manifest"
)

// Handler is a Tier 1 app's capabilities. Invoke may be called concurrently; it must return
// when ctx is done, and its error should be an *Error (others are read as ExecutionFailed).
type Handler interface {
	// Manifest returns the app's manifest, loaded and valid.
	Manifest() *manifest.Document

	// Invoke runs one capability with params that passed ValidateParams.
	Invoke(ctx context.Context, capabilityID string, params json.RawMessage, ic InvocationContext) (Result, error)
}

// ParamValidator is implemented by a handler whose params have rules a schema cannot say
// (cross-field checks, business rules). The gateway calls it after its own check of the
// capability's parameters schema, never instead of it: the params it gets have passed the
// schema (strict JSON, no duplicate member), so it need not check them again. It is called
// for every call that gets that far, explain included, from many goroutines at once: it
// must be safe for concurrent use, quick, and without side effects.
//
// A nil error lets the call go on. Any error refuses the call as INVALID_REQUEST: an
// InvalidParams error names its field paths (its Problems, paths inside the params such as
// "items[2].qty", with the rule each breaks and never the value); any other error refuses
// the params as a whole, and its text is not shown. To refuse a call for another reason
// (the person may not, the state forbids it), return the error from Invoke instead.
type ParamValidator interface {
	ValidateParams(capabilityID string, params json.RawMessage) error
}

// Source is who started an invocation.
type Source string

// The sources of an invocation.
const (
	// SourceAgent is an AI agent calling through the gateway.
	SourceAgent Source = "agent"
	// SourceSystemIntelligence is the manifest document's only source: the system's own planner.
	SourceSystemIntelligence Source = "system_intelligence"
	// SourceUser is the person, acting through capgate's own surfaces (undo, for example).
	SourceUser Source = "user"
)

// InvocationContext says who asks and when. The deadline travels in the context.Context.
type InvocationContext struct {
	SessionID string    `json:"session_id,omitempty"`
	Source    Source    `json:"source"`
	Timestamp time.Time `json:"timestamp"`
	AppID     string    `json:"app_id"`
	ClientID  string    `json:"client_id,omitempty"` // the agent the gateway authenticated
	CallID    string    `json:"call_id,omitempty"`   // the audit record's id

	// WatchRevocation, when not nil, starts watching the grant the call runs under (its
	// token, and every token it was derived from): revoked is closed once any of them is
	// revoked, on this replica or another, and stop ends the watch. A handler that leaves work
	// running past the call (a background command) or runs long watches it, and stops that
	// work when revoked closes. Nil when the call runs under no token or the host does not
	// tell. Never sent to a process of the provider's own.
	WatchRevocation func() (revoked <-chan struct{}, stop func()) `json:"-"`
}

// Result is what a capability returns.
type Result struct {
	Success    bool            `json:"success"`
	Data       json.RawMessage `json:"data,omitempty"`
	StateAfter json.RawMessage `json:"state_after,omitempty"`
	UndoToken  string          `json:"undo_token,omitempty"`
}

// ValidateParams checks params for a capability of h as the gateway does: by
// DefaultValidateParams, and then, when they pass and h is a ParamValidator, by h's own
// rules, whose error it returns as it is.
func ValidateParams(h Handler, capabilityID string, params json.RawMessage) error {
	if err := DefaultValidateParams(h.Manifest(), capabilityID, params); err != nil {
		return err
	}
	if v, ok := h.(ParamValidator); ok {
		if len(params) == 0 {
			params = json.RawMessage("{}")
		}
		return v.ValidateParams(capabilityID, params)
	}
	return nil
}

// DefaultValidateParams checks params against the capability's parameters schema. It returns
// NotFound for a capability the manifest does not declare and InvalidParams, with every
// problem's field path, for params that break the schema or are not strict JSON.
func DefaultValidateParams(doc *manifest.Document, capabilityID string, params json.RawMessage) error {
	if doc == nil || doc.Manifest().Capability(capabilityID) == nil {
		return NotFound(capabilityID)
	}
	s := doc.ParametersSchema(capabilityID)
	if s == nil {
		return InvalidParams(manifest.Problems{{Path: "", Rule: "the capability's parameters schema does not compile"}})
	}
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	if err := s.ValidateJSON(params, ""); err != nil {
		ps, _ := err.(manifest.Problems)
		return InvalidParams(ps)
	}
	return nil
}

// Undoer is implemented by a handler whose capabilities can be undone. A capability with an
// undo window returns an UndoToken in its Result; within the window, capgate calls Undo with
// it, and the handler restores what the call changed, on its own data model.
type Undoer interface {
	Undo(ctx context.Context, capabilityID, undoToken string, ic InvocationContext) error
}

// Emit hands the host one event of the app's own, of a type its manifest declares in events:
// the host checks payload (a JSON object) against the event's payload_schema and gives it to
// the triggers waiting for it. eventID is the app's, unique among its events: the same id
// again is the same event, taken once. An error says the host refused it (an undeclared type,
// a payload its schema refuses) or could not be reached.
type Emit func(ctx context.Context, eventType, eventID string, payload json.RawMessage) error

// EventSource is implemented by a handler whose app emits events on its own (a folder it
// watches, a message it receives): the host calls Events once, when it can take them, on a
// goroutine of its own, with ctx ending when the app stops, and the handler emits through
// emit until then. Events need not return before ctx ends.
type EventSource interface {
	Events(ctx context.Context, emit Emit)
}
