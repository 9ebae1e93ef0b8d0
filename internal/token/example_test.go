package token_test

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/capgate/capgate/internal/token"
)

// The way of one call through the checks of this package; the store's use count and
// revocation come after.
func Example() {
	pub, key, _ := ed25519.GenerateKey(nil)
	now := time.Unix(1706620800, 0)
	wire, err := token.Sign(token.Token{
		ID:           token.NewID(),
		IssuedAt:     now.Unix(),
		ExpiresAt:    now.Add(time.Hour).Unix(),
		Capabilities: []string{"app.terminal.execute", "fs.read"},
		Constraints: token.Constraints{
			MaxUses:         10,
			AllowedCommands: []string{"ps", "help"},
			DeniedPatterns:  []string{"rm -rf", "sudo"},
		},
		AuditTag: "Inspect running processes for the user",
		ClientID: "agent-1",
	}, key)
	if err != nil {
		panic(err)
	}

	v := token.NewVerifier(pub, 0)
	tok, err := v.Verify(wire)
	fmt.Println("verify:", err)
	fmt.Println("time:", tok.CheckTime(now.Add(time.Minute)))
	fmt.Println("client:", tok.CheckClient("agent-1"))
	fmt.Println("covers:", token.Covers(tok.Capabilities, "app.terminal.execute"))
	for _, cmd := range []string{"ps", "sudo ps", "bash -c 'rm -rf /'"} {
		v := tok.Constraints.Check(token.Input{
			Permission: "app.terminal.execute",
			Params:     map[string]any{"command": cmd},
			Commands:   []token.Command{{Value: token.Value{Pointer: "/command", Text: cmd}}},
		})
		if v.OK {
			fmt.Printf("%s: allowed\n", cmd)
		} else {
			fmt.Printf("%s: refused by %s\n", cmd, v.Rule)
		}
	}
	// Output:
	// verify: <nil>
	// time: <nil>
	// client: <nil>
	// covers: true
	// ps: allowed
	// sudo ps: refused by denied_patterns
	// bash -c 'rm -rf /': refused by denied_patterns
}
