package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// Decide decides one call. It takes the steps of DESIGN.md's "Deciding a call" in order; the
// first of steps 1 to 5 that refuses ends the decision with its code, step 6 settles the
// call's autonomy, step 7 turns the autonomy into an outcome and step 8 delays an allowed
// irreversible call.
//
//  1. The app is not installed, or its provider is not working right now (not running, down,
//     reconnecting): APP_NOT_FOUND, the token document's "target application not running".
//     The capability is not declared, disabled or not pinned (a tool whose hash changed):
//     METHOD_NOT_FOUND.
//  2. A token is present and not valid (malformed, forged, tampered with, bound to another
//     client) or revoked: INVALID_TOKEN; expired: TOKEN_EXPIRED; used up: TOKEN_EXHAUSTED.
//  3. The params break the capability's schema: INVALID_REQUEST, naming the field paths,
//     never the values.
//  4. The client's trust ranks below the capability's auth_level (public < user <
//     privileged < system; no client is system), or the client is another assistant and
//     the capability's data classes are not for its kind (AssistantRefusal):
//     PERMISSION_DENIED.
//  5. With a token: no grant covers the capability's permission (token.Covers), or the
//     token's constraints refused the params: CAPABILITY_DENIED, naming the rule. Without a
//     token: a capability that RunsWithoutToken goes on (public and low risk; or low risk,
//     side effects none or read and Tier 1, unless the client or the host requires tokens);
//     any other call asks the person about this one call (it goes on with ask as its most
//     autonomy), or, when the client is set never to ask, CAPABILITY_DENIED.
//  6. The autonomy starts at the capability's autonomy_ceiling (default act), is narrowed by
//     the person's mandate (the more restrictive of the two wins, act < act_if_agreed < ask <
//     handoff; a mandate never widens), and is narrowed to ask when confirmation_required is
//     set, when the side effects are network, destructive or system and the client is below
//     privileged and holds no token issued with the person's recorded consent, when the
//     capability is Tier 2 and its side effects go above read, or when step 5 asked.
//  7. act: allowed. act_if_agreed: allowed when the mandate records the earlier agreement
//     (which request, which wording, when), else as ask. ask: allowed when the person
//     approved this very call; CONSENT_DENIED when they refused it; else a consent request
//     for the call (outcome ask, CONSENT_REQUIRED), or, when the client is set never to ask, a
//     deny with CONSENT_REQUIRED. handoff: outcome handoff, HANDOFF; nothing runs, whatever
//     the person approved.
//  8. An allowed call that is irreversible and changes something (side effects above read)
//     waits Call.DelayedCommitDefault before it runs (none when that is zero): a read has no
//     effect to take back, so there is nothing to commit. An allowed call under a token takes one of its uses
//     (Decision.UseToken).
func Decide(c *Call) Decision {
	cp := withDefaults(c.Capability)
	permission := c.Permission
	if !permission.IsValid() {
		permission = c.CapabilityID.Permission()
	}
	id, perm := capabilityName(c.CapabilityID), permissionName(permission)
	t := tracer{off: c.NoTrace}

	// Step 1.
	switch {
	case !c.AppFound:
		return t.deny(1, CodeAppNotFound, "the app of "+id+" is not installed")
	case !c.CapabilityFound:
		return t.deny(1, CodeMethodNotFound, id+" is not a capability of its app")
	case !c.Enabled:
		return t.deny(1, CodeMethodNotFound, id+" is disabled")
	case !c.Pinned:
		return t.deny(1, CodeMethodNotFound, id+" no longer matches its pin: its tool's name, description or schemas changed")
	case !c.Working:
		return t.deny(1, CodeAppNotFound, id+" is not working right now")
	}
	t.note(1, id, " is installed, enabled, pinned and working")

	// Step 2.
	tok := c.Token
	if tok.Present {
		switch {
		case !tok.Valid:
			why := "the token is not valid"
			if r := invalidReason(tok.InvalidReason); r != "" {
				why += ": " + r
			}
			return t.deny(2, CodeInvalidToken, why)
		case tok.Revoked:
			return t.deny(2, CodeInvalidToken, "the token has been revoked")
		case tok.Expired:
			return t.deny(2, CodeTokenExpired, "the token has expired")
		case tok.Exhausted:
			return t.deny(2, CodeTokenExhausted, "the token has no uses left")
		}
		t.note(2, "the token is valid, bound to this client, not revoked, not expired and not used up")
	} else {
		t.note(2, "the call carries no token")
	}

	// Step 3.
	if len(c.ParamsProblems) > 0 {
		return t.deny(3, CodeInvalidRequest, "the params do not match the schema of "+id+" at "+fieldPaths(c.ParamsProblems))
	}
	t.note(3, "the params match the schema")

	// Step 4.
	trust := clientTrust(c.ClientTrust)
	trustRank := trust.Rank()
	if trustRank < cp.authRank {
		return t.deny(4, CodePermissionDenied, fmt.Sprintf("%s needs a client trusted as %s, and this client is trusted as %s",
			id, trustWord(cp.AuthLevel), trust))
	}
	if why := AssistantRefusal(c.Assistant, c.Capability); why != "" {
		return t.deny(4, CodePermissionDenied, "this client is another assistant, and "+id+" is not for it: "+why)
	}
	if t.on() {
		t.note(4, "the client is trusted as ", string(trust), "; ", id, " needs ", trustWord(cp.AuthLevel))
	}

	// Step 5.
	noTokenAsks, consentToken := false, false
	switch {
	case tok.Present:
		if !token.CoversPermission(tok.Grants, permission) {
			return t.deny(5, CodeCapabilityDenied, "no grant of the token covers the permission "+perm)
		}
		for _, p := range c.AlsoNeeds {
			if !token.CoversPermission(tok.Grants, p) {
				return t.deny(5, CodeCapabilityDenied, "the call also needs the permission "+permissionName(p)+", and no grant of the token covers it")
			}
		}
		if !c.ConstraintOK {
			why := "the token's constraints refuse these params"
			if r := constraintRule(c.ConstraintRule); r != "" {
				why += " (rule " + r + ")"
			}
			return t.deny(5, CodeCapabilityDenied, why)
		}
		consentToken = tok.ConsentRecorded
		constraints := "it has no constraints"
		if !tok.Constraints.IsZero() {
			constraints = "its constraints allow these params"
		}
		consent := "issued without recorded consent"
		if consentToken {
			consent = "issued with the person's recorded consent"
		}
		if t.on() {
			t.note(5, "the token covers ", perm, ", ", constraints, ", and was ", consent)
		}
	case noTokenPublic(cp):
		t.note(5, "no token: ", id, " is public and low-risk, so it needs none")
	case noTokenRead(cp, c.Tier) && !c.ClientRequiresToken:
		t.note(5, "no token: ", id, " is low-risk, only reads and is Tier 1, and the client is trusted for it, so it needs none")
	case c.ClientNeverAsk:
		return t.deny(5, CodeCapabilityDenied, "no token covers the permission "+perm+", and the client is set never to ask")
	default:
		noTokenAsks = true
		t.note(5, "no token covers the permission ", perm, ": the person is asked about this one call")
	}

	// Step 6.
	a := autonomy(cp.AutonomyCeiling)
	if t.on() {
		t.note(6, "the ceiling of ", id, " is ", string(a))
	}
	if m := c.Mandate; m != nil && m.Autonomy != "" {
		ma := autonomy(m.Autonomy)
		if stricter(ma, a) {
			a = ma
			t.note(6, "the person's mandate narrows it to ", string(a))
		} else {
			t.note(6, "the person's mandate (", string(ma), ") does not narrow it, and cannot widen it")
		}
	}
	narrow := func(why string) {
		if stricter(manifest.AutonomyAsk, a) {
			a = manifest.AutonomyAsk
			t.note(6, "narrowed to ask: ", why)
		}
	}
	if noTokenAsks {
		narrow("no token covers the call")
	}
	if cp.ConfirmationRequired {
		narrow(id + " requires confirmation on every call")
	}
	if cp.sideRank >= rankNetwork && trustRank < rankPrivileged && !consentToken {
		narrow("its side effects are " + sideEffectWord(cp.SideEffects) + ", the client is below privileged, and no token issued with the person's consent covers it")
	}
	if c.Tier != 1 && cp.sideRank > rankRead {
		narrow("a Tier 2 capability whose side effects go above read")
	}

	// Step 7.
	d := Decision{Outcome: Deny, Step: 7, Autonomy: a}
	switch a {
	case manifest.AutonomyAct:
		allow(&d, tok.Present, allowedText(id))
	case manifest.AutonomyActIfAgreed:
		if agreed(c.Mandate) {
			allow(&d, tok.Present, "allowed: the person agreed to this earlier")
			break
		}
		t.note(7, "act_if_agreed, but no earlier agreement is recorded: ask")
		d = ask(d, c, tok.Present)
	case manifest.AutonomyAsk:
		d = ask(d, c, tok.Present)
	default: // handoff
		d.Outcome, d.Code = Handoff, CodeHandoff
		d.Explanation = id + " is handed to the person: capgate prepares it and does not act"
	}
	t.note(7, d.Explanation)
	if d.Outcome != Allow {
		d.Trace = t.lines
		return d
	}

	// Step 8.
	if cp.Reversibility == manifest.Irreversible && cp.sideRank > rankRead && c.DelayedCommitDefault > 0 {
		d.DelayedCommit = c.DelayedCommitDefault
		d.Step = 8
		wait := "it is irreversible, so it waits " + d.DelayedCommit.String() + ", in which the person can cancel it"
		d.Explanation += "; " + wait
		t.note(8, wait)
	}
	d.Trace = t.lines
	return d
}

