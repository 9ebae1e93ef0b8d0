package consent_test

import (
	"errors"
	"strings"
	"testing"

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
	r.Kind, r.Permission, r.Grants = consent.KindToken, "", []string{"fs.read", "fs.*"}
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

func TestReversibilityText(t *testing.T) {
	for _, tt := range []struct{ rev, remedy, want string }{
		{consent.Reversible, "", "Undo"},
		{consent.Compensable, "Request refund", "Request refund"},
		{consent.Compensable, "", "cannot be undone"},
		{consent.Irreversible, "Request refund", "cannot be undone"},
		{"", "", "cannot be undone"},
		{"bogus", "", "cannot be undone"},
	} {
		r := consent.Request{Reversibility: tt.rev, Remedy: tt.remedy}
		if got := r.ReversibilityText(); got != tt.want {
			t.Errorf("(%q, %q) = %q, want %q", tt.rev, tt.remedy, got, tt.want)
		}
	}
}
