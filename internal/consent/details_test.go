package consent_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
)

// A token request for fs.write with 1000 uses, 700 hours and constraints says all of them
// in words, and that the token can be revoked; recorded and read back, it says the same.
func TestDescribeTokenRequest(t *testing.T) {
	st, _ := openDB(t)
	svc := service(st, newClock())
	c, err := svc.Ask(t.Context(), consent.Request{ClientID: "cl_agent", ClientName: "research agent", Kind: consent.KindToken,
		Grants: []string{"fs.write"}, Summary: "issue a capability token", Reason: "tidy the workspace", Risk: "medium",
		Token: tokenTerms()})
	must(t, err)
	_, r, err := svc.Get(t.Context(), c.ID)
	must(t, err)
	if r.Reversibility != consent.Revocable {
		t.Errorf("a token request's reversibility is recorded as %q", r.Reversibility)
	}
	d := consent.Describe(r)
	want := []string{
		"only these paths: /srv/ws/**",
		"only these commands: ls, git status",
		"never these commands: rm",
		"never commands matching: rm -rf",
		`only when this CEL condition holds: params.size < 1000000 && !params.path.endsWith(".key")`,
	}
	if d.Uses != "at most 1000 uses" || d.Lifetime != "29 days 4 h" || d.ExpiresAt == nil ||
		!d.ExpiresAt.Equal(time.Date(2026, 12, 30, 14, 0, 0, 0, time.UTC)) || !reflect.DeepEqual(d.Constraints, want) {
		t.Errorf("uses %q, lifetime %q, expires %v, constraints %q", d.Uses, d.Lifetime, d.ExpiresAt, d.Constraints)
	}
	if !d.Revocable || d.Irreversible || d.Undo != consent.UndoRevoke || strings.Contains(d.Undo, "cannot be undone") {
		t.Errorf("a token request: revocable %v, irreversible %v, undo %q", d.Revocable, d.Irreversible, d.Undo)
	}

	// As JSON: the Request's members where they were, the words beside them, snake_case.
	raw, err := json.Marshal(d)
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(raw, &m))
	for _, k := range []string{"client_id", "kind", "grants", "reason", "reversibility", "token", "uses", "expires_at",
		"lifetime", "constraints", "revocable", "undo", "irreversible"} {
		if _, ok := m[k]; !ok {
			t.Errorf("the JSON lacks %q: %s", k, raw)
		}
	}
	tok, _ := m["token"].(map[string]any)
	if tok["max_uses"] != 1000.0 || tok["lifetime_s"] != 2520000.0 || tok["expires_at"] != "2026-12-30T14:00:00Z" {
		t.Errorf("token terms: %v", tok)
	}

	// No constraints: said as none. A request recorded before the terms were: not recorded.
	d = consent.Describe(consent.Request{Kind: consent.KindToken, Grants: []string{"fs.read"},
		Token: &consent.TokenTerms{ExpiresAt: time.Unix(1e9, 0), Lifetime: 59}})
	if d.Uses != "no limit on uses" || d.Lifetime != "59 s" || !reflect.DeepEqual(d.Constraints, []string{"none"}) {
		t.Errorf("no constraints: %q %q %q", d.Uses, d.Lifetime, d.Constraints)
	}
	d = consent.Describe(consent.Request{Kind: consent.KindToken, Grants: []string{"fs.read"}, Reversibility: consent.Irreversible})
	if d.Uses != "not recorded" || d.ExpiresAt != nil || !d.Revocable || d.Irreversible {
		t.Errorf("an old token request: %+v", d)
	}
}