// RunsWithoutToken reports whether a call of c, a capability of an app at tier, that carries
// no token goes on at step 5 without asking, for a client that reaches c's auth_level (step
// 4 refuses any other): c is public and low-risk, or c is low-risk, its side effects are none
// or read and tier is 1, and requireToken (the client's setting or the host's) is not set.
// Step 6 may still narrow such a call to ask (a mandate, confirmation_required) or hand it
// off. Defaults are read as Decide reads them: risk derived from side effects, side effects
// system when absent.
func RunsWithoutToken(c manifest.Capability, tier int, requireToken bool) bool {
	cp := withDefaults(&c)
	return noTokenPublic(cp) || (!requireToken && noTokenRead(cp, tier))
}

// noTokenPublic: a public, low-risk capability needs no token from any client.
func noTokenPublic(cp traits) bool {
	return cp.AuthLevel == manifest.AuthPublic && cp.Risk == manifest.RiskLow
}

// noTokenRead: a low-risk capability that changes nothing, on the word of a signed manifest
// (Tier 1), needs no token from a client that does not require tokens. A Tier 2 app's word
// is never enough, nor a low risk declared beside a write.
func noTokenRead(cp traits, tier int) bool {
	return tier == 1 && cp.Risk == manifest.RiskLow &&
		(cp.SideEffects == manifest.SideEffectNone || cp.SideEffects == manifest.SideEffectRead)
}

