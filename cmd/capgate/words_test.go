package main

import (
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store"
)

// approvals list says each request as the page does: a token request with its uses,
// lifetime and constraints and as revocable, a read with nothing to undo, a reversible call
// with its window, the request's expiry in plain words, and the look-alike characters found.
func TestConsentLines(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	c := store.Consent{ID: "req_000000000000000000000001", Kind: consent.KindToken, Expires: now.Add(24*time.Hour - 4*time.Second)}
	tok := consent.Request{ClientName: "agent", Kind: consent.KindToken, Summary: "issue a capability token", Grants: []string{"fs.write"},
		Risk: "high", Reason: "log in to pаypal", Token: &consent.TokenTerms{ExpiresAt: now.Add(700 * time.Hour), Lifetime: 700 * 3600, MaxUses: 1000,
			AllowedPaths: []string{"/srv/ws/**"}, DeniedCommands: []string{"rm"}, Condition: `params.size < 10`}}
	got := consentLines(c, tok, now)
	want := "req_000000000000000000000001  token  agent asks: issue a capability token fs.write (risk high; " + consent.UndoRevoke +
		")  expires in 1 day (Dec 1, 2026 13:59 UTC)\n" +
		"  the token: at most 1000 uses; lasts 29 days 4 h, until Dec 29, 2026 18:00 UTC; constraints: only these paths: /srv/ws/**; " +
		"never these commands: rm; only when this CEL condition holds: params.size < 10\n" +
		"  look-alike characters in reason: letters from more than one script in one word: Latin, Cyrillic (p\\u0430ypal)\n"
	if got != want {
		t.Errorf("token request:\n%s\nwant:\n%s", got, want)
	}
	for _, tc := range []struct {
		r    consent.Request
		want string
	}{
		{consent.Request{Kind: consent.KindCall, SideEffects: "read", Reversibility: consent.Irreversible}, "(risk (none); nothing to undo: it only reads)"},
		{consent.Request{Kind: consent.KindCall, SideEffects: "destructive", Reversibility: consent.Reversible, UndoWindowMS: 60000},
			"(risk (none); can be undone within 1 min after it runs)"},
		{consent.Request{Kind: consent.KindCall, SideEffects: "write", Reversibility: consent.Compensable, Remedy: "files.org.example.files.restore"},
			"(risk (none); cannot be undone, but can be made good with files.org.example.files.restore)"},
		{consent.Request{Kind: consent.KindCall, SideEffects: "write"}, "(risk (none); cannot be undone)"},
	} {
		if got := consentLines(store.Consent{Expires: now.Add(time.Minute)}, tc.r, now); !strings.Contains(got, tc.want) || strings.Count(got, "\n") != 1 {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}
