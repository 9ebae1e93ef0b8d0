package consent_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/consent"
)

func TestAskValidates(t *testing.T) {
	st, _ := openDB(t)
	svc := service(st, newClock())
	tests := []struct {
		name  string
		edit  func(*consent.Request)
		field string
	}{
		{"no kind", func(r *consent.Request) { r.Kind = "" }, "kind"},
		{"commit kind", func(r *consent.Request) { r.Kind = consent.KindCommit }, "kind"},
		{"no client", func(r *consent.Request) { r.ClientID = "" }, "client_id"},
		{"call without permission", func(r *consent.Request) { r.Permission = "" }, "permission"},
		{"token without grants", func(r *consent.Request) { r.Kind = consent.KindToken }, "grants"},
		{"empty grant", func(r *consent.Request) { r.Kind, r.Grants = consent.KindToken, []string{""} }, "grants[0]"},
		{"escape in reason", func(r *consent.Request) { r.Reason = "fine\x1b[1A\x1b[2Kapproved" }, "reason"},
		{"carriage return in summary", func(r *consent.Request) { r.Summary = "read\rdelete" }, "summary"},
		{"bidi override in client name", func(r *consent.Request) { r.ClientName = "agent\u202etxt.exe" }, "client_name"},
		{"line break in permission", func(r *consent.Request) { r.Permission = "fs.read\nfs.delete" }, "permission"},
		{"bad utf-8", func(r *consent.Request) { r.Remedy = "\xff" }, "remedy"},
		{"long wording", func(r *consent.Request) { r.Wording = strings.Repeat("w", consent.MaxTextBytes+1) }, "wording"},
		{"unknown reversibility", func(r *consent.Request) { r.Reversibility = "Undo" }, "reversibility"},
		{"params not JSON", func(r *consent.Request) { r.Params = []byte("{") }, "params"},
		{"token irreversible", func(r *consent.Request) {
			r.Kind, r.Grants, r.Reversibility = consent.KindToken, []string{"fs.write"}, consent.Irreversible
		}, "reversibility"},
		{"call revocable", func(r *consent.Request) { r.Reversibility = consent.Revocable }, "reversibility"},
		{"negative undo window", func(r *consent.Request) { r.UndoWindowMS = -1 }, "undo_window_ms"},
		{"token terms on a call", func(r *consent.Request) { r.Token = tokenTerms() }, "token"},
		{"token without expiry", func(r *consent.Request) {
			r.Kind, r.Grants, r.Reversibility, r.Token = consent.KindToken, []string{"fs.write"}, "", tokenTerms()
			r.Token.ExpiresAt = time.Time{}
		}, "token.expires_at"},
		{"token without lifetime", func(r *consent.Request) {
			r.Kind, r.Grants, r.Reversibility, r.Token = consent.KindToken, []string{"fs.write"}, "", tokenTerms()
			r.Token.Lifetime = 0
		}, "token.lifetime_s"},
		{"token with negative uses", func(r *consent.Request) {
			r.Kind, r.Grants, r.Reversibility, r.Token = consent.KindToken, []string{"fs.write"}, "", tokenTerms()
			r.Token.MaxUses = -5
		}, "token.max_uses"},
		{"bidi override in an allowed path", func(r *consent.Request) {
			r.Kind, r.Grants, r.Reversibility, r.Token = consent.KindToken, []string{"fs.write"}, "", tokenTerms()
			r.Token.AllowedPaths = []string{"/srv/ws/**", "/srv/\u202e**"}
		}, "token.allowed_paths[1]"},
		{"escape in a condition", func(r *consent.Request) {
			r.Kind, r.Grants, r.Reversibility, r.Token = consent.KindToken, []string{"fs.write"}, "", tokenTerms()
			r.Token.Condition = "true\x1b[2K"
		}, "token.condition"},
		{"too many denied commands", func(r *consent.Request) {
			r.Kind, r.Grants, r.Reversibility, r.Token = consent.KindToken, []string{"fs.write"}, "", tokenTerms()
			r.Token.DeniedCommands = make([]string, consent.MaxListEntries+1)
			for i := range r.Token.DeniedCommands {
				r.Token.DeniedCommands[i] = "rm"
			}
		}, "token.denied_commands"},
		{"line break in a difference line", func(r *consent.Request) { r.Difference = []string{"+ /a: 1\n- /b: 2"} }, "difference[0]"},
		{"payload too large", func(r *consent.Request) {
			r.Params = []byte(`"` + strings.Repeat("a", consent.MaxPayloadBytes) + `"`)
		}, "payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := callRequest()
			tt.edit(&r)
			_, err := svc.Ask(t.Context(), r)
			if !errors.Is(err, consent.ErrInvalidRequest) {
				t.Fatalf("Ask: %v, want ErrInvalidRequest", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %s", err, tt.field)
			}
		})
	}
	cs, err := svc.List(t.Context(), "")
	must(t, err)
	if len(cs) != 0 {
		t.Errorf("refused requests recorded: %d", len(cs))
	}

	// Multi-line text where it is text, and a token request with grants, are fine.
	r := callRequest()
	r.Kind, r.Permission, r.Grants, r.Reversibility, r.Remedy = consent.KindToken, "", []string{"fs.read", "fs.*"}, "", ""
	r.Reason = "line one\n\tline two"
	if _, err := svc.Ask(t.Context(), r); err != nil {
		t.Errorf("Ask of a valid token request: %v", err)
	}
}

func TestBadNewID(t *testing.T) {
	st, _ := openDB(t)
	svc := consent.New(st, &consent.Options{Surface: true, NewID: func() string { return "req_x" }})
	if _, err := svc.Ask(t.Context(), callRequest()); !errors.Is(err, consent.ErrInvalidID) {
		t.Errorf("Ask with a bad NewID: %v, want ErrInvalidID", err)
	}
	def := consent.New(st, nil)
	c, err := def.Ask(t.Context(), callRequest())
	must(t, err)
	if !consent.ValidID(c.ID) {
		t.Errorf("default id %q is not valid", c.ID)
	}
}

// tokenTerms are the terms of a token for fs.write: 1000 uses, 700 hours, paths and commands.
func tokenTerms() *consent.TokenTerms {
	return &consent.TokenTerms{ExpiresAt: time.Date(2026, 12, 30, 14, 0, 0, 0, time.UTC), Lifetime: 700 * 3600, MaxUses: 1000,
		AllowedPaths: []string{"/srv/ws/**"}, AllowedCommands: []string{"ls", "git status"}, DeniedCommands: []string{"rm"},
		DeniedPatterns: []string{"rm -rf"}, Condition: `params.size < 1000000 && !params.path.endsWith(".key")`}
}