// allow makes d an allowed decision.
func allow(d *Decision, useToken bool, why string) {
	d.Outcome, d.Code, d.UseToken, d.Explanation = Allow, "", useToken, why
}

// ask resolves an ask autonomy by the person's answer, if any, and the client's setting.
func ask(d Decision, c *Call, useToken bool) Decision {
	switch {
	case c.ConsentDenied:
		d.Outcome, d.Code = Deny, CodeConsentDenied
		d.Explanation = "the person refused this call"
	case c.ConsentGranted:
		allow(&d, useToken, "allowed: the person approved this call")
	case c.ClientNeverAsk:
		d.Outcome, d.Code = Deny, CodeConsentRequired
		d.Explanation = "the call needs the person's approval, and the client is set never to ask"
	default:
		d.Outcome, d.Code, d.ConsentKind = Ask, CodeConsentRequired, ConsentCall
		d.Explanation = "the call waits for the person's approval in a consent request for this call"
	}
	return d
}

// agreed reports whether m records an earlier agreement: which request, which wording, when.
func agreed(m *Mandate) bool {
	return m != nil && m.AgreedID != "" && m.Wording != "" && !m.AgreedAt.IsZero()
}

// autonomy is a, default act when empty, handoff (the most restrictive) when unknown.
func autonomy(a manifest.Autonomy) manifest.Autonomy {
	switch {
	case a == "":
		return manifest.AutonomyAct
	case !a.Valid():
		return manifest.AutonomyHandoff
	}
	return a
}

// stricter reports whether a is more restrictive than b; both are valid.
func stricter(a, b manifest.Autonomy) bool {
	return slices.Index(manifest.Autonomies, a) > slices.Index(manifest.Autonomies, b)
}

