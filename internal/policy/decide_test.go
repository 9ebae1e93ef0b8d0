package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

const (
	readID  = "notes.org.example.notes.list"
	writeID = "notes.org.example.notes.edit"
)

var agreedAt = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// base is a call that is allowed: a Tier 1 read capability of a user-level app, called by a
// user client with a valid token that covers it.
func base() Call {
	c := Call{
		AppFound: true, CapabilityFound: true, Enabled: true, Pinned: true, Working: true,
		Capability: &manifest.Capability{
			SideEffects: manifest.SideEffectRead,
			AuthLevel:   manifest.AuthUser, Risk: manifest.RiskLow,
			AutonomyCeiling: manifest.AutonomyAct, Reversibility: manifest.Reversible, UndoWindowMS: new(int64(60000)),
		},
		Tier:                 1,
		Token:                TokenFacts{Present: true, Valid: true, Grants: []string{"notes.read"}},
		ClientTrust:          manifest.AuthUser,
		ConstraintOK:         true,
		DelayedCommitDefault: 5 * time.Second,
	}
	ids(&c, readID, "notes.read")
	return c
}

// ids sets the capability's id and permission as the registry hands them to the broker:
// parsed, the zero value for text that does not parse.
func ids(c *Call, id, perm string) {
	c.CapabilityID, _ = manifest.ParseCapabilityID(id)
	c.Permission, _ = manifest.ParsePermission(perm)
}

// permissions parses each of ps, as the broker's options are.
func permissions(ps ...string) []manifest.Permission {
	out := make([]manifest.Permission, len(ps))
	for i, p := range ps {
		out[i], _ = manifest.ParsePermission(p)
	}
	return out
}

// noToken is base without a token.
func noToken(c *Call) { c.Token = TokenFacts{} }

// public makes the capability public.
func public(c *Call) { c.Capability.AuthLevel = manifest.AuthPublic }

// requireToken makes the client one that requires a token for every call.
func requireToken(c *Call) { c.ClientRequiresToken = true }

// write makes the capability a write (medium risk) covered by the token.
func write(c *Call) {
	ids(c, writeID, "notes.write")
	c.Capability.SideEffects, c.Capability.Risk = manifest.SideEffectWrite, manifest.RiskMedium
	c.Token.Grants = []string{"notes.write"}
}

// destructive makes the capability destructive (high risk) and covered by the token.
func destructive(c *Call) {
	ids(c, "notes.org.example.notes.purge", "notes.delete")
	c.Capability.SideEffects, c.Capability.Risk = manifest.SideEffectDestructive, manifest.RiskHigh
	c.Token.Grants = []string{"notes.*"}
}

func mandate(a manifest.Autonomy) func(*Call) {
	return func(c *Call) { c.Mandate = &Mandate{Autonomy: a} }
}

func ceiling(a manifest.Autonomy) func(*Call) {
	return func(c *Call) { c.Capability.AutonomyCeiling = a }
}

type want struct {
	outcome       Outcome
	code          string
	step          int
	useToken      bool
	delayed       time.Duration
	explains      string // a substring of the explanation
	autonomy      manifest.Autonomy
	checkAutonomy bool
}

