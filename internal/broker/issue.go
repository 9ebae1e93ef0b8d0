package broker

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// CapabilityRequest is request_capability: what an agent asks to be allowed, for how long,
// how many times, why, and under which constraints.
type CapabilityRequest struct {
	Capabilities []string          `json:"capabilities"`
	Duration     int64             `json:"duration"` // seconds
	MaxUses      int64             `json:"max_uses"`
	Reason       string            `json:"reason"`
	Constraints  token.Constraints `json:"-"`
	// OnConsent, when set, is told the id of the consent request the grants need, once it is
	// pending and before RequestCapability waits for the answer. It must not block.
	OnConsent func(consentID string) `json:"-"`
	// AskOnly: grants that need the person's consent create the request and return at once
	// (ErrIssuePending), instead of waiting; the front asks again with Consent (resume.go).
	AskOnly bool `json:"-"`
	// Consent names the token request an earlier capability request of this client made for
	// the same grants, reason and terms: it waits for that request's answer instead of asking
	// again, and the token expires when the person was shown. Another client's request, or
	// one for other grants or terms, is ErrIssueInvalid; an approval issues one token, once.
	Consent string `json:"-"`
}

// Issued is a token handed to the agent.
type Issued struct {
	Wire      string    `json:"token"`
	ID        string    `json:"token_id"`
	ExpiresAt time.Time `json:"expires_at"`
	ConsentID string    `json:"consent_id,omitempty"`
}

// Issue errors.
var (
	ErrIssueInvalid = errors.New("invalid capability request")
	ErrIssueDenied  = errors.New("the person did not approve the request")
	ErrIssuePending = errors.New("the request waits for the person's consent")
	// ErrIssueNeverAsk: the grants need consent and the client is set never to ask.
	ErrIssueNeverAsk = errors.New("the grants need the person's consent and the client is set never to ask")
	// ErrIssueExpired: the request expired before the person answered it; it is denied, and
	// wraps ErrIssueDenied.
	ErrIssueExpired = fmt.Errorf("%w: no answer came before the request expired", ErrIssueDenied)
	// ErrIssueWithdrawn: the client went away before the person answered, and its request
	// was withdrawn.
	ErrIssueWithdrawn = errors.New("the client went away before the person answered; the request was withdrawn")
)

// expiryGrace is how long past a request's expiry a token request still waits for the sweep
// that marks it expired (Wait sweeps it itself at the expiry).
const expiryGrace = 2 * time.Second

// withdraw cancels a pending token request whose client went away, and records it, on a
// context of its own: the call's is done.
func (b *Broker) withdraw(ctx context.Context, caller Caller, consentID string, rec audit.Record) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := b.o.Consent.Cancel(wctx, consentID, "client "+caller.ClientID+" (gone)"); err != nil {
		return // answered or expired meanwhile: nothing to withdraw
	}
	rec.Decision, rec.Code, rec.Result = "deny", policy.CodeConsentDenied, "withdrawn"
	rec.Explanation = "the client went away before the person answered; its token request was withdrawn"
	_, _ = b.o.Audit.Append(wctx, rec)
}

