package broker

import (
	"bytes"
	"context"
	"errors"
	"slices"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
)

// A front whose client cannot wait on one connection for the person (MCP 2026-07-28, whose
// input requests the client answers by asking again) asks with AskOnly, which creates the
// consent request and returns at once, and asks again naming the request (Request.Consent,
// CapabilityRequest.Consent). The request named proves nothing by itself: it must be this
// client's, of the same kind, for the same call or the same grants and terms; and an approval
// counts once: one call runs, or one token is issued, whichever way it was reached.

// Resume errors.
var (
	// ErrConsentMismatch: the consent request named is not this client's request for this
	// call (or these grants), or there is none with its id.
	ErrConsentMismatch = errors.New("the consent request named is not this client's request for this call")
	// ErrConsentSpent: the person's approval named was already used by a call or a token.
	ErrConsentSpent = errors.New("the approval named was already used: it allows one call or one token")
)

// spentApp and spentPrefix name the state key that marks an approval used (store.State).
const (
	spentApp    = "capgate.broker"
	spentPrefix = "consent-spent/"
)

// spend marks the approval id used, once across replicas: ErrConsentSpent when it was.
func (b *Broker) spend(ctx context.Context, id string) error {
	err := b.o.Store.CreateState(ctx, spentApp, spentPrefix+id, []byte(b.o.Now().UTC().Format("2006-01-02T15:04:05.000Z")))
	if errors.Is(err, store.ErrExists) {
		return ErrConsentSpent
	}
	return err
}

// resumeCall loads the consent request a call names and checks that it is the request this
// call would make.
func (b *Broker) resumeCall(ctx context.Context, want consent.Request, id string) (store.Consent, error) {
	c, got, err := b.o.Consent.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, consent.ErrInvalidID) {
		return store.Consent{}, ErrConsentMismatch
	}
	if err != nil {
		return store.Consent{}, err
	}
	if c.ClientID != want.ClientID || got.ClientID != want.ClientID || c.Kind != consent.KindCall || got.Kind != consent.KindCall ||
		got.CapabilityID != want.CapabilityID || got.Permission != want.Permission || !sameJSON(got.Params, want.Params) {
		return store.Consent{}, ErrConsentMismatch
	}
	return c, nil
}

// resumeToken loads the token request a capability request names and checks that it asked
// for the same grants, reason and terms; it returns the record and the expiry the person saw.
func (b *Broker) resumeToken(ctx context.Context, caller Caller, r CapabilityRequest, t token.Token, id string) (store.Consent, int64, error) {
	c, got, err := b.o.Consent.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, consent.ErrInvalidID) {
		return store.Consent{}, 0, ErrConsentMismatch
	}
	if err != nil {
		return store.Consent{}, 0, err
	}
	terms := got.Token
	if c.ClientID != caller.ClientID || got.ClientID != caller.ClientID || c.Kind != consent.KindToken || got.Kind != consent.KindToken ||
		terms == nil || !slices.Equal(got.Grants, r.Capabilities) || got.Reason != r.Reason || terms.Lifetime != r.Duration ||
		terms.MaxUses != t.Constraints.MaxUses || !slices.Equal(terms.AllowedPaths, t.Constraints.AllowedPaths) ||
		!slices.Equal(terms.AllowedCommands, t.Constraints.AllowedCommands) || !slices.Equal(terms.DeniedCommands, t.Constraints.DeniedCommands) ||
		!slices.Equal(terms.DeniedPatterns, t.Constraints.DeniedPatterns) || terms.Condition != t.Constraints.Condition {
		return store.Consent{}, 0, ErrConsentMismatch
	}
	return c, terms.ExpiresAt.Unix(), nil
}

// sameJSON reports whether two JSON texts are the same value (by their RFC 8785 forms); the
// empty text is the empty object.
func sameJSON(a, b []byte) bool {
	canon := func(s []byte) ([]byte, bool) {
		if len(bytes.TrimSpace(s)) == 0 {
			s = []byte("{}")
		}
		v, err := jcs.Parse(s, nil)
		if err != nil {
			return nil, false
		}
		c, err := v.AppendCanonical(nil)
		return c, err == nil
	}
	ca, okA := canon(a)
	cb, okB := canon(b)
	return okA && okB && bytes.Equal(ca, cb)
}
