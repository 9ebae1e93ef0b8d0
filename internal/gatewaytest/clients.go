package gatewaytest

import (
	"context"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/store"
)

// AddClient adds the client c to st with a key minted as `capgate client add` mints one
// (operator.NewClientKey), and returns the key. An empty c.ID is minted too
// (operator.NewClientID); c's key hash and creation time are set here.
func AddClient(t testing.TB, st store.Clients, c store.Client) string {
	t.Helper()
	key, hash, err := operator.NewClientKey()
	if err != nil {
		t.Fatal(err)
	}
	if c.ID == "" {
		if c.ID, err = operator.NewClientID(); err != nil {
			t.Fatal(err)
		}
	}
	c.KeyHash, c.Created = hash, time.Now()
	if err := st.PutClient(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return key
}