func TestDecide(t *testing.T) {
	allowTok := want{outcome: Allow, step: 7, useToken: true}
	askCall := want{outcome: Ask, code: CodeConsentRequired, step: 7}
	handoff := want{outcome: Handoff, code: CodeHandoff, step: 7}
	deny := func(step int, code, explains string) want {
		return want{outcome: Deny, code: code, step: step, explains: explains}
	}
	tests := []struct {
		name string
		mods []func(*Call)
		want want
	}{
		{"baseline allowed under a token", nil, want{outcome: Allow, step: 7, useToken: true, explains: readID,
			autonomy: manifest.AutonomyAct, checkAutonomy: true}},

		// Step 1.
		{"1 app unknown", []func(*Call){func(c *Call) { c.AppFound = false }}, deny(1, CodeAppNotFound, "not installed")},
		{"1 app unknown wins over everything after it", []func(*Call){func(c *Call) {
			*c = Call{Token: TokenFacts{Present: true}, ParamsProblems: []string{"/x"}}
		}}, deny(1, CodeAppNotFound, "")},
		{"1 capability unknown", []func(*Call){func(c *Call) { c.CapabilityFound = false }}, deny(1, CodeMethodNotFound, "not a capability")},
		{"1 disabled", []func(*Call){func(c *Call) { c.Enabled = false }}, deny(1, CodeMethodNotFound, "disabled")},
		{"1 not pinned", []func(*Call){func(c *Call) { c.Pinned = false }}, deny(1, CodeMethodNotFound, "pin")},
		{"1 not working", []func(*Call){func(c *Call) { c.Working = false }}, deny(1, CodeAppNotFound, "not working")},
		{"1 before 2: disabled with a forged token", []func(*Call){func(c *Call) { c.Enabled = false; c.Token.Valid = false }},
			deny(1, CodeMethodNotFound, "")},

		// Step 2.
		{"2 forged or tampered", []func(*Call){func(c *Call) {
			c.Token.Valid = false
			c.Token.InvalidReason = token.ErrBadSignature.Error()
		}}, deny(2, CodeInvalidToken, "signature does not verify")},
		{"2 bound to another client, reason wrapped", []func(*Call){func(c *Call) {
			c.Token.Valid = false
			c.Token.InvalidReason = token.ErrWrongClient.Error() + ": client_id"
		}}, deny(2, CodeInvalidToken, "bound to another client")},
		{"2 revoked", []func(*Call){func(c *Call) { c.Token.Revoked = true }}, deny(2, CodeInvalidToken, "revoked")},
		{"2 expired", []func(*Call){func(c *Call) { c.Token.Expired = true }}, deny(2, CodeTokenExpired, "expired")},
		{"2 exhausted", []func(*Call){func(c *Call) { c.Token.Exhausted = true }}, deny(2, CodeTokenExhausted, "no uses left")},
		{"2 invalid before expired", []func(*Call){func(c *Call) { c.Token.Valid = false; c.Token.Expired = true }},
			deny(2, CodeInvalidToken, "")},
		{"2 revoked before expired", []func(*Call){func(c *Call) { c.Token.Revoked = true; c.Token.Expired = true }},
			deny(2, CodeInvalidToken, "revoked")},
		{"2 expired before exhausted", []func(*Call){func(c *Call) { c.Token.Expired = true; c.Token.Exhausted = true }},
			deny(2, CodeTokenExpired, "")},
		{"2 before 3: expired token and bad params", []func(*Call){func(c *Call) {
			c.Token.Expired = true
			c.ParamsProblems = []string{"/limit"}
		}}, deny(2, CodeTokenExpired, "")},
		{"2 flags of an absent token are ignored", []func(*Call){noToken, public, func(c *Call) {
			c.Token.Expired, c.Token.Revoked = true, true
		}}, want{outcome: Allow, step: 7}},

		// Step 3.
		{"3 params problems", []func(*Call){func(c *Call) { c.ParamsProblems = []string{"/limit", "/query"} }},
			deny(3, CodeInvalidRequest, "/limit, /query")},
		{"3 many problems are counted", []func(*Call){func(c *Call) {
			for range MaxListedProblems + 3 {
				c.ParamsProblems = append(c.ParamsProblems, "/a")
			}
		}}, deny(3, CodeInvalidRequest, "and 3 more")},
		{"3 before 4: bad params from a public client", []func(*Call){func(c *Call) {
			c.ParamsProblems = []string{"/q"}
			c.ClientTrust = manifest.AuthPublic
		}}, deny(3, CodeInvalidRequest, "")},

		// Step 4.
		{"4 user client, privileged capability", []func(*Call){func(c *Call) { c.Capability.AuthLevel = manifest.AuthPrivileged }},
			deny(4, CodePermissionDenied, "trusted as privileged")},
		{"4 privileged client, privileged capability", []func(*Call){func(c *Call) {
			c.Capability.AuthLevel = manifest.AuthPrivileged
			c.ClientTrust = manifest.AuthPrivileged
		}}, allowTok},
		{"4 a client is never system", []func(*Call){func(c *Call) {
			c.Capability.AuthLevel = manifest.AuthSystem
			c.ClientTrust = manifest.AuthSystem
		}}, deny(4, CodePermissionDenied, "trusted as privileged")},
		{"4 an unknown client trust is public", []func(*Call){func(c *Call) { c.ClientTrust = "root" }},
			deny(4, CodePermissionDenied, "this client is trusted as public")},
		{"4 an unknown auth level admits nobody", []func(*Call){func(c *Call) {
			c.Capability.AuthLevel = "admin"
			c.ClientTrust = manifest.AuthPrivileged
		}}, deny(4, CodePermissionDenied, "unknown level")},
		{"4 empty client trust reaches a public capability", []func(*Call){public, func(c *Call) { c.ClientTrust = "" }}, allowTok},
		{"4 before 5: low trust and no covering grant", []func(*Call){func(c *Call) {
			c.Capability.AuthLevel = manifest.AuthPrivileged
			c.Token.Grants = []string{"mail.read"}
		}}, deny(4, CodePermissionDenied, "")},

		// Step 5.
		{"5 no grant covers", []func(*Call){func(c *Call) { c.Token.Grants = []string{"notes.write", "notes.readx"} }},
			deny(5, CodeCapabilityDenied, "notes.read")},
		{"5 a pattern covers", []func(*Call){func(c *Call) { c.Token.Grants = []string{"notes.*"} }}, allowTok},
		{"5 a token without grants covers nothing", []func(*Call){func(c *Call) { c.Token.Grants = nil }},
			deny(5, CodeCapabilityDenied, "")},
		{"5 constraints refused, rule named", []func(*Call){func(c *Call) {
			c.ConstraintOK, c.ConstraintRule = false, token.RuleAllowedPaths
			c.Token.Constraints = token.Constraints{AllowedPaths: []string{"/home/**"}}
		}}, deny(5, CodeCapabilityDenied, "rule allowed_paths")},
		{"5 command rule named", []func(*Call){func(c *Call) {
			c.ConstraintOK, c.ConstraintRule = false, token.ErrCommandOperator.Error()
		}}, deny(5, CodeCapabilityDenied, "unquoted shell operator")},
		{"5 constraints not reported as checked refuse", []func(*Call){func(c *Call) { c.ConstraintOK = false }},
			deny(5, CodeCapabilityDenied, "constraints")},
		{"5 before 6: constraints refused under a handoff mandate", []func(*Call){mandate(manifest.AutonomyHandoff), func(c *Call) {
			c.ConstraintOK = false
		}}, deny(5, CodeCapabilityDenied, "")},
		{"5 no token, public and low risk runs", []func(*Call){noToken, public}, want{outcome: Allow, step: 7}},
		{"5 no token, public low risk, mandate handoff", []func(*Call){noToken, public, mandate(manifest.AutonomyHandoff)}, handoff},
		{"5 no token, a user-level low-risk Tier 1 read runs", []func(*Call){noToken},
			want{outcome: Allow, step: 7, explains: "may act", autonomy: manifest.AutonomyAct, checkAutonomy: true}},
		{"5 no token, a low-risk Tier 1 capability without side effects runs", []func(*Call){noToken, func(c *Call) {
			c.Capability.SideEffects = manifest.SideEffectNone
		}}, want{outcome: Allow, step: 7}},
		{"5 no token, risk derived from a read is low: runs", []func(*Call){noToken, func(c *Call) { c.Capability.Risk = "" }},
			want{outcome: Allow, step: 7}},
		{"5 no token, a privileged client's low-risk read runs", []func(*Call){noToken, func(c *Call) { c.ClientTrust = manifest.AuthPrivileged }},
			want{outcome: Allow, step: 7}},
		{"5 no token, a require-token client's user-level read asks", []func(*Call){noToken, requireToken},
			want{outcome: Ask, code: CodeConsentRequired, step: 7, autonomy: manifest.AutonomyAsk, checkAutonomy: true}},
		{"5 no token, a require-token client's public low-risk read runs", []func(*Call){noToken, public, requireToken},
			want{outcome: Allow, step: 7}},
		{"5 no token, a Tier 2 app claiming a low-risk read asks", []func(*Call){noToken, func(c *Call) { c.Tier = 2 }}, askCall},
		{"5 no token, an unknown tier's low-risk read asks", []func(*Call){noToken, func(c *Call) { c.Tier = 0 }}, askCall},
		{"5 no token, a medium-risk read asks", []func(*Call){noToken, func(c *Call) { c.Capability.Risk = manifest.RiskMedium }}, askCall},
		{"5 no token, a high-risk read asks", []func(*Call){noToken, func(c *Call) { c.Capability.Risk = manifest.RiskHigh }}, askCall},
		{"5 no token, an unknown risk asks", []func(*Call){noToken, func(c *Call) { c.Capability.Risk = "lowish" }}, askCall},
		{"5 no token, a low-risk write asks", []func(*Call){noToken, func(c *Call) { c.Capability.SideEffects = manifest.SideEffectWrite }}, askCall},
		{"5 no token, a low-risk network call asks", []func(*Call){noToken, func(c *Call) { c.Capability.SideEffects = manifest.SideEffectNetwork }}, askCall},
		{"5 no token, low risk and undeclared side effects (system) asks", []func(*Call){noToken, func(c *Call) { c.Capability.SideEffects = "" }}, askCall},
		{"5 no token, low risk and unknown side effects asks", []func(*Call){noToken, func(c *Call) { c.Capability.SideEffects = "READ" }}, askCall},
		{"5 no token, a public client and a user-level read", []func(*Call){noToken, func(c *Call) { c.ClientTrust = manifest.AuthPublic }},
			deny(4, CodePermissionDenied, "trusted as user")},
		{"5 no token, a user client and a privileged read", []func(*Call){noToken, func(c *Call) { c.Capability.AuthLevel = manifest.AuthPrivileged }},
			deny(4, CodePermissionDenied, "trusted as privileged")},
		{"5 no token, a low-risk read that requires confirmation asks", []func(*Call){noToken, func(c *Call) { c.Capability.ConfirmationRequired = true }}, askCall},
		{"5 no token, a low-risk read under a mandate of ask asks", []func(*Call){noToken, mandate(manifest.AutonomyAsk)}, askCall},
		{"5 no token, a low-risk read with a ceiling of ask asks", []func(*Call){noToken, ceiling(manifest.AutonomyAsk)}, askCall},
		{"5 no token, a low-risk read under a handoff mandate hands off", []func(*Call){noToken, mandate(manifest.AutonomyHandoff)}, handoff},
		{"5 no token, never-ask client, low-risk read runs", []func(*Call){noToken, func(c *Call) { c.ClientNeverAsk = true }},
			want{outcome: Allow, step: 7}},
		{"5 no token, public but medium risk asks", []func(*Call){noToken, public, write}, askCall},
		{"5 no token, never-ask client", []func(*Call){noToken, write, func(c *Call) { c.ClientNeverAsk = true }},
			deny(5, CodeCapabilityDenied, "never to ask")},
		{"5 no token, never-ask require-token client", []func(*Call){noToken, requireToken, func(c *Call) { c.ClientNeverAsk = true }},
			deny(5, CodeCapabilityDenied, "never to ask")},
		{"5 no token, never-ask client, public low risk runs", []func(*Call){noToken, public, func(c *Call) { c.ClientNeverAsk = true }},
			want{outcome: Allow, step: 7}},
		{"5 no token, the person approved this call", []func(*Call){noToken, write, func(c *Call) { c.ConsentGranted = true }},
			want{outcome: Allow, step: 7}},
		{"5 no token, the person refused this call", []func(*Call){noToken, write, func(c *Call) { c.ConsentDenied = true }},
			deny(7, CodeConsentDenied, "refused")},
		{"5 no token asks, a handoff mandate hands off", []func(*Call){noToken, requireToken, mandate(manifest.AutonomyHandoff)}, handoff},

		// Step 6.
		{"6 Tier 2 write with a covering token", []func(*Call){write, func(c *Call) { c.Tier = 2 }}, askCall},
		{"6 Tier 2 read", []func(*Call){func(c *Call) { c.Tier = 2 }}, allowTok},
		{"6 an unknown tier is Tier 2", []func(*Call){write, func(c *Call) { c.Tier = 0 }}, askCall},
		{"6 Tier 1 write", []func(*Call){write}, allowTok},
		{"6 Tier 2 write approved by the person", []func(*Call){write, func(c *Call) { c.Tier = 2; c.ConsentGranted = true }}, allowTok},
		{"6 destructive, user client, token without recorded consent", []func(*Call){destructive}, askCall},
		{"6 destructive, user client, token with recorded consent", []func(*Call){destructive, func(c *Call) { c.Token.ConsentRecorded = true }}, allowTok},
		{"6 destructive, privileged client, no recorded consent", []func(*Call){destructive, func(c *Call) { c.ClientTrust = manifest.AuthPrivileged }}, allowTok},
		{"6 network, user client, no recorded consent", []func(*Call){destructive, func(c *Call) { c.Capability.SideEffects = manifest.SideEffectNetwork }}, askCall},
		{"6 system, user client, no recorded consent", []func(*Call){destructive, func(c *Call) { c.Capability.SideEffects = manifest.SideEffectSystem }}, askCall},
		{"6 undeclared side effects are system", []func(*Call){destructive, func(c *Call) { c.Capability.SideEffects = "" }}, askCall},
		{"6 unknown side effects count as worst", []func(*Call){destructive, func(c *Call) { c.Capability.SideEffects = "explosive" }}, askCall},
		{"6 confirmation required with recorded consent", []func(*Call){destructive, func(c *Call) {
			c.Token.ConsentRecorded = true
			c.Capability.ConfirmationRequired = true
		}}, askCall},
		{"6 confirmation required, privileged client", []func(*Call){func(c *Call) {
			c.ClientTrust = manifest.AuthPrivileged
			c.Capability.ConfirmationRequired = true
		}}, askCall},
		{"6 confirmation required, the person approved this call", []func(*Call){destructive, func(c *Call) {
			c.Token.ConsentRecorded = true
			c.Capability.ConfirmationRequired = true
			c.ConsentGranted = true
		}}, allowTok},
		{"6 a mandate narrows act to ask", []func(*Call){mandate(manifest.AutonomyAsk)},
			want{outcome: Ask, code: CodeConsentRequired, step: 7, autonomy: manifest.AutonomyAsk, checkAutonomy: true}},
		{"6 a mandate narrows act to handoff", []func(*Call){mandate(manifest.AutonomyHandoff)}, handoff},
		{"6 a mandate of act does not widen a ceiling of ask", []func(*Call){ceiling(manifest.AutonomyAsk), mandate(manifest.AutonomyAct)},
			want{outcome: Ask, code: CodeConsentRequired, step: 7, autonomy: manifest.AutonomyAsk, checkAutonomy: true}},
		{"6 a recorded agreement does not widen a ceiling of ask", []func(*Call){ceiling(manifest.AutonomyAsk), func(c *Call) {
			c.Mandate = &Mandate{Autonomy: manifest.AutonomyActIfAgreed, AgreedID: "cr_1", Wording: "yes", AgreedAt: agreedAt}
		}}, askCall},
		{"6 a mandate of act does not widen a ceiling of handoff", []func(*Call){ceiling(manifest.AutonomyHandoff), mandate(manifest.AutonomyAct)}, handoff},
		{"6 a mandate without autonomy leaves the ceiling", []func(*Call){mandate("")}, allowTok},
		{"6 an unknown mandate is handoff", []func(*Call){mandate("sometimes")}, handoff},
		{"6 an unknown ceiling is handoff", []func(*Call){ceiling("whenever")}, handoff},
		{"6 an empty ceiling is act", []func(*Call){ceiling("")}, allowTok},
		{"6 ask never widens handoff", []func(*Call){ceiling(manifest.AutonomyHandoff), write, func(c *Call) {
			c.Tier = 2
			c.Capability.ConfirmationRequired = true
		}}, handoff},

		// Step 7.
		{"7 act_if_agreed ceiling, no mandate", []func(*Call){ceiling(manifest.AutonomyActIfAgreed)}, askCall},
		{"7 act_if_agreed without the agreement", []func(*Call){mandate(manifest.AutonomyActIfAgreed)}, askCall},
		{"7 act_if_agreed with the agreement", []func(*Call){func(c *Call) {
			c.Mandate = &Mandate{Autonomy: manifest.AutonomyActIfAgreed, AgreedID: "cr_1", Wording: "go ahead", AgreedAt: agreedAt}
		}}, want{outcome: Allow, step: 7, useToken: true, explains: "agreed"}},
		{"7 act_if_agreed ceiling, agreement recorded on the mandate", []func(*Call){ceiling(manifest.AutonomyActIfAgreed), func(c *Call) {
			c.Mandate = &Mandate{AgreedID: "cr_1", Wording: "go ahead", AgreedAt: agreedAt}
		}}, allowTok},
		{"7 act_if_agreed, agreement without its time", []func(*Call){func(c *Call) {
			c.Mandate = &Mandate{Autonomy: manifest.AutonomyActIfAgreed, AgreedID: "cr_1", Wording: "go ahead"}
		}}, askCall},
		{"7 act_if_agreed, agreement without its wording", []func(*Call){func(c *Call) {
			c.Mandate = &Mandate{Autonomy: manifest.AutonomyActIfAgreed, AgreedID: "cr_1", AgreedAt: agreedAt}
		}}, askCall},
		{"7 act_if_agreed, the person approved this call", []func(*Call){mandate(manifest.AutonomyActIfAgreed), func(c *Call) { c.ConsentGranted = true }}, allowTok},
		{"7 ask, never-ask client", []func(*Call){mandate(manifest.AutonomyAsk), func(c *Call) { c.ClientNeverAsk = true }},
			deny(7, CodeConsentRequired, "never to ask")},
		{"7 ask, never-ask client, approved", []func(*Call){mandate(manifest.AutonomyAsk), func(c *Call) {
			c.ClientNeverAsk, c.ConsentGranted = true, true
		}}, allowTok},
		{"7 ask, refused wins over approved", []func(*Call){mandate(manifest.AutonomyAsk), func(c *Call) {
			c.ConsentDenied, c.ConsentGranted = true, true
		}}, deny(7, CodeConsentDenied, "refused")},
		{"7 an answer does not matter when nothing asks", []func(*Call){func(c *Call) { c.ConsentDenied = true }}, allowTok},
		{"7 handoff, even when approved", []func(*Call){mandate(manifest.AutonomyHandoff), func(c *Call) { c.ConsentGranted = true }}, handoff},

		// Step 8.
		{"8 irreversible allowed waits", []func(*Call){write, func(c *Call) { c.Capability.Reversibility = manifest.Irreversible }},
			want{outcome: Allow, step: 8, useToken: true, delayed: 5 * time.Second, explains: "irreversible"}},
		{"8 undeclared reversibility is irreversible", []func(*Call){write, func(c *Call) { c.Capability.Reversibility, c.Capability.UndoWindowMS = "", nil }},
			want{outcome: Allow, step: 8, useToken: true, delayed: 5 * time.Second}},
		{"8 an unknown reversibility is irreversible", []func(*Call){write, func(c *Call) { c.Capability.Reversibility = "mostly" }},
			want{outcome: Allow, step: 8, useToken: true, delayed: 5 * time.Second}},
		{"8 an undo window makes it reversible", []func(*Call){write, func(c *Call) {
			c.Capability.Reversibility = ""
			c.Capability.UndoWindowMS = new(int64(30000))
		}}, allowTok},
		{"8 compensable does not wait", []func(*Call){write, func(c *Call) {
			c.Capability.Reversibility, c.Capability.Compensation = manifest.Compensable, "notes.org.example.notes.unedit"
		}}, allowTok},
		{"8 reversible with no undo window is unverifiable: irreversible", []func(*Call){write, func(c *Call) { c.Capability.UndoWindowMS = nil }},
			want{outcome: Allow, step: 8, useToken: true, delayed: 5 * time.Second}},
		{"8 an undo window of 0 verifies nothing", []func(*Call){write, func(c *Call) { c.Capability.UndoWindowMS = new(int64(0)) }},
			want{outcome: Allow, step: 8, useToken: true, delayed: 5 * time.Second}},
		{"8 compensable with no compensation is unverifiable: irreversible", []func(*Call){write, func(c *Call) { c.Capability.Reversibility = manifest.Compensable }},
			want{outcome: Allow, step: 8, useToken: true, delayed: 5 * time.Second}},
		{"8 a zero default means no window", []func(*Call){write, func(c *Call) {
			c.Capability.Reversibility = manifest.Irreversible
			c.DelayedCommitDefault = 0
		}}, allowTok},
		{"8 a negative default means no window", []func(*Call){write, func(c *Call) {
			c.Capability.Reversibility = manifest.Irreversible
			c.DelayedCommitDefault = -time.Second
		}}, allowTok},
		{"8 an irreversible call that asks does not wait yet", []func(*Call){write, mandate(manifest.AutonomyAsk), func(c *Call) {
			c.Capability.Reversibility = manifest.Irreversible
		}}, askCall},
		{"8 irreversible, approved by the person", []func(*Call){write, mandate(manifest.AutonomyAsk), func(c *Call) {
			c.Capability.Reversibility = manifest.Irreversible
			c.ConsentGranted = true
		}}, want{outcome: Allow, step: 8, useToken: true, delayed: 5 * time.Second}},
		// A read changes nothing, so there is nothing to commit: it never waits.
		{"8 irreversible read does not wait", []func(*Call){noToken, public, func(c *Call) { c.Capability.Reversibility = manifest.Irreversible }},
			want{outcome: Allow, step: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			for _, m := range tt.mods {
				m(&c)
			}
			d := Decide(&c)
			w := tt.want
			if d.Outcome != w.outcome || d.Code != w.code || d.Step != w.step {
				t.Fatalf("Decide = %s %q at step %d (%s), want %s %q at step %d\ntrace:\n%s",
					d.Outcome, d.Code, d.Step, d.Explanation, w.outcome, w.code, w.step, strings.Join(d.Trace, "\n"))
			}
			if d.UseToken != w.useToken {
				t.Errorf("UseToken = %v, want %v", d.UseToken, w.useToken)
			}
			if d.DelayedCommit != w.delayed {
				t.Errorf("DelayedCommit = %v, want %v", d.DelayedCommit, w.delayed)
			}
			if !strings.Contains(d.Explanation, w.explains) {
				t.Errorf("Explanation %q does not contain %q", d.Explanation, w.explains)
			}
			if w.checkAutonomy && d.Autonomy != w.autonomy {
				t.Errorf("Autonomy = %q, want %q", d.Autonomy, w.autonomy)
			}
			checkShape(t, c, d)
		})
	}
}

