package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
)

// The audit actions of the changes, one table every front writes from.
const (
	ActionConsentApprove  = "consent.approve"
	ActionConsentDeny     = "consent.deny"
	ActionConsentCancel   = "consent.cancel"
	ActionTokenRevoke     = "token.revoke"
	ActionMandateSet      = "mandate.set"
	ActionMandateDelete   = "mandate.delete"
	ActionClientAdd       = "client.add"
	ActionClientDisable   = "client.disable"
	ActionClientEnable    = "client.enable"
	ActionClientRemove    = "client.remove"
	ActionAppRegister     = "app.register"
	ActionToolAdd         = "toolserver.add"
	ActionToolRemove      = "toolserver.remove"
	ActionToolAccept      = "toolserver.accept"
	ActionToolKeepStopped = "toolserver.keep_stopped"
	ActionPluginInstall   = "plugin.install"
	ActionPluginUpgrade   = "plugin.upgrade"
	ActionPluginApprove   = "plugin.approve"
	ActionPluginRemove    = "plugin.remove"
)

// Revoker revokes a token and every token derived from it so that the very next decision
// refuses them (the broker, which drops what it caches of them). Safe for concurrent use.
type Revoker interface {
	Revoke(ctx context.Context, id string) error
}

// Mandates sets and removes the person's mandates so that the next decision sees them (the
// broker). A missing mandate is store.ErrNotFound. Safe for concurrent use.
type Mandates interface {
	PutMandate(ctx context.Context, m store.Mandate) error
	DeleteMandate(ctx context.Context, permission string) error
}

// Service makes the person's and the operator's changes outside a call, each written once,
// the same way whichever front asks: the approval page, the command line, the IPC API. Every
// change goes through Change (a decision record, the change, the outcome record, the code
// from Code). A Service is safe for concurrent use; a field a change needs and lacks fails
// that change with ErrUnavailable.
type Service struct {
	// Audit records the changes. Without it a change that widens what agents may do is
	// refused, and one that narrows it is made unrecorded (Warn is told).
	Audit Recorder
	// Consent answers consent requests.
	Consent *consent.Service
	// Tokens revokes tokens; Mandates sets and removes mandates.
	Tokens   Revoker
	Mandates Mandates
	// Clients adds and changes clients.
	Clients store.Clients
	// Registry registers apps from their manifests.
	Registry Registrar
	// Programs keeps how the apps that run out of process are started.
	Programs store.State
	// ToolServers adds, removes and accepts tool servers and their tools.
	ToolServers *toolserver.Env
	// Plugins installs, approves and removes plugins under the data folder's lockfile.
	Plugins *plugin.Host
	// NoAuditLog says there is no audit log to record plugin changes in at all: a data folder
	// no gateway has run on yet holds no store, and the lockfile is what a gateway serves once
	// it runs. Plugin changes are then made unrecorded; every other change still needs Audit.
	NoAuditLog bool
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Warn is told what goes wrong beside a change (a record not written); nil drops it.
	Warn func(action string, err error)
}

// ErrUnavailable is a change the Service was not given what it needs for.
var ErrUnavailable = errors.New("operator: this change is not available here")

func (s *Service) warn(action string) func(error) {
	return func(err error) {
		if s.Warn != nil {
			s.Warn(action, err)
		}
	}
}

// Verb is an answer to a consent request.
type Verb string

// The answers.
const (
	Approve Verb = "approve"
	Deny    Verb = "deny"
	Cancel  Verb = "cancel"
)

// ParseVerb reads an answer's name.
func ParseVerb(s string) (Verb, bool) {
	switch v := Verb(s); v {
	case Approve, Deny, Cancel:
		return v, true
	}
	return "", false
}