// Each kind is told the truth about undoing it: a read has nothing to undo, a reversible
// call says for how long, a remedy is named, and only what nothing takes back cannot be undone.
func TestDescribeUndo(t *testing.T) {
	for _, tc := range []struct {
		name         string
		r            consent.Request
		undo         string
		irreversible bool
	}{
		{"read, undeclared", consent.Request{Kind: consent.KindCall, SideEffects: "read", Reversibility: consent.Irreversible}, consent.UndoReadOnly, false},
		{"none", consent.Request{Kind: consent.KindCall, SideEffects: "none"}, consent.UndoReadOnly, false},
		{"reversible delete", consent.Request{Kind: consent.KindCall, SideEffects: "destructive", Reversibility: consent.Reversible, UndoWindowMS: 60000},
			"can be undone within 1 min after it runs", false},
		{"reversible, a day", consent.Request{Kind: consent.KindCall, SideEffects: "write", Reversibility: consent.Reversible, UndoWindowMS: 86_400_000},
			"can be undone within 1 day after it runs", false},
		{"reversible without a window", consent.Request{Kind: consent.KindCall, SideEffects: "write", Reversibility: consent.Reversible},
			"reversible, the app says, but it gives no undo window: capgate cannot undo it", false},
		{"compensable", consent.Request{Kind: consent.KindCall, SideEffects: "write", Reversibility: consent.Compensable, Remedy: "Request refund"},
			"cannot be undone, but can be made good with Request refund", false},
		{"compensable without a remedy", consent.Request{Kind: consent.KindCall, SideEffects: "write", Reversibility: consent.Compensable}, consent.UndoNever, true},
		{"irreversible", consent.Request{Kind: consent.KindCommit, SideEffects: "network", Reversibility: consent.Irreversible}, consent.UndoNever, true},
		{"side effects not stated", consent.Request{Kind: consent.KindCall}, consent.UndoNever, true},
		{"bogus", consent.Request{Kind: consent.KindCall, SideEffects: "write", Reversibility: "Undo"}, consent.UndoNever, true},
	} {
		d := consent.Describe(tc.r)
		if d.Undo != tc.undo || d.Irreversible != tc.irreversible || d.Revocable {
			t.Errorf("%s: undo %q irreversible %v revocable %v, want %q %v", tc.name, d.Undo, d.Irreversible, d.Revocable, tc.undo, tc.irreversible)
		}
		if d.Undo == "Undo" {
			t.Errorf("%s: says only %q", tc.name, d.Undo)
		}
	}
}

// Look-alike characters are flagged in every text an agent supplied, each named by its
// field: the client name, summary, reason, audit tag, grants, constraints, every string and
// member name in the params; clean fields are not listed.
func TestDescribeLookalikes(t *testing.T) {
	terms := tokenTerms()
	terms.AllowedPaths = []string{"/srv/ws/**", "/srv/wѕ/**"}
	d := consent.Describe(consent.Request{Kind: consent.KindToken, ClientName: "Reseаrch assistant", Summary: "issue a ｔoken",
		Reason: "log in to pаypal and tidy", AuditTag: "tidy\u200b", Grants: []string{"fs.write"}, Token: terms,
		Params: []byte(`{"nested":{"url":"https://аpple.com"},"pаth":"plain"}`)})
	got := map[string]consent.Lookalike{}
	var fields []string
	for _, l := range d.Lookalikes {
		got[l.Field] = l
		fields = append(fields, l.Field)
	}
	want := []string{"client_name", "summary", "token.allowed_paths[1]", "reason", "audit_tag", "params.nested.url", `params.p\u0430th (name)`}
	if !reflect.DeepEqual(fields, want) {
		t.Fatalf("flagged fields %q, want %q", fields, want)
	}
	if r := got["reason"]; !slices.Contains(r.Shown, `p\u0430ypal`) || len(r.Flags) != 1 {
		t.Errorf("reason: %+v", r)
	}
	if a := got["audit_tag"]; !slices.Contains(a.Flags, consent.FlagInvisible) {
		t.Errorf("audit tag: %+v", a)
	}
	if consent.Describe(callRequest()).Lookalikes != nil {
		t.Error("a clean request is flagged")
	}

	// A request made of hostile texts lists at most MaxLookalikes.
	params := map[string]string{}
	for i := range 50 {
		params[strings.Repeat("k", i+1)] = "pаypal"
	}
	raw, _ := json.Marshal(params)
	if n := len(consent.Describe(consent.Request{Kind: consent.KindCall, Params: raw}).Lookalikes); n != consent.MaxLookalikes {
		t.Errorf("%d look-alikes listed, want %d", n, consent.MaxLookalikes)
	}
}
