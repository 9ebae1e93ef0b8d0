// Package operator is the changes a person, an operator or a client makes to what the gateway
// holds, outside a call: revoking a token, disabling, enabling or removing a client, and the
// like. Every front (the command line, the approval page, the IPC API) records such a change
// the same way, through Change: a decision record before it is made and an outcome record
// after, with the code Code gives a failure, so that one change reads alike in the audit log
// whichever front made it.
package operator

import (
	"context"
	"errors"
	"fmt"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
)

// Recorder writes an audit record and returns once it is durable, or an error when it could
// not be written; *audit.Writer is one. It must be safe for concurrent use.
type Recorder interface {
	Append(ctx context.Context, rec audit.Record) (int64, error)
}

var _ Recorder = (*audit.Writer)(nil)

// Change makes one change by by (the audit log's client_id: the operator, the person, a
// client) with its two records in log: rec as a decision (allowed), then change, then the
// outcome, "success" or "error" with the code codeOf gives change's error. change may fill
// in the outcome record it is given, a copy of rec, with what it learns only as it makes the
// change. A change that widens what agents may do (narrows false) is not made when its
// decision cannot be recorded (nor when log is nil); one that narrows it (a revocation, a
// denial, a disabled client) is made all the same, and warn is told that it is unrecorded.
// A failure to record the outcome is told to warn: the change was made. Change returns
// change's error, or the recording error that kept the change from being made.
func Change(ctx context.Context, log Recorder, by string, rec audit.Record, narrows bool,
	change func(out *audit.Record) error, codeOf func(error) string, warn func(error)) error {
	out := rec
	rec.ClientID, rec.Kind, rec.Decision = by, audit.KindDecision, audit.DecisionAllow
	err := ErrNoRecorder
	if log != nil {
		_, err = log.Append(ctx, rec)
	}
	if err != nil {
		if !narrows {
			return fmt.Errorf("%w: %w", ErrNotRecorded, err)
		}
		warn(fmt.Errorf("done, but the audit log could not record it: %w", err))
		return change(&out)
	}
	err = change(&out)
	out.ClientID, out.Kind, out.Decision, out.Result, out.Code = by, audit.KindOutcome, audit.DecisionAllow, "success", ""
	if err != nil {
		out.Result, out.Code = "error", codeOf(err)
	}
	if _, derr := log.Append(ctx, out); derr != nil {
		warn(fmt.Errorf("the audit log could not record the outcome: %w", derr))
	}
	return err
}

// ErrNoRecorder is Change's recording error when it is given no Recorder.
var ErrNoRecorder = errors.New("operator: no audit recorder")

// ErrNotRecorded wraps the recording error of a change Change did not make because its
// decision could not be recorded.
var ErrNotRecorded = errors.New("not done: the audit log could not record it")

// invalid are the errors of a change that cannot be made as asked: what it names exists
// already or no longer waits, or changed since the person saw it. Each front answers them as
// it sees fit; the audit log names them all INVALID_REQUEST.
var invalid = []error{
	store.ErrExists,
	consent.ErrNotPending, consent.ErrInvalidRequest,
	toolserver.ErrNothingToAccept, toolserver.ErrNotToolServer, toolserver.ErrTaken, toolserver.ErrChangedAgain,
	plugin.ErrNotInstalled, plugin.ErrInstalled, plugin.ErrNoPending, plugin.ErrPendingChanged,
}

// Code is the audit code of a change that failed with err, the one table every front uses:
// notFound when what the change names does not exist (store.ErrNotFound: INVALID_TOKEN for a
// token, INVALID_REQUEST for anything else), INVALID_REQUEST for a change that cannot be
// made as asked, else EXECUTION_FAILED. A nil err has no code.
func Code(err error, notFound string) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, store.ErrNotFound):
		return notFound
	}
	for _, e := range invalid {
		if errors.Is(err, e) {
			return CodeInvalidRequest
		}
	}
	return CodeExecutionFailed
}

// CodeOf is Code with notFound fixed, as Change takes it.
func CodeOf(notFound string) func(error) string {
	return func(err error) string { return Code(err, notFound) }
}

// The codes of failed changes: the token document's.
const (
	CodeInvalidRequest  = "INVALID_REQUEST"
	CodeInvalidToken    = "INVALID_TOKEN"
	CodeExecutionFailed = "EXECUTION_FAILED"
	// CodeCapabilityDenied is a plugin change the lockfile refused (a reject).
	CodeCapabilityDenied = "CAPABILITY_DENIED"
)