// RequestCapability issues a token for caller, after the person's consent where the grants
// need it (medium- or high-risk permissions and the always-consent ones). It waits for the
// answer as long as the request lives; when ctx ends first (the client went away), it
// withdraws the request and returns ErrIssueWithdrawn.
func (b *Broker) RequestCapability(ctx context.Context, caller Caller, r CapabilityRequest) (Issued, error) {
	now := b.o.Now()
	// A client disabled or removed since a front authenticated it gets no token, and asks
	// the person nothing (ErrClientRefused).
	if err := b.clientAtUse(ctx, caller.ClientID); err != nil {
		return Issued{}, err
	}
	if r.Duration <= 0 {
		return Issued{}, fmt.Errorf("%w: duration must be positive seconds", ErrIssueInvalid)
	}
	t := token.Token{
		ID: token.NewID(), Version: token.Version, Issuer: token.Issuer, IssuedAt: now.Unix(), ExpiresAt: now.Unix() + r.Duration,
		Capabilities: r.Capabilities, Constraints: r.Constraints, AuditTag: r.Reason, ClientID: caller.ClientID,
	}
	t.Constraints.MaxUses = r.MaxUses
	if err := token.Validate(t); err != nil {
		return Issued{}, fmt.Errorf("%w: %w", ErrIssueInvalid, err)
	}
	rec := audit.Record{Action: "request_capability", ClientID: caller.ClientID, TokenID: t.ID, AuditTag: clip(r.Reason), Kind: "decision"}
	if policy.NeedsConsentToIssue(r.Capabilities, b.o.Registry.RiskOf) {
		if caller.NeverAsk {
			rec.Decision, rec.Code, rec.Result = "deny", policy.CodeConsentRequired, "refused"
			_, _ = b.o.Audit.Append(ctx, rec)
			return Issued{}, ErrIssueNeverAsk
		}
		var c store.Consent
		var err error
		if r.Consent != "" {
			var exp int64
			c, exp, err = b.resumeToken(ctx, caller, r, t, r.Consent)
			if errors.Is(err, ErrConsentMismatch) {
				return Issued{}, fmt.Errorf("%w: %w", ErrIssueInvalid, err)
			}
			if err != nil {
				return Issued{}, err
			}
			t.ExpiresAt = exp
		} else {
			// The person sees what the token would be: its expiry (fixed now, whenever they
			// answer), uses and constraints, exactly as it will be signed.
			c, err = b.o.Consent.Ask(ctx, consent.Request{
				ClientID: caller.ClientID, ClientName: caller.Name, Kind: consent.KindToken, Grants: r.Capabilities,
				Reason: r.Reason, AuditTag: r.Reason, Summary: "issue a capability token",
				Risk: string(b.worstRisk(r.Capabilities)), Reversibility: consent.Revocable,
				Token: &consent.TokenTerms{ExpiresAt: time.Unix(t.ExpiresAt, 0).UTC(), Lifetime: t.ExpiresAt - t.IssuedAt,
					MaxUses: t.Constraints.MaxUses, AllowedPaths: t.Constraints.AllowedPaths, AllowedCommands: t.Constraints.AllowedCommands,
					DeniedCommands: t.Constraints.DeniedCommands, DeniedPatterns: t.Constraints.DeniedPatterns, Condition: t.Constraints.Condition},
			})
		}
		if errors.Is(err, consent.ErrInvalidRequest) {
			// What cannot be shown to the person (a constraint with a bidirectional control,
			// say) is not asked, and not issued.
			return Issued{}, fmt.Errorf("%w: it cannot be shown to the person: %w", ErrIssueInvalid, err)
		}
		if err != nil {
			return Issued{}, err
		}
		t.ConsentID = c.ID
		rec.ConsentID = c.ID
		if c.State == store.ConsentPending && r.AskOnly {
			return Issued{ConsentID: t.ConsentID}, ErrIssuePending
		}
		if c.State == store.ConsentPending {
			if r.OnConsent != nil {
				r.OnConsent(c.ID)
			}
			// The answer is the token, which nobody can fetch later: wait as long as the
			// request lives (it ends answered or expired), and withdraw it when the client
			// goes away first (interrupted, disconnected, its MCP call cancelled), so that
			// the person is not asked for a token nobody will take.
			wctx, cancel := context.WithDeadline(ctx, c.Expires.Add(expiryGrace))
			c, err = b.o.Consent.Wait(wctx, t.ConsentID)
			cancel()
			if err != nil && ctx.Err() != nil {
				b.withdraw(ctx, caller, t.ConsentID, rec)
				return Issued{ConsentID: t.ConsentID}, ErrIssueWithdrawn
			}
			if err != nil {
				return Issued{ConsentID: t.ConsentID}, ErrIssuePending
			}
		}
		if c.State != store.ConsentApproved {
			rec.Decision, rec.Code, rec.Result = "deny", policy.CodeConsentDenied, "refused"
			_, _ = b.o.Audit.Append(ctx, rec)
			if c.State == store.ConsentExpired {
				return Issued{ConsentID: t.ConsentID}, ErrIssueExpired
			}
			return Issued{ConsentID: t.ConsentID}, ErrIssueDenied
		}
		// An approval issues one token: the first to reach here takes it, on any replica.
		if err := b.spend(ctx, t.ConsentID); errors.Is(err, ErrConsentSpent) {
			return Issued{ConsentID: t.ConsentID}, fmt.Errorf("%w: %w", ErrIssueInvalid, err)
		} else if err != nil {
			return Issued{}, err
		}
	}
	if t.ConsentID != "" {
		// The person's answer took time: the client may have been disabled or removed
		// meanwhile.
		if err := b.clientAtUse(ctx, caller.ClientID); err != nil {
			return Issued{ConsentID: t.ConsentID}, err
		}
	}
	return b.issue(ctx, t, rec)
}

