package policy_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/manifest"
)

// A destructive capability called by a user client under a token the person did not consent
// to: the call asks. Once the person approves this very call it runs, after its
// delayed-commit window, because it is irreversible.
func ExampleDecide() {
	// The capability's id and permission, parsed once where the capability is indexed.
	id, _ := manifest.ParseCapabilityID("files.org.example.files.purge")
	perm, _ := manifest.ParsePermission("fs.delete")
	call := policy.Call{
		AppFound: true, CapabilityFound: true, Enabled: true, Pinned: true, Working: true,
		CapabilityID: id, Permission: perm,
		Capability:           &manifest.Capability{SideEffects: manifest.SideEffectDestructive},
		Tier:                 1,
		Token:                policy.TokenFacts{Present: true, Valid: true, Grants: []string{"fs.delete"}},
		ClientTrust:          manifest.AuthUser,
		ConstraintOK:         true,
		DelayedCommitDefault: 5 * time.Second,
	}
	d := policy.Decide(&call)
	fmt.Println(d.Outcome, d.Code, d.ConsentKind)
	fmt.Println(strings.Join(d.Trace, "\n"))

	call.ConsentGranted = true
	d = policy.Decide(&call)
	fmt.Println(d.Outcome, d.UseToken, d.DelayedCommit)
	// Output:
	// ask CONSENT_REQUIRED call
	// step 1: files.org.example.files.purge is installed, enabled, pinned and working
	// step 2: the token is valid, bound to this client, not revoked, not expired and not used up
	// step 3: the params match the schema
	// step 4: the client is trusted as user; files.org.example.files.purge needs user
	// step 5: the token covers fs.delete, it has no constraints, and was issued without recorded consent
	// step 6: the ceiling of files.org.example.files.purge is act
	// step 6: narrowed to ask: its side effects are destructive, the client is below privileged, and no token issued with the person's consent covers it
	// step 7: the call waits for the person's approval in a consent request for this call
	// allow true 5s
}

func ExampleNeedsConsentToIssue() {
	risks := map[string]manifest.Risk{"notes.read": manifest.RiskLow, "fs.*": manifest.RiskLow}
	riskOf := func(g string) manifest.Risk { return risks[g] }
	fmt.Println(policy.NeedsConsentToIssue([]string{"notes.read"}, riskOf))
	fmt.Println(policy.NeedsConsentToIssue([]string{"fs.*"}, riskOf))         // covers fs.delete
	fmt.Println(policy.NeedsConsentToIssue([]string{"weather.read"}, riskOf)) // unknown: fail closed
	// Output:
	// false
	// true
	// true
}