// Answer answers the consent request id with verb, by by (by.ID is also who the request
// says answered it). With remember, an approval also records the person's agreement as the
// act_if_agreed mandate of the request's permission. An approval is not given unrecorded; a
// denial or a cancellation, which only stops something, is. The request's errors are
// consent's (ErrNotPending, ErrInvalidRequest, store.ErrNotFound), recorded as
// INVALID_REQUEST.
func (s *Service) Answer(ctx context.Context, by Actor, id string, verb Verb, remember bool) error {
	if s.Consent == nil {
		return ErrUnavailable
	}
	if _, ok := ParseVerb(string(verb)); !ok {
		return fmt.Errorf("operator: %w: no answer %q", consent.ErrInvalidRequest, verb)
	}
	_, r, err := s.Consent.Get(ctx, id)
	if err != nil {
		return err
	}
	remember = remember && verb == Approve
	rec := audit.Record{Action: "consent." + string(verb), ConsentID: id, Capability: r.CapabilityID, Permission: r.Permission,
		Result: string(verb) + " requested", Explanation: fmt.Sprintf("%s answered the consent request %s: %s", by.Who, by.Where, verb)}
	if remember {
		rec.Explanation += ", remembering the agreement as an act_if_agreed mandate for the permission"
	}
	return Change(ctx, s.Audit, by.ID, rec, verb != Approve, func(*audit.Record) error {
		switch verb {
		case Approve:
			return s.Consent.Approve(ctx, id, by.ID, remember)
		case Deny:
			return s.Consent.Deny(ctx, id, by.ID)
		}
		return s.Consent.Cancel(ctx, id, by.ID)
	}, CodeOf(CodeInvalidRequest), s.warn(rec.Action))
}

// Revoke revokes the token id and every token derived from it, by by. A revocation only takes
// away: it is made even when it cannot be recorded. A token the store does not hold is
// store.ErrNotFound, recorded as INVALID_TOKEN.
func (s *Service) Revoke(ctx context.Context, by Actor, id string) error {
	if s.Tokens == nil {
		return ErrUnavailable
	}
	if id == "" || len(id) > audit.MaxFieldBytes {
		return fmt.Errorf("operator: token: %w", store.ErrNotFound)
	}
	rec := audit.Record{Action: ActionTokenRevoke, TokenID: id, Result: "revoke requested",
		Explanation: fmt.Sprintf("%s revoked the token, and every token derived from it, %s", by.Who, by.Where)}
	return Change(ctx, s.Audit, by.ID, rec, true, func(*audit.Record) error { return s.Tokens.Revoke(ctx, id) },
		CodeOf(CodeInvalidToken), s.warn(rec.Action))
}

// SetMandate sets the person's mandate m.Permission to m, by by. A mandate decides how later
// calls run, and may hand agents more (act where they asked): it is not set unrecorded.
func (s *Service) SetMandate(ctx context.Context, by Actor, m store.Mandate) error {
	if s.Mandates == nil {
		return ErrUnavailable
	}
	rec := audit.Record{Action: ActionMandateSet, Permission: m.Permission, Result: "mandate " + m.Autonomy + " requested",
		Explanation: fmt.Sprintf("%s set the mandate of the permission to %s %s", by.Who, m.Autonomy, by.Where)}
	if m.Autonomy == consent.AutonomyActIfAgreed {
		rec.Explanation += ", agreeing to the wording shown"
	}
	return Change(ctx, s.Audit, by.ID, rec, false, func(*audit.Record) error { return s.Mandates.PutMandate(ctx, m) },
		CodeOf(CodeInvalidRequest), s.warn(rec.Action))
}

// DeleteMandate removes the person's mandate of permission, by by: its calls are decided by
// the capability's ceiling and the rules again, which may hand agents more (a handoff
// removed), so it is not removed unrecorded. A permission with no mandate is no error: the
// outcome is what was asked.
func (s *Service) DeleteMandate(ctx context.Context, by Actor, permission string) error {
	if s.Mandates == nil {
		return ErrUnavailable
	}
	rec := audit.Record{Action: ActionMandateDelete, Permission: permission, Result: "mandate removal requested",
		Explanation: fmt.Sprintf("%s removed the mandate of the permission %s: its calls are decided by the capability's ceiling and the rules again", by.Who, by.Where)}
	return Change(ctx, s.Audit, by.ID, rec, false, func(*audit.Record) error {
		if err := s.Mandates.DeleteMandate(ctx, permission); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}, CodeOf(CodeInvalidRequest), s.warn(rec.Action))
}