// issue signs t, records rec as the allowed decision that issued it (durable first: a token
// is never issued unrecorded), and stores it.
func (b *Broker) issue(ctx context.Context, t token.Token, rec audit.Record) (Issued, error) {
	wire, err := token.Sign(t, b.o.TokenKey)
	if err != nil {
		return Issued{}, err
	}
	rec.Decision, rec.Result = "allow", "issued"
	if _, err := b.o.Audit.Append(ctx, rec); err != nil {
		return Issued{}, errors.New("the token was not issued: its audit record could not be written")
	}
	body, err := t.Body()
	if err != nil {
		return Issued{}, err
	}
	st := store.Token{ID: t.ID, ClientID: t.ClientID, IssuedAt: time.Unix(t.IssuedAt, 0), ExpiresAt: time.Unix(t.ExpiresAt, 0),
		MaxUses: t.Constraints.MaxUses, AuditTag: t.AuditTag, Hash: token.WireHash(wire), Body: body}
	if err := b.o.Store.PutToken(ctx, st); err != nil {
		return Issued{}, err
	}
	return Issued{Wire: wire, ID: t.ID, ExpiresAt: time.Unix(t.ExpiresAt, 0), ConsentID: t.ConsentID}, nil
}

// worstRisk is the highest risk of any capability the grants cover, so the person sees what
// the token would allow at worst.
func (b *Broker) worstRisk(grants []string) manifest.Risk {
	var worst manifest.Risk
	for _, g := range grants {
		r := b.o.Registry.RiskOf(g)
		if slices.Index(manifest.Risks, r) > slices.Index(manifest.Risks, worst) {
			worst = r
		}
	}
	return worst
}

// DeriveRequest is attenuation: the holder of a token asks for a child of it that is strictly
// narrower, to hand to a sub-agent or a single step.
type DeriveRequest struct {
	Parent       string // the parent token's wire form
	Capabilities []string
	Duration     int64 // seconds, ending no later than the parent; 0 keeps the parent's expiry
	MaxUses      int64 // 0 keeps the parent's limit (none when it has none)
	Reason       string
	Constraints  token.Constraints // added to the parent's
}

// ErrDeriveParent: the parent token is not one the caller may use now.
var ErrDeriveParent = errors.New("the parent token cannot be used")

// Derive records a derivation it refuses (a parent that cannot be used, a child wider than
// it) as a denied decision, as a refused call is, so that an attempt with a forged or stolen
// token is in the log; a derivation it issues, as an allowed one.

