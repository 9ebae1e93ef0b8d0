package policy

import (
	"testing"
	"time"

	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
)

// bits reads a Call's facts from fuzz input, one byte at a time; past the end it reads zero.
type bits struct {
	b []byte
	i int
}

func (r *bits) byte() byte {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *bits) bool() bool { return r.byte()&1 == 1 }

// pick chooses one of xs, or, now and then, a value outside them.
func pick[T ~string](r *bits, xs []T, other T) T {
	n := int(r.byte()) % (len(xs) + 2)
	switch {
	case n < len(xs):
		return xs[n]
	case n == len(xs):
		return ""
	}
	return other
}

var fuzzPermissions = []string{"notes.read", "notes.write", "fs.delete", "notes.*", "fs.*", "*", "", "notes.read.x"}

func callFrom(data []byte) Call {
	r := &bits{b: data}
	c := Call{
		AppFound: r.bool(), CapabilityFound: r.bool(), Enabled: r.bool(), Pinned: r.bool(), Working: r.bool(),
		Tier: int(r.byte() % 4),
	}
	ids(&c, []string{readID, writeID, "", "Bad.ID"}[r.byte()%4], fuzzPermissions[r.byte()%byte(len(fuzzPermissions))])
	c.Capability = &manifest.Capability{
		SideEffects:          pick(r, manifest.SideEffects, "explosive"),
		AuthLevel:            pick(r, manifest.AuthLevels, "admin"),
		Risk:                 pick(r, manifest.Risks, "extreme"),
		AutonomyCeiling:      pick(r, manifest.Autonomies, "whenever"),
		Reversibility:        pick(r, manifest.Reversibilities, "mostly"),
		ConfirmationRequired: r.bool(),
	}
	if r.bool() {
		c.Capability.UndoWindowMS = new(int64(r.byte()) - 100)
	}
	c.Token = TokenFacts{
		Present: r.bool(), Valid: r.bool(), Revoked: r.bool(), Expired: r.bool(), Exhausted: r.bool(),
		ConsentRecorded: r.bool(), InvalidReason: "reason",
	}
	for n := r.byte() % 4; n > 0; n-- {
		c.Token.Grants = append(c.Token.Grants, fuzzPermissions[r.byte()%byte(len(fuzzPermissions))])
	}
	if r.bool() {
		c.ParamsProblems = []string{"/query"}
	}
	c.ClientTrust = pick(r, manifest.AuthLevels, "root")
	c.ClientNeverAsk = r.bool()
	c.ConstraintOK, c.ConstraintRule = r.bool(), "condition"
	if r.bool() {
		c.Mandate = &Mandate{Autonomy: pick(r, manifest.Autonomies, "sometimes")}
		if r.bool() {
			c.Mandate.AgreedID, c.Mandate.Wording, c.Mandate.AgreedAt = "cr_1", "go ahead", agreedAt
		}
	}
	c.ConsentGranted, c.ConsentDenied = r.bool(), r.bool()
	c.DelayedCommitDefault = time.Duration(int8(r.byte())) * time.Second
	return c
}

// refusedBefore6 reports whether any of steps 1 to 5 finds something wrong, judged here
// independently of Decide.
func refusedBefore6(c Call) bool {
	if !c.AppFound || !c.CapabilityFound || !c.Enabled || !c.Pinned || !c.Working {
		return true
	}
	t := c.Token
	if t.Present && (!t.Valid || t.Revoked || t.Expired || t.Exhausted) {
		return true
	}
	if len(c.ParamsProblems) > 0 {
		return true
	}
	auth := c.Capability.AuthLevel
	if auth == "" {
		auth = manifest.AuthUser
	}
	trust := c.ClientTrust
	if !trust.Valid() {
		trust = manifest.AuthPublic
	}
	if trust == manifest.AuthSystem || trust.Rank() < auth.Rank() {
		// A system client is read as privileged: it never meets a system auth level.
		if trust != manifest.AuthSystem || auth.Rank() > manifest.AuthPrivileged.Rank() {
			return true
		}
	}
	if t.Present {
		perm := c.Permission
		if !perm.IsValid() {
			perm = c.CapabilityID.Permission()
		}
		return !token.Covers(t.Grants, perm.String()) || !c.ConstraintOK
	}
	return false
}

func FuzzDecide(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1})
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Add([]byte{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 1, 1, 1, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := callFrom(data)
		d := Decide(&c)
		checkShape(t, c, d)
		if d.Allowed() && refusedBefore6(c) {
			t.Fatalf("allowed although a step before 6 refuses: %+v\n%q", c, d.Trace)
		}
		if d.Allowed() && c.Mandate != nil && c.Mandate.Autonomy == manifest.AutonomyHandoff {
			t.Fatalf("allowed under a handoff mandate: %q", d.Trace)
		}
		if d.Allowed() && c.Capability.AutonomyCeiling == manifest.AutonomyHandoff {
			t.Fatalf("allowed under a handoff ceiling: %q", d.Trace)
		}
		if d.Allowed() && c.Tier != 1 && c.Capability.SideEffects != manifest.SideEffectNone &&
			c.Capability.SideEffects != manifest.SideEffectRead && !c.ConsentGranted {
			t.Fatalf("a Tier 2 capability acted above read without consent: %q", d.Trace)
		}
		if d.Allowed() && c.Capability.ConfirmationRequired && !c.ConsentGranted {
			t.Fatalf("a confirmation_required capability ran without this call's consent: %q", d.Trace)
		}
		if d.Allowed() && c.Capability.ConfirmationRequired && c.ConsentDenied {
			t.Fatalf("allowed after the person refused: %q", d.Trace)
		}
		if d.Code == CodeConsentDenied && !c.ConsentDenied {
			t.Fatalf("CONSENT_DENIED although the person refused nothing")
		}
		// Decide is a function: the same facts give the same decision.
		if again := Decide(&c); again.Outcome != d.Outcome || again.Code != d.Code || again.Explanation != d.Explanation {
			t.Fatalf("Decide is not deterministic")
		}
	})
}
