package policy_test

import (
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/manifest"
)

// An outside assistant never reaches a sensitive data class, and reaches personal context only
// when its provider neither stores nor trains on data; the person's own agents reach both.
// Classes are matched by their first label, whatever the case; an unknown kind of assistant
// is read as one that keeps data.
func TestAssistantRefusal(t *testing.T) {
	for _, c := range []struct {
		a       policy.Assistant
		classes []string
		refused string // a word of the refusal, "" for none
	}{
		{policy.NotAssistant, []string{"health.records", "memory"}, ""},
		{policy.AssistantPrivate, []string{"memory", "preferences.ui"}, ""},
		{policy.AssistantPrivate, []string{"weather"}, ""},
		{policy.AssistantPrivate, []string{"Health.Records"}, "sensitive"},
		{policy.AssistantPrivate, []string{"memory", "payment.card"}, "sensitive"},
		{policy.AssistantKeeps, []string{"history"}, "personal context"},
		{policy.AssistantKeeps, []string{"contacts.work"}, "personal context"},
		{policy.AssistantKeeps, []string{"weather", "public.news"}, ""},
		{policy.AssistantKeeps, nil, ""},
		{"unknown-kind", []string{"memory"}, "personal context"},
		{policy.AssistantKeeps, []string{"location"}, "sensitive"},
	} {
		why := policy.AssistantRefusal(c.a, &manifest.Capability{DataClasses: c.classes})
		if (c.refused == "") != (why == "") || !strings.Contains(why, c.refused) {
			t.Errorf("%q %v: %q", c.a, c.classes, why)
		}
	}
}

// The decision refuses at step 4 what an outside assistant may not reach, whatever its token.
func TestDecideRefusesOutsideAssistants(t *testing.T) {
	c := policy.Call{AppFound: true, CapabilityFound: true, Enabled: true, Pinned: true, Working: true,
		Capability: &manifest.Capability{SideEffects: manifest.SideEffectRead, AuthLevel: manifest.AuthUser, Risk: manifest.RiskLow,
			AutonomyCeiling: manifest.AutonomyAct, DataClasses: []string{"memory.facts"}},
		Tier: 1, ClientTrust: manifest.AuthPrivileged, ConstraintOK: true,
		Token: policy.TokenFacts{Present: true, Valid: true, Grants: []string{"notes.read"}}}
	c.CapabilityID, _ = manifest.ParseCapabilityID("notes.org.example.notes.recall")
	c.Permission, _ = manifest.ParsePermission("notes.read")
	if d := policy.Decide(&c); d.Outcome != policy.Allow {
		t.Fatalf("the person's agent: %+v", d)
	}
	c.Assistant = policy.AssistantKeeps
	if d := policy.Decide(&c); d.Outcome != policy.Deny || d.Step != 4 || d.Code != policy.CodePermissionDenied || !strings.Contains(d.Explanation, "another assistant") {
		t.Fatalf("an assistant that keeps data: %+v", d)
	}
	c.Assistant = policy.AssistantPrivate
	if d := policy.Decide(&c); d.Outcome != policy.Allow {
		t.Fatalf("an assistant that keeps nothing: %+v", d)
	}
}
