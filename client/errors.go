package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/capgate/capgate/client/wire"
)

// Error is a refusal or a failure the gateway answered: its code (one of package wire's
// Code constants), its message and what came with them. Test it with errors.Is against the
// sentinels below, or take it with errors.As for the consent request and the rest.
type Error struct {
	// Code is the gateway's error code, such as wire.CodeConsentRequired.
	Code string
	// Message is the gateway's words for the agent; the gateway puts no token, key or param
	// value in it.
	Message string
	// HTTPStatus is the answer's HTTP status: 200 for a call that was refused or failed (the
	// envelope says so), 401 for an unknown or disabled client, and the token endpoints'
	// own (202 for a token request that waits for the person, 403, 404, ...).
	HTTPStatus int
	// RequestID is the id of the request the envelope answers; "" for the token endpoints
	// and when the gateway could not read it.
	RequestID string
	// Consent is the consent request the person is asked to answer (CONSENT_REQUIRED: retry
	// once they have), or the one they denied or let expire (CONSENT_DENIED); nil when none.
	Consent *ConsentRef
	// Decision is the decision's outcome for a call the broker decided (allow, when the call
	// was allowed and then failed; deny, ask, handoff); "" otherwise.
	Decision string
	// CallID is the call's id in the audit log, for a call the broker decided.
	CallID string
	// Problems say where and why an envelope was refused (INVALID_REQUEST), never the value.
	Problems []Problem
	// Details are the answer's details as they came: for a handoff, "prepared" holds the
	// call as it was made, for the person to do themselves.
	Details map[string]any
	// Envelope is the answer itself, for the endpoints that answer with one (POST /v1/ipc
	// always, the others for 401 and an unreadable envelope); nil otherwise.
	Envelope *wire.Response
}

// ConsentRef is a consent request, by its id and its page on the gateway.
type ConsentRef = wire.ConsentRef

// Problem is where and why an envelope was refused.
type Problem = wire.Problem

// Error is "capgate: CODE: message".
func (e *Error) Error() string {
	if e.Message == "" {
		return "capgate: " + e.Code
	}
	return "capgate: " + e.Code + ": " + e.Message
}

// Is matches the sentinel of e's code, and ErrUnknownClient for a 401.
func (e *Error) Is(target error) bool {
	if c, ok := target.(codeError); ok {
		return string(c) == e.Code
	}
	return target == ErrUnknownClient && e.HTTPStatus == http.StatusUnauthorized
}

// codeError is a sentinel that matches every *Error of its code.
type codeError string

func (c codeError) Error() string { return "capgate: " + string(c) }

// The sentinels of the error codes: errors.Is(err, ErrConsentRequired) holds for every
// *Error of that code in err's chain.
var (
	ErrCapabilityDenied error = codeError(wire.CodeCapabilityDenied)
	ErrTokenExpired     error = codeError(wire.CodeTokenExpired)
	ErrTokenExhausted   error = codeError(wire.CodeTokenExhausted)
	ErrInvalidToken     error = codeError(wire.CodeInvalidToken)
	ErrInvalidRequest   error = codeError(wire.CodeInvalidRequest)
	ErrAppNotFound      error = codeError(wire.CodeAppNotFound)
	ErrMethodNotFound   error = codeError(wire.CodeMethodNotFound)
	ErrExecutionFailed  error = codeError(wire.CodeExecutionFailed)
	ErrTimeout          error = codeError(wire.CodeTimeout)
	ErrPermissionDenied error = codeError(wire.CodePermissionDenied)
	ErrConsentRequired  error = codeError(wire.CodeConsentRequired)
	ErrConsentDenied    error = codeError(wire.CodeConsentDenied)
	ErrHandoff          error = codeError(wire.CodeHandoff)
)

// ErrUnknownClient matches the *Error of a request the gateway did not take from any client
// (HTTP 401, code PERMISSION_DENIED): no key, a key that is no client's, or a disabled
// client's. ErrPermissionDenied matches it too, and a known client's call above its trust.
var ErrUnknownClient = errors.New("capgate: unknown client: the key (or the socket's uid) is no enabled client's")

// CodeOf returns the code of the first *Error in err's chain, "" when there is none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// ProtocolError is an answer that is not what the API defines: not capgate, a proxy's page,
// a gateway of another API version. It says what is wrong, never what the answer held.
type ProtocolError struct {
	Endpoint   string // "POST /v1/ipc"
	HTTPStatus int
	Reason     string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("client: %s: HTTP %d: %s", e.Endpoint, e.HTTPStatus, e.Reason)
}

// envelope reads a's body as an llm_response envelope, checking what every one holds.
func (a answer) envelope() (*wire.Response, error) {
	var env wire.Response
	if err := a.decodeJSON(&env); err != nil {
		return nil, err
	}
	b := env.Body
	switch {
	case env.Header.MsgType != wire.MsgResponse || env.Header.Version != wire.Version:
		return nil, a.protocol("the answer is not an llm_response envelope of version " + wire.Version)
	case b.Status == wire.StatusError && validCode(b.ErrorCode):
	case b.Status == wire.StatusSuccess && b.ErrorCode == "":
	default:
		return nil, a.protocol("the answer's body is neither a success nor an error with a code")
	}
	return &env, nil
}

// validCode reports whether s is an error code in the API's form: upper-case letters and
// underscores, such as CONSENT_REQUIRED (a newer gateway may add codes; none has another form).
func validCode(s string) bool {
	if s == "" || len(s) > maxCodeBytes || s[0] == '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < 'A' || s[i] > 'Z') && s[i] != '_' {
			return false
		}
	}
	return true
}

// envelopeError is the *Error of an error envelope.
func (a answer) envelopeError(env *wire.Response) *Error {
	b := env.Body
	e := &Error{Code: b.ErrorCode, Message: a.scrub(b.ErrorMessage), HTTPStatus: a.status, RequestID: env.Header.RequestID,
		Consent: b.Consent, Details: b.Details, Envelope: env}
	e.Decision, _ = b.Details["decision"].(string)
	e.CallID, _ = b.Details["call_id"].(string)
	if ps, ok := b.Details["problems"]; ok {
		// Decoded as any by the envelope; as Problems when they are what the API says.
		if raw, err := json.Marshal(ps); err == nil {
			_ = json.Unmarshal(raw, &e.Problems)
		}
	}
	return e
}

// failure is the error of an answer that is not the endpoint's success: an error envelope
// (401 on every route; /v1/explain's 400 and 413), or the token endpoints' flat error body.
func (a answer) failure() error {
	var probe struct {
		Header json.RawMessage `json:"header"`
	}
	if err := a.decodeJSON(&probe); err != nil {
		return err
	}
	if len(probe.Header) > 0 {
		env, err := a.envelope()
		if err != nil {
			return err
		}
		if env.Body.Status != wire.StatusError {
			return a.protocol("a success envelope with a status that is not 200")
		}
		return a.envelopeError(env)
	}
	var fe wire.FlatError
	if err := a.decodeJSON(&fe); err != nil {
		return err
	}
	if fe.Status != wire.StatusError || !validCode(fe.ErrorCode) || a.status == http.StatusOK {
		return a.protocol("the answer is neither the endpoint's success nor an error with a code")
	}
	return &Error{Code: fe.ErrorCode, Message: a.scrub(fe.ErrorMessage), HTTPStatus: a.status, Consent: fe.Consent}
}