// clientTrust is the trust a client's level gives it: no client is system (only capgate
// itself), so system is read as privileged, and an empty or unknown level as public.
func clientTrust(a manifest.AuthLevel) manifest.AuthLevel {
	switch a {
	case manifest.AuthSystem:
		return manifest.AuthPrivileged
	case manifest.AuthPublic, manifest.AuthUser, manifest.AuthPrivileged:
		return a
	}
	return manifest.AuthPublic
}

// sideEffectWord is the name of a known side effect, or a placeholder.
func sideEffectWord(s manifest.SideEffect) string {
	if s.Valid() {
		return string(s)
	}
	return "unknown (read as worse than system)"
}

// traits are the fields of a capability Decide reads, with the manifest's defaults filled in.
type traits struct {
	SideEffects          manifest.SideEffect
	AuthLevel            manifest.AuthLevel
	Risk                 manifest.Risk
	AutonomyCeiling      manifest.Autonomy
	Reversibility        manifest.Reversibility
	ConfirmationRequired bool
	sideRank, authRank   int // SideEffects.Rank(), AuthLevel.Rank()
}

// The ranks Decide compares with, looked up once.
var (
	rankRead       = manifest.SideEffectRead.Rank()
	rankNetwork    = manifest.SideEffectNetwork.Rank()
	rankPrivileged = manifest.AuthPrivileged.Rank()
)

// withDefaults is c's traits with the manifest defaults of the fields Decide reads filled in,
// as the manifest decoder fills them (the permission's is Decide's own, on Call.Permission).
// Unknown values are left as they are; each reader reads them cautiously.
func withDefaults(c *manifest.Capability) traits {
	if c == nil {
		c = &manifest.Capability{}
	}
	t := traits{SideEffects: c.SideEffects, AuthLevel: c.AuthLevel, Risk: c.Risk, AutonomyCeiling: c.AutonomyCeiling,
		Reversibility: c.Reversibility, ConfirmationRequired: c.ConfirmationRequired}
	if t.SideEffects == "" {
		t.SideEffects = manifest.SideEffectSystem
	}
	if t.AuthLevel == "" {
		t.AuthLevel = manifest.AuthUser
	}
	if t.Risk == "" {
		t.Risk = manifest.RiskFor(t.SideEffects)
	}
	if t.AutonomyCeiling == "" {
		t.AutonomyCeiling = manifest.AutonomyAct
	}
	t.Reversibility = Reversibility(c)
	t.sideRank, t.authRank = t.SideEffects.Rank(), t.AuthLevel.Rank()
	return t
}

// Reversibility is the reversibility a call of c is decided by, and shown to the person with:
// what c declares, when capgate can hold it to that. An undeclared or unverifiable value is
// irreversible (the definitions document): unknown text; reversible without an undo window
// (nothing capgate could undo: it has only the app's word); compensable without the
// compensation that makes it good. An undo window with nothing declared is reversible.
func Reversibility(c *manifest.Capability) manifest.Reversibility {
	if c == nil {
		return manifest.Irreversible
	}
	undo := c.UndoWindowMS != nil && *c.UndoWindowMS > 0
	switch r := c.Reversibility; {
	case r == "" && undo:
		return manifest.Reversible
	case r == manifest.Reversible && undo, r == manifest.Compensable && c.Compensation != "":
		return r
	}
	return manifest.Irreversible
}

// tracer collects each step's finding.
type tracer struct {
	off   bool
	lines []string
}

// on reports whether the trace is kept: a finding whose parts take work to make is made
// only then.
func (t *tracer) on() bool { return !t.off }

// note records a finding of step n (1 to 8), given in parts so that nothing is joined when
// the trace is off.
func (t *tracer) note(n int, finding ...string) {
	if t.off {
		return
	}
	t.add(n, finding)
}

func (t *tracer) add(n int, finding []string) {
	if t.lines == nil {
		t.lines = make([]string, 0, 8)
	}
	t.lines = append(t.lines, "step "+string(rune('0'+n))+": "+strings.Join(finding, ""))
}

// deny ends the decision at step n.
func (t *tracer) deny(n int, code, why string) Decision {
	t.note(n, why)
	return Decision{Outcome: Deny, Code: code, Explanation: why, Step: n, Trace: t.lines}
}
