package wire

import "encoding/json"

// CapabilityRequest is the body of POST /v1/capabilities/request, the token document's
// request_capability.
type CapabilityRequest struct {
	Action       string   `json:"action,omitempty"` // accepted and ignored: "request_capability"
	Capabilities []string `json:"capabilities"`     // permissions or patterns such as fs.*
	Duration     int64    `json:"duration"`         // the token's lifetime in seconds
	MaxUses      int64    `json:"max_uses"`         // 0: Constraints' max_uses, and 0 there is no limit
	Reason       string   `json:"reason"`           // shown to the person; the token's audit tag
	// Constraints is a Constraints object; absent is none. It is kept as JSON so that the
	// gateway decodes it strictly, member by member, and says which rule it breaks.
	Constraints json.RawMessage `json:"constraints,omitempty"`
}

// DeriveRequest is the body of POST /v1/tokens/derive: a strictly narrower child of Token.
type DeriveRequest struct {
	Token        string          `json:"token"` // the parent's wire form
	Capabilities []string        `json:"capabilities"`
	Duration     int64           `json:"duration"` // seconds; 0 keeps the parent's expiry
	MaxUses      int64           `json:"max_uses"` // 0 keeps the parent's limit
	Reason       string          `json:"reason"`   // the child's audit tag
	Constraints  json.RawMessage `json:"constraints,omitempty"`
}

// Constraints are a token's constraints as a request carries them.
type Constraints struct {
	MaxUses         int64    `json:"max_uses,omitempty"` // used only when the request's max_uses is 0
	AllowedPaths    []string `json:"allowed_paths,omitempty"`
	AllowedCommands []string `json:"allowed_commands,omitempty"`
	DeniedCommands  []string `json:"denied_commands,omitempty"`
	DeniedPatterns  []string `json:"denied_patterns,omitempty"`
	Condition       string   `json:"condition,omitempty"` // a CEL predicate over the params
}

// IssuedToken is the success answer of POST /v1/capabilities/request and of
// POST /v1/tokens/derive (which has no consent_id).
type IssuedToken struct {
	Status    string `json:"status"`     // StatusSuccess
	Token     string `json:"token"`      // the wire form: cgt1. and base64url
	TokenID   string `json:"token_id"`   // cap_...
	ExpiresAt int64  `json:"expires_at"` // Unix seconds
	ConsentID string `json:"consent_id,omitempty"`
}

// RevokeRequest is the body of POST /v1/tokens/revoke.
type RevokeRequest struct {
	Token string `json:"token"` // a wire form or a token id
}

// Revoked is the success answer of POST /v1/tokens/revoke.
type Revoked struct {
	Status  string `json:"status"` // StatusSuccess
	TokenID string `json:"token_id"`
}

// FlatError is the error answer of the token endpoints, which are not envelopes (their 401
// is, as on every route).
type FlatError struct {
	Status       string      `json:"status"` // StatusError
	ErrorCode    string      `json:"error_code"`
	ErrorMessage string      `json:"error_message"`
	Consent      *ConsentRef `json:"consent,omitempty"`
}
