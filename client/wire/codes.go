package wire

// The error codes of the API: the token document's, and the ones capgate adds where none
// fits. Every refusal and failure the gateway answers carries one of them.
const (
	// CodeCapabilityDenied: no token covers the permission, or a token's constraint refuses
	// these params.
	CodeCapabilityDenied = "CAPABILITY_DENIED"
	// CodeTokenExpired: the token (or an undo window) has expired.
	CodeTokenExpired = "TOKEN_EXPIRED"
	// CodeTokenExhausted: the token has no uses left.
	CodeTokenExhausted = "TOKEN_EXHAUSTED"
	// CodeInvalidToken: the token is forged, tampered with, revoked, another client's, or
	// unknown (an undo token too).
	CodeInvalidToken = "INVALID_TOKEN"
	// CodeInvalidRequest: the request does not parse, or its params break the capability's
	// schema.
	CodeInvalidRequest = "INVALID_REQUEST"
	// CodeAppNotFound: no such app, or it is not running.
	CodeAppNotFound = "APP_NOT_FOUND"
	// CodeMethodNotFound: no such capability, or it is disabled, unpinned or not working.
	CodeMethodNotFound = "METHOD_NOT_FOUND"
	// CodeExecutionFailed: the app ran and failed, or the gateway could not do what it was
	// asked.
	CodeExecutionFailed = "EXECUTION_FAILED"
	// CodeTimeout: the app did not answer within the capability's time limit.
	CodeTimeout = "TIMEOUT"

	// CodePermissionDenied: the client is unknown or disabled (HTTP 401), or its trust level
	// is below the capability's auth_level.
	CodePermissionDenied = "PERMISSION_DENIED"
	// CodeConsentRequired: the call or token request waits for the person's answer (the
	// answer names the consent request), or needs it and the client is set never to ask.
	CodeConsentRequired = "CONSENT_REQUIRED"
	// CodeConsentDenied: the person denied, or did not answer before the request expired.
	CodeConsentDenied = "CONSENT_DENIED"
	// CodeHandoff: the person's mandate hands this call to them; nothing ran, and the details
	// hold what was prepared.
	CodeHandoff = "HANDOFF"
)

// Codes returns every error code, in the order above, in a new slice.
func Codes() []string {
	return []string{
		CodeCapabilityDenied, CodeTokenExpired, CodeTokenExhausted, CodeInvalidToken, CodeInvalidRequest,
		CodeAppNotFound, CodeMethodNotFound, CodeExecutionFailed, CodeTimeout,
		CodePermissionDenied, CodeConsentRequired, CodeConsentDenied, CodeHandoff,
	}
}
