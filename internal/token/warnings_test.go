package token_test

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/token"
)

func TestRequestWarnings(t *testing.T) {
	denyOnly := token.RequestWarnings([]byte(`{"denied_commands":["rm -rf"]}`), "")
	if len(denyOnly) != 1 || !strings.Contains(denyOnly[0], "allowed_commands is the strong form") || strings.Contains(denyOnly[0], "rm -rf") {
		t.Errorf("deny-list only: %q", denyOnly)
	}
	if w := token.RequestWarnings([]byte(`{"denied_patterns":["sudo"],"allowed_commands":["ls"]}`), ""); len(w) != 0 {
		t.Errorf("with an allow-list: %q", w)
	}
	if w := token.RequestWarnings([]byte(`{"allowed_paths":["/srv/**"]}`), ""); len(w) != 0 {
		t.Errorf("paths only: %q", w)
	}
	w := token.RequestWarnings([]byte(`{"allowed_commands":["ls","/usr/bin/python3.11","git status"]}`), "")
	if len(w) != 2 || !strings.Contains(w[0], "allowed_commands[1]") || !strings.Contains(w[1], "allowed_commands[2]") {
		t.Errorf("interpreters in the allow-list: %q", w)
	}
	if w := token.RequestWarnings([]byte(`not json`), ""); len(w) != 0 {
		t.Errorf("bad JSON: %q", w)
	}

	// A derivation inherits its parent's lists.
	_, key, _ := ed25519.GenerateKey(nil)
	now := time.Now()
	sign := func(c token.Constraints) string {
		wire, err := token.Sign(token.Token{ID: token.NewID(), IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(),
			Capabilities: []string{"app.terminal.execute"}, ClientID: "c", Constraints: c}, key)
		if err != nil {
			t.Fatal(err)
		}
		return wire
	}
	if w := token.RequestWarnings([]byte(`{"denied_commands":["rm"]}`), sign(token.Constraints{AllowedCommands: []string{"ls"}})); len(w) != 0 {
		t.Errorf("a child of an allow-listed parent: %q", w)
	}
	if w := token.RequestWarnings(nil, sign(token.Constraints{DeniedCommands: []string{"rm"}})); len(w) != 1 {
		t.Errorf("a child of a deny-listed parent: %q", w)
	}
}
