package sdk

import (
	"context"
	"errors"
	"fmt"

	"github.com/capgate/capgate/manifest"
)

// Code is the kind of a CapabilityError of the manifest document.
type Code string

// The codes of the manifest document's CapabilityError.
const (
	CodeNotFound         Code = "not_found"
	CodeInvalidParams    Code = "invalid_params"
	CodeExecutionFailed  Code = "execution_failed"
	CodePermissionDenied Code = "permission_denied"
	CodeTimeout          Code = "timeout"
	CodeAppUnresponsive  Code = "app_unresponsive"
)

// GatewayCode returns the token document's error code that the gateway answers with.
func (c Code) GatewayCode() string {
	switch c {
	case CodeNotFound:
		return "METHOD_NOT_FOUND"
	case CodeInvalidParams:
		return "INVALID_REQUEST"
	case CodePermissionDenied:
		return "PERMISSION_DENIED"
	case CodeTimeout:
		return "TIMEOUT"
	}
	return "EXECUTION_FAILED"
}

// Error is a capability's failure. Reason is shown to the agent and recorded in the audit log:
// it must not hold secrets.
type Error struct {
	Code         Code              `json:"code"`
	Reason       string            `json:"reason,omitempty"`
	Recoverable  bool              `json:"recoverable,omitempty"`
	CapabilityID string            `json:"capability_id,omitempty"`
	ElapsedMS    int64             `json:"elapsed_ms,omitempty"`
	AppID        string            `json:"app_id,omitempty"`
	Problems     manifest.Problems `json:"problems,omitempty"` // for CodeInvalidParams
}

func (e *Error) Error() string {
	switch e.Code {
	case CodeNotFound:
		return "capability not found: " + e.CapabilityID
	case CodeInvalidParams:
		if len(e.Problems) > 0 {
			return "invalid params: " + e.Problems.Error()
		}
		return "invalid params: " + e.Reason
	case CodeTimeout:
		return fmt.Sprintf("capability %s timed out after %d ms", e.CapabilityID, e.ElapsedMS)
	case CodeAppUnresponsive:
		return "app unresponsive: " + e.AppID
	}
	return string(e.Code) + ": " + e.Reason
}

// NotFound is the error for a capability the app does not have.
func NotFound(capabilityID string) *Error {
	return &Error{Code: CodeNotFound, CapabilityID: capabilityID}
}

// InvalidParams is the error for params that break the capability's rules.
func InvalidParams(ps manifest.Problems) *Error {
	return &Error{Code: CodeInvalidParams, Problems: ps, Reason: "params break the capability's schema"}
}

// ExecutionFailed is the error for a capability that ran and failed.
func ExecutionFailed(reason string, recoverable bool) *Error {
	return &Error{Code: CodeExecutionFailed, Reason: reason, Recoverable: recoverable}
}

// PermissionDenied is the error for an app that refuses the call itself.
func PermissionDenied(reason string) *Error {
	return &Error{Code: CodePermissionDenied, Reason: reason}
}

// Timeout is the error for a capability that did not finish in time.
func Timeout(capabilityID string, elapsedMS int64) *Error {
	return &Error{Code: CodeTimeout, CapabilityID: capabilityID, ElapsedMS: elapsedMS}
}

// AppUnresponsive is the error for an app that does not answer.
func AppUnresponsive(appID string) *Error {
	return &Error{Code: CodeAppUnresponsive, AppID: appID}
}

// AsError reads any error a handler returned as an *Error: an *Error as it is, a context
// deadline as Timeout, anything else as a non-recoverable ExecutionFailed whose reason is
// generic, since an arbitrary error's text may hold what the agent must not see.
func AsError(err error, capabilityID string) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Timeout(capabilityID, 0)
	}
	return ExecutionFailed("the capability failed", false)
}