// Derive issues a child of the caller's token, narrower in every way (token.Derive): no
// consent is asked, since the person approved the parent and the child can do nothing the
// parent cannot. The child's uses count against the parent, and revoking the parent
// revokes the child. A parent that is forged, another client's, revoked, expired or used up
// is ErrDeriveParent; a child wider than its parent is ErrIssueInvalid naming each field.
func (b *Broker) Derive(ctx context.Context, caller Caller, r DeriveRequest) (Issued, error) {
	now := b.o.Now()
	if err := b.clientAtUse(ctx, caller.ClientID); err != nil {
		return Issued{}, err
	}
	parentID := ""
	refuse := func(err error) (Issued, error) {
		code := policy.CodeInvalidToken
		if errors.Is(err, ErrIssueInvalid) {
			code = policy.CodeInvalidRequest
		}
		rec := audit.Record{Action: "derive_token", ClientID: caller.ClientID, TokenID: parentID, AuditTag: clip(r.Reason),
			Kind: "decision", Decision: "deny", Code: code, Result: "refused", Explanation: clip(err.Error())}
		if _, aerr := b.o.Audit.Append(ctx, rec); aerr != nil {
			return Issued{}, fmt.Errorf("%w (and its audit record could not be written)", err)
		}
		return Issued{}, err
	}
	parent, err := b.o.Tokens.Verify(r.Parent)
	if err != nil {
		return refuse(fmt.Errorf("%w: %s", ErrDeriveParent, errText(err)))
	}
	if err := parent.CheckClient(caller.ClientID); err != nil {
		return refuse(fmt.Errorf("%w: %s", ErrDeriveParent, token.ErrWrongClient.Error()))
	}
	parentID = parent.ID
	st, err := b.o.Store.GetToken(ctx, parent.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return refuse(fmt.Errorf("%w: token unknown to this gateway", ErrDeriveParent))
	case err != nil:
		return Issued{}, err
	case subtle.ConstantTimeCompare([]byte(st.Hash), []byte(token.WireHash(r.Parent))) != 1:
		return Issued{}, fmt.Errorf("%w: it is not the token issued under its id", ErrDeriveParent)
	case st.Revoked:
		return refuse(fmt.Errorf("%w: it is revoked", ErrDeriveParent))
	case st.MaxUses > 0 && st.Uses >= st.MaxUses:
		return refuse(fmt.Errorf("%w: it has no uses left", ErrDeriveParent))
	case parent.CheckTime(now) != nil:
		return refuse(fmt.Errorf("%w: it has expired", ErrDeriveParent))
	}
	if r.Duration < 0 {
		return refuse(fmt.Errorf("%w: duration must be positive seconds", ErrIssueInvalid))
	}
	req := token.Request{Capabilities: r.Capabilities, ExpiresAt: parent.ExpiresAt, Constraints: r.Constraints, AuditTag: r.Reason}
	if r.Duration > 0 {
		req.ExpiresAt = now.Unix() + r.Duration // beyond the parent's expiry, token.Derive refuses it
	}
	// What the request leaves out, the child keeps of the parent; what it adds, it adds.
	pc, cc := parent.Constraints, &req.Constraints
	cc.MaxUses = r.MaxUses
	if r.MaxUses == 0 {
		cc.MaxUses = pc.MaxUses
	}
	if len(cc.AllowedPaths) == 0 {
		cc.AllowedPaths = pc.AllowedPaths
	}
	if len(cc.AllowedCommands) == 0 {
		cc.AllowedCommands = pc.AllowedCommands
	}
	cc.DeniedCommands = union(pc.DeniedCommands, cc.DeniedCommands)
	cc.DeniedPatterns = union(pc.DeniedPatterns, cc.DeniedPatterns)
	child, err := token.Derive(parent, req, now)
	if err != nil {
		return refuse(fmt.Errorf("%w: %w", ErrIssueInvalid, err))
	}
	wire, err := token.Sign(child, b.o.TokenKey)
	if err != nil {
		return Issued{}, err
	}
	rec := audit.Record{Action: "derive_token", ClientID: caller.ClientID, TokenID: child.ID, AuditTag: clip(child.AuditTag),
		Kind: "decision", Decision: "allow", Result: "issued", ConsentID: child.ConsentID,
		Explanation: "derived from token " + parent.ID}
	if _, err := b.o.Audit.Append(ctx, rec); err != nil {
		return Issued{}, errors.New("the token was not issued: its audit record could not be written")
	}
	body, err := child.Body()
	if err != nil {
		return Issued{}, err
	}
	if err := b.o.Store.PutToken(ctx, store.Token{ID: child.ID, ClientID: child.ClientID, ParentID: parent.ID,
		IssuedAt: time.Unix(child.IssuedAt, 0), ExpiresAt: time.Unix(child.ExpiresAt, 0), MaxUses: child.Constraints.MaxUses,
		AuditTag: child.AuditTag, Hash: token.WireHash(wire), Body: body}); err != nil {
		return Issued{}, err
	}
	return Issued{Wire: wire, ID: child.ID, ExpiresAt: time.Unix(child.ExpiresAt, 0), ConsentID: child.ConsentID}, nil
}

// union is a followed by the entries of b that a lacks.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