// checkShape checks what holds of every decision.
func checkShape(t *testing.T, c Call, d Decision) {
	t.Helper()
	switch d.Outcome {
	case Allow:
		if d.Code != "" {
			t.Errorf("an allowed call carries code %q", d.Code)
		}
	case Ask:
		if d.Code != CodeConsentRequired || d.ConsentKind != ConsentCall {
			t.Errorf("ask carries code %q and consent kind %q", d.Code, d.ConsentKind)
		}
	case Handoff:
		if d.Code != CodeHandoff {
			t.Errorf("handoff carries code %q", d.Code)
		}
	case Deny:
		if d.Code == "" {
			t.Errorf("a deny carries no code")
		}
	default:
		t.Errorf("unknown outcome %q", d.Outcome)
	}
	if d.Outcome != Ask && d.ConsentKind != "" {
		t.Errorf("%s carries consent kind %q", d.Outcome, d.ConsentKind)
	}
	if d.Outcome != Allow && (d.UseToken || d.DelayedCommit != 0) {
		t.Errorf("%s takes a token use or waits", d.Outcome)
	}
	if d.UseToken && !c.Token.Present {
		t.Errorf("UseToken without a token")
	}
	if d.Allowed() != (d.Outcome == Allow) {
		t.Errorf("Allowed() = %v for %s", d.Allowed(), d.Outcome)
	}
	if d.Step < 1 || d.Step > 8 {
		t.Errorf("Step = %d", d.Step)
	}
	if d.Explanation == "" || len(d.Trace) == 0 || !strings.Contains(d.Trace[len(d.Trace)-1], "step ") {
		t.Errorf("no explanation or trace: %q %q", d.Explanation, d.Trace)
	}
	for i, line := range d.Trace {
		var n int
		if _, err := fmt.Sscanf(line, "step %d:", &n); err != nil || n < 1 || n > 8 {
			t.Errorf("trace line %d %q does not start with its step", i, line)
		}
	}
}

