package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
)

// Agreed is a token whose terms the person approved in a request of another kind than a
// token request: a trigger's (consent.KindTrigger), which the trigger's firings are called
// under. The token is held by capgate for the client, never handed to it.
type Agreed struct {
	ConsentID string    // the approved request the terms come from
	Grants    []string  // the permissions, as the person approved them
	ExpiresAt time.Time // the end the person approved
	MaxUses   int64     // the uses the person approved, 0 for no limit
	AuditTag  string    // the token's audit tag: every call under it is recorded with it
}

// validFiringID reports whether id has the form of a trigger's firing id: "fir_" and 32
// lowercase hex digits.
func validFiringID(id string) bool {
	const prefix = "fir_"
	if len(id) != len(prefix)+32 || id[:len(prefix)] != prefix {
		return false
	}
	for _, c := range id[len(prefix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// IssueAgreed issues a token for caller under terms the person approved in the trigger
// request a.ConsentID: the request must be the caller's, of kind trigger, and approved, and
// an approval issues one token, once, on any replica (ErrConsentSpent after). The token is
// issued with the person's recorded consent, so its calls are decided as those of a token
// the person approved, under the mandates of the moment. It is recorded as a
// request_capability decision, as every token capgate issues.
func (b *Broker) IssueAgreed(ctx context.Context, caller Caller, a Agreed) (Issued, error) {
	now := b.o.Now()
	if err := b.clientAtUse(ctx, caller.ClientID); err != nil {
		return Issued{}, err
	}
	c, r, err := b.o.Consent.Get(ctx, a.ConsentID)
	if err != nil {
		return Issued{}, fmt.Errorf("%w: the approved request: %w", ErrIssueInvalid, err)
	}
	switch {
	case c.ClientID != caller.ClientID || r.ClientID != caller.ClientID:
		return Issued{}, fmt.Errorf("%w: the approved request is another client's", ErrIssueInvalid)
	case c.Kind != consent.KindTrigger || r.Kind != consent.KindTrigger:
		return Issued{}, fmt.Errorf("%w: the approved request is not a trigger's", ErrIssueInvalid)
	case c.State != store.ConsentApproved:
		return Issued{}, ErrIssueDenied
	}
	t := token.Token{
		ID: token.NewID(), Version: token.Version, Issuer: token.Issuer, IssuedAt: now.Unix(), ExpiresAt: a.ExpiresAt.Unix(),
		Capabilities: a.Grants, AuditTag: a.AuditTag, ClientID: caller.ClientID, ConsentID: a.ConsentID,
	}
	t.Constraints.MaxUses = a.MaxUses
	if err := token.Validate(t); err != nil {
		return Issued{}, fmt.Errorf("%w: %w", ErrIssueInvalid, err)
	}
	if err := b.spend(ctx, a.ConsentID); err != nil {
		return Issued{}, err
	}
	rec := audit.Record{Action: "request_capability", ClientID: caller.ClientID, TokenID: t.ID, AuditTag: clip(a.AuditTag), Kind: "decision",
		ConsentID: a.ConsentID, Explanation: "issued for a trigger the person approved"}
	return b.issue(ctx, t, rec)
}

// CallerOf is the caller a stored client calls as, as every front authenticates it.
func CallerOf(c store.Client) Caller {
	return Caller{ClientID: c.ID, Name: c.Name, Trust: c.Trust, NeverAsk: c.NeverAsk, RequireToken: c.RequireToken,
		Assistant: policy.Assistant(c.Assistant)}
}
