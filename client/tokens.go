package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/capgate/capgate/client/wire"
)

// Constraints narrow what a token allows: paths, commands, a CEL condition over the params.
// docs/openapi.yaml says what each holds and refuses.
type Constraints = wire.Constraints

// TokenRequest asks for a capability token (the token document's request_capability).
type TokenRequest struct {
	// Capabilities are the permissions asked for, or patterns such as "fs.*".
	Capabilities []string
	// Duration is the token's lifetime, in whole seconds (a fraction is dropped), at least a
	// second and at most 30 days.
	Duration time.Duration
	// MaxUses is how many successful uses the token allows; 0 takes Constraints.MaxUses, and
	// 0 there is no limit.
	MaxUses int64
	// Reason says why, in the agent's words: shown to the person, and kept as the token's
	// audit tag.
	Reason string
	// Constraints, when not nil, narrow the token.
	Constraints *Constraints
	// ConstraintsJSON, when set instead, are the constraints as JSON the caller already holds
	// (a command line's), sent as they stand for the gateway to decode strictly and name the
	// member it refuses.
	ConstraintsJSON json.RawMessage
}

// DeriveRequest asks for a strictly narrower child of one of the client's tokens.
type DeriveRequest struct {
	// Parent is the parent token's wire form.
	Parent string
	// Capabilities are the child's grants, each within one of the parent's.
	Capabilities []string
	// Duration is the child's lifetime from now, in whole seconds, ending no later than the
	// parent; 0 keeps the parent's expiry.
	Duration time.Duration
	// MaxUses is the child's limit, no more than the parent's uses; 0 keeps the parent's.
	MaxUses int64
	// Reason is the child's audit tag; "" keeps the parent's.
	Reason string
	// Constraints are added to the parent's: paths and commands within the parent's, denied
	// lists joined, conditions both held.
	Constraints *Constraints
	// ConstraintsJSON is as TokenRequest's.
	ConstraintsJSON json.RawMessage
}

// Token is an issued capability token.
type Token struct {
	// Wire is the token as a call carries it (Call.Token): a secret, which String and the
	// client's errors never show.
	Wire string
	// ID is the token's id, cap_..., by which it is revoked and named in the audit log.
	ID string
	// ExpiresAt is when the token stops working.
	ExpiresAt time.Time
	// ConsentID is the consent request the person approved to issue it; "" when none was
	// needed (and for a derived token, which needs none).
	ConsentID string
}

// String names the token by its id, never its wire form.
func (t Token) String() string { return "capability token " + t.ID }

// GoString is String, so that %#v does not print the wire form either.
func (t Token) GoString() string { return t.String() }

// RequestCapability asks for a token (POST /v1/capabilities/request). A token whose grants
// need the person's consent (medium- or high-risk permissions, and the always-consent ones
// such as fs.delete) waits for their answer as long as its consent request lives: approved,
// it is issued; denied or expired, the error is CONSENT_DENIED. A cancelled context (or
// Options.Timeout) withdraws the request. A client set never to ask gets CONSENT_REQUIRED at
// once; a request the gateway refuses to issue, INVALID_REQUEST naming the field.
func (c *Client) RequestCapability(ctx context.Context, r TokenRequest) (*Token, error) {
	body := wire.CapabilityRequest{Capabilities: r.Capabilities, MaxUses: r.MaxUses, Reason: r.Reason}
	var err error
	if body.Duration, err = seconds("TokenRequest.Duration", r.Duration); err != nil {
		return nil, err
	}
	if body.Constraints, err = constraints("TokenRequest", r.Constraints, r.ConstraintsJSON); err != nil {
		return nil, err
	}
	return c.issue(ctx, "/v1/capabilities/request", body)
}

// Derive asks for a child of r.Parent, one of this client's tokens (POST /v1/tokens/derive):
// no consent is asked, since it can do nothing its parent cannot; its uses count against the
// parent, and revoking the parent revokes it. A parent that is forged, another client's,
// revoked, expired or used up is INVALID_TOKEN; a child wider than its parent, INVALID_REQUEST.
func (c *Client) Derive(ctx context.Context, r DeriveRequest) (*Token, error) {
	body := wire.DeriveRequest{Token: r.Parent, Capabilities: r.Capabilities, MaxUses: r.MaxUses, Reason: r.Reason}
	var err error
	if r.Duration != 0 {
		if body.Duration, err = seconds("DeriveRequest.Duration", r.Duration); err != nil {
			return nil, err
		}
	}
	if body.Constraints, err = constraints("DeriveRequest", r.Constraints, r.ConstraintsJSON); err != nil {
		return nil, err
	}
	return c.issue(ctx, "/v1/tokens/derive", body, r.Parent)
}

// Revoke revokes one of this client's tokens, by its wire form or its id, and every token
// derived from it, before the next decision on any of them (POST /v1/tokens/revoke). It
// returns the token's id. A token that is not this client's is INVALID_TOKEN (HTTP 404), as
// an unknown one is.
func (c *Client) Revoke(ctx context.Context, token string) (string, error) {
	var r wire.Revoked
	a, err := c.doJSON(ctx, http.MethodPost, "/v1/tokens/revoke", wire.RevokeRequest{Token: token}, &r, token)
	if err != nil {
		return "", err
	}
	if r.Status != wire.StatusSuccess || r.TokenID == "" {
		return "", a.protocol("the revocation's answer names no token")
	}
	return r.TokenID, nil
}

// issue posts a token request or a derivation and reads the token it answers with.
func (c *Client) issue(ctx context.Context, path string, body any, secrets ...string) (*Token, error) {
	var it wire.IssuedToken
	a, err := c.doJSON(ctx, http.MethodPost, path, body, &it, secrets...)
	if err != nil {
		return nil, err
	}
	if it.Status != wire.StatusSuccess || it.Token == "" || it.TokenID == "" {
		return nil, a.protocol("the answer carries no token")
	}
	return &Token{Wire: it.Token, ID: it.TokenID, ExpiresAt: time.Unix(it.ExpiresAt, 0), ConsentID: it.ConsentID}, nil
}

// seconds is d in whole seconds for the wire. Less than a second would be 0, which a
// derivation reads as the parent's expiry: refused. A negative d is the gateway's to refuse.
func seconds(field string, d time.Duration) (int64, error) {
	if d > 0 && d < minDuration {
		return 0, fmt.Errorf("client: %s: at least a second", field)
	}
	return int64(d / time.Second), nil
}

// constraints is the constraints member of a request: typed or as JSON, not both.
func constraints(req string, typed *Constraints, raw json.RawMessage) (json.RawMessage, error) {
	switch {
	case typed != nil && raw != nil:
		return nil, errors.New("client: " + req + ".Constraints and ConstraintsJSON: set one, not both")
	case raw != nil:
		if !json.Valid(raw) {
			return nil, errors.New("client: " + req + ".ConstraintsJSON: not valid JSON")
		}
		return raw, nil
	case typed != nil:
		return json.Marshal(typed)
	}
	return nil, nil
}