func TestZeroDecisionDenies(t *testing.T) {
	var d Decision
	if d.Allowed() {
		t.Fatal("the zero Decision allows")
	}
	if got := Decide(&Call{}); got.Allowed() || got.Code != CodeAppNotFound {
		t.Fatalf("Decide(&Call{}) = %s %q", got.Outcome, got.Code)
	}
}

// TestDecideDecodedManifest decides calls on capabilities as the manifest decoder gives them,
// defaults filled in, and checks that the raw declaration decides alike.
func TestDecideDecodedManifest(t *testing.T) {
	data, err := os.ReadFile("../../manifest/testdata/notes.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := manifest.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Manifest()
	call := func(id string, mods ...func(*Call)) Call {
		c := base()
		cp := *m.Capability(id)
		c.Capability = &cp
		c.CapabilityID, c.Permission = c.Capability.ParsedID(), c.Capability.ParsedPermission()
		c.Token.Grants = []string{"notes.*"}
		for _, f := range mods {
			f(&c)
		}
		return c
	}
	// search: public, read, derived low risk; runs without a token.
	search := call("notes.org.example.notes.search", noToken)
	if d := Decide(&search); d.Outcome != Allow {
		t.Errorf("search without a token: %s %s", d.Outcome, d.Explanation)
	}
	// delete: destructive, confirmation_required, reversible by its undo window, so it asks
	// on every call and does not wait once approved.
	del := call("notes.org.example.notes.delete", func(c *Call) {
		ids(c, "notes.org.example.notes.delete", "notes.delete")
		c.Token.ConsentRecorded = true
	})
	if d := Decide(&del); d.Outcome != Ask {
		t.Errorf("delete: %s %s", d.Outcome, d.Explanation)
	}
	del.ConsentGranted = true
	if d := Decide(&del); d.Outcome != Allow || d.DelayedCommit != 0 {
		t.Errorf("approved delete: %s, waits %v", d.Outcome, d.DelayedCommit)
	}
	// Every capability decides the same with its declaration raw as with defaults applied.
	var raw struct {
		Capabilities []manifest.Capability `json:"capabilities"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, rc := range raw.Capabilities {
		for _, mods := range [][]func(*Call){nil, {noToken}, {func(c *Call) { c.Tier = 2 }}} {
			dc := call(rc.ID, mods...)
			rcall := dc
			rcall.Capability = &rc
			a, b := Decide(&dc), Decide(&rcall)
			if a.Outcome != b.Outcome || a.Code != b.Code || a.DelayedCommit != b.DelayedCommit {
				t.Errorf("%s: defaulted %s %q, raw %s %q", rc.ID, a.Outcome, a.Code, b.Outcome, b.Code)
			}
		}
	}
}

// TestExplanationsKeepSecrets plants a marker in every string of the input and checks that no
// explanation or trace repeats it, whichever step decides.
func TestExplanationsKeepSecrets(t *testing.T) {
	const marker = "SECRET value=hunter2"
	plant := func(c *Call) {
		c.Capability.Name = marker
		c.Capability.Description = marker
		c.Capability.Parameters = []byte(`{"default":"` + marker + `"}`)
		c.Capability.Examples = []json.RawMessage{json.RawMessage(`"` + marker + `"`)}
		c.Capability.DataClasses = []string{marker}
		c.Token.Grants = append(c.Token.Grants, marker, "notes."+marker)
		c.Token.Constraints = token.Constraints{AllowedPaths: []string{marker}, AllowedCommands: []string{marker},
			DeniedCommands: []string{marker}, DeniedPatterns: []string{marker}, Condition: marker}
		c.Token.InvalidReason = token.ErrMalformed.Error() + ": " + marker
		c.ConstraintRule = marker
		if c.Mandate != nil {
			c.Mandate.AgreedID, c.Mandate.Wording = marker, marker
		}
	}
	cases := map[string]func(*Call){
		"allow":         func(*Call) {},
		"invalid token": func(c *Call) { c.Token.Valid = false },
		"params": func(c *Call) {
			c.ParamsProblems = []string{"/q " + marker, marker, "/" + strings.Repeat("a", MaxFieldPathBytes)}
		},
		"permission":       func(c *Call) { c.Capability.AuthLevel = manifest.AuthLevel(marker) },
		"trust":            func(c *Call) { c.ClientTrust = manifest.AuthLevel(marker) },
		"constraint":       func(c *Call) { c.ConstraintOK = false },
		"grant":            func(c *Call) { c.Capability.Permission = marker; ids(c, readID, marker) },
		"capability id":    func(c *Call) { c.Capability.ID = marker; ids(c, marker, ""); c.Enabled = false },
		"no token":         noToken,
		"mandate":          func(c *Call) { c.Mandate = &Mandate{Autonomy: manifest.Autonomy(marker)} },
		"agreed":           func(c *Call) { c.Mandate = &Mandate{Autonomy: manifest.AutonomyActIfAgreed, AgreedAt: agreedAt} },
		"ceiling":          func(c *Call) { c.Capability.AutonomyCeiling = manifest.Autonomy(marker) },
		"side effects":     func(c *Call) { c.Capability.SideEffects = manifest.SideEffect(marker) },
		"irreversible":     func(c *Call) { c.Capability.Reversibility = manifest.Reversibility(marker) },
		"risk":             func(c *Call) { noToken(c); public(c); c.Capability.Risk = manifest.Risk(marker) },
		"tier 2 and asked": func(c *Call) { write(c); c.Tier = 2; c.ConsentDenied = true },
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			c := base()
			mod(&c)
			plant(&c)
			d := Decide(&c)
			for _, s := range append([]string{d.Explanation, d.Code, string(d.Outcome), string(d.Autonomy), d.ConsentKind}, d.Trace...) {
				if strings.Contains(s, "SECRET") || strings.Contains(s, "hunter2") {
					t.Fatalf("%s (%s %s) repeats the marker: %q", name, d.Outcome, d.Code, s)
				}
			}
		})
	}
}

// A call that also needs a second permission runs only under a token that covers both.
func TestAlsoNeeds(t *testing.T) {
	for _, tc := range []struct {
		grants []string
		ok     bool
	}{
		{[]string{"notes.read"}, false},
		{[]string{"notes.read", "fs.write"}, false},
		{[]string{"notes.read", "fs.read"}, true},
		{[]string{"notes.*", "fs.*"}, true},
		{[]string{"fs.read"}, false},
	} {
		c := base()
		c.AlsoNeeds = permissions("fs.read")
		c.Token.Grants = tc.grants
		d := Decide(&c)
		if d.Allowed() != tc.ok || (!tc.ok && (d.Code != CodeCapabilityDenied || d.Step != 5)) {
			t.Errorf("grants %v: %+v", tc.grants, d)
		}
		if !tc.ok && len(tc.grants) > 0 && tc.grants[0] == "notes.read" && !strings.Contains(d.Explanation, "fs.read") {
			t.Errorf("grants %v: the explanation does not name fs.read: %s", tc.grants, d.Explanation)
		}
	}
}

// RunsWithoutToken is step 5's rule for a call without a token, shared with the fronts that
// list capabilities: for every mix of tier, risk, side effects, auth level and the client's
// setting, a call it says needs no token goes past step 5, and every other call of a client
// set never to ask is refused there.
func TestRunsWithoutTokenAgreesWithDecide(t *testing.T) {
	n := 0
	for _, tier := range []int{0, 1, 2, 3} {
		for _, risk := range []manifest.Risk{"", manifest.RiskLow, manifest.RiskMedium, manifest.RiskHigh, "LOW"} {
			for _, se := range append([]manifest.SideEffect{"", "READ", "none "}, manifest.SideEffects...) {
				for _, auth := range []manifest.AuthLevel{"", manifest.AuthPublic, manifest.AuthUser, manifest.AuthPrivileged} {
					for _, req := range []bool{false, true} {
						c := base()
						noToken(&c)
						c.Tier, c.Capability.Risk, c.Capability.SideEffects, c.Capability.AuthLevel = tier, risk, se, auth
						c.ClientTrust, c.ClientNeverAsk, c.ClientRequiresToken = manifest.AuthPrivileged, true, req
						runs := RunsWithoutToken(*c.Capability, tier, req)
						d := Decide(&c)
						refused5 := d.Step == 5 && d.Code == CodeCapabilityDenied
						if runs == refused5 {
							t.Errorf("tier %d, risk %q, side effects %q, auth %q, require token %v: RunsWithoutToken %v, Decide %s %s at step %d",
								tier, risk, se, auth, req, runs, d.Outcome, d.Code, d.Step)
						}
						wantRuns := (tier == 1 && !req && (risk == manifest.RiskLow || (risk == "" && (se == manifest.SideEffectNone || se == manifest.SideEffectRead))) &&
							(se == manifest.SideEffectNone || se == manifest.SideEffectRead)) ||
							(auth == manifest.AuthPublic && (risk == manifest.RiskLow || (risk == "" && (se == manifest.SideEffectNone || se == manifest.SideEffectRead))))
						if runs != wantRuns {
							t.Errorf("tier %d, risk %q, side effects %q, auth %q, require token %v: RunsWithoutToken %v, want %v",
								tier, risk, se, auth, req, runs, wantRuns)
						}
						n++
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d cases", n)
	}
}
