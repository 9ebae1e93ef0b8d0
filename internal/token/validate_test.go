package token_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/token"
)

func TestValidate(t *testing.T) {
	good := fixedToken()
	good.Version, good.Issuer = token.Version, token.Issuer
	if err := token.Validate(good); err != nil {
		t.Fatalf("Validate(good): %v", err)
	}
	cases := map[string]struct {
		change func(*token.Token)
		field  string
	}{
		"id":                 {func(t *token.Token) { t.ID = "cap_123" }, "token_id"},
		"id uppercase":       {func(t *token.Token) { t.ID = strings.ToUpper(t.ID) }, "token_id"},
		"version":            {func(t *token.Token) { t.Version = token.LegacyVersion }, "version"},
		"issuer":             {func(t *token.Token) { t.Issuer = "" }, "issuer"},
		"client":             {func(t *token.Token) { t.ClientID = "" }, "client_id"},
		"client control":     {func(t *token.Token) { t.ClientID = "a\nb" }, "client_id"},
		"parent":             {func(t *token.Token) { t.ParentID = "x" }, "parent_id"},
		"consent":            {func(t *token.Token) { t.ConsentID = strings.Repeat("c", token.MaxFieldBytes+1) }, "consent_id"},
		"audit bidi":         {func(t *token.Token) { t.AuditTag = "safe\u202etxt.exe" }, "audit_tag"},
		"no grants":          {func(t *token.Token) { t.Capabilities = nil }, "capabilities"},
		"star":               {func(t *token.Token) { t.Capabilities = []string{"*"} }, "capabilities[0]"},
		"dot star":           {func(t *token.Token) { t.Capabilities = []string{"fs.read", ".*"} }, "capabilities[1]"},
		"upper":              {func(t *token.Token) { t.Capabilities = []string{"FS.read"} }, "capabilities[0]"},
		"one segment":        {func(t *token.Token) { t.Capabilities = []string{"fs"} }, "capabilities[0]"},
		"too many grants":    {func(t *token.Token) { t.Capabilities = make([]string, token.MaxGrants+1) }, "capabilities"},
		"expiry before":      {func(t *token.Token) { t.ExpiresAt = t.IssuedAt }, "expires_at"},
		"too long":           {func(t *token.Token) { t.ExpiresAt = t.IssuedAt + 31*24*3600 }, "expires_at"},
		"negative issued":    {func(t *token.Token) { t.IssuedAt = -1 }, "issued_at"},
		"max uses":           {func(t *token.Token) { t.Constraints.MaxUses = -1 }, "constraints.max_uses"},
		"relative path":      {func(t *token.Token) { t.Constraints.AllowedPaths = []string{"home/*"} }, "constraints.allowed_paths[0]"},
		"unclean path":       {func(t *token.Token) { t.Constraints.AllowedPaths = []string{"/home/../etc"} }, "constraints.allowed_paths[0]"},
		"trailing slash":     {func(t *token.Token) { t.Constraints.AllowedPaths = []string{"/home/"} }, "constraints.allowed_paths[0]"},
		"inner **":           {func(t *token.Token) { t.Constraints.AllowedPaths = []string{"/a/**/b"} }, "constraints.allowed_paths[0]"},
		"NUL path":           {func(t *token.Token) { t.Constraints.AllowedPaths = []string{"/a\x00"} }, "constraints.allowed_paths[0]"},
		"operator command":   {func(t *token.Token) { t.Constraints.AllowedCommands = []string{"ps; rm"} }, "constraints.allowed_commands[0]"},
		"relative program":   {func(t *token.Token) { t.Constraints.AllowedCommands = []string{"./ps"} }, "constraints.allowed_commands[0]"},
		"empty denied":       {func(t *token.Token) { t.Constraints.DeniedCommands = []string{""} }, "constraints.denied_commands[0]"},
		"quote denied":       {func(t *token.Token) { t.Constraints.DeniedPatterns = []string{"rm '"} }, "constraints.denied_patterns[0]"},
		"too many entries":   {func(t *token.Token) { t.Constraints.DeniedPatterns = make([]string, token.MaxListEntries+1) }, "constraints.denied_patterns"},
		"condition not bool": {func(t *token.Token) { t.Constraints.Condition = "1" }, "constraints.condition"},
		"condition syntax":   {func(t *token.Token) { t.Constraints.Condition = "((" }, "constraints.condition"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			tok := good.Clone()
			c.change(&tok)
			err := token.Validate(tok)
			if !errors.Is(err, token.ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.field+":") {
				t.Errorf("error %q does not name %s", err, c.field)
			}
		})
	}
	// Every problem at once.
	bad := good.Clone()
	bad.ID, bad.ClientID, bad.Capabilities = "", "", []string{"*"}
	if n := strings.Count(token.Validate(bad).Error(), "invalid token"); n != 3 {
		t.Errorf("Validate reported %d problems, want 3", n)
	}
}
