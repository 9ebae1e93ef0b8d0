package gatewaytest

import (
	"context"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
)

// Mint signs tok with key and records it in st as an issuer does, with its use limit, its
// audit tag and the issue and expiry times given (the store's, apart from the token's own
// seconds), and returns its wire form: the way to tokens the API never hands out (expired
// ones, forged ones, ones with any constraints).
func Mint(t testing.TB, st store.Tokens, tok token.Token, key ed25519.PrivateKey, issued, expires time.Time) string {
	t.Helper()
	wire, err := token.Sign(tok, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutToken(context.Background(), store.Token{ID: tok.ID, ClientID: tok.ClientID, IssuedAt: issued, ExpiresAt: expires,
		MaxUses: tok.Constraints.MaxUses, AuditTag: tok.AuditTag, Hash: token.WireHash(wire)}); err != nil {
		t.Fatal(err)
	}
	return wire
}
