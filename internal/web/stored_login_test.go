package web

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/gatewaytest"
)

// A stored login link works once, for LoginTTL, whichever of racing browsers spends it.
func TestStoredLoginLink(t *testing.T) {
	ctx := context.Background()
	st := gatewaytest.Store(t)
	now := time.Now()
	path, err := StoreLoginLink(ctx, st, now)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimPrefix(path, "/ui/login?t=")
	if secret == path || len(secret) < 40 {
		t.Fatalf("link %q", path)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if spendStoredLink(ctx, st, secret, now) {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d browsers signed in with one link", wins.Load())
	}
	// Expired, or made up, it does not work.
	old, _ := StoreLoginLink(ctx, st, now.Add(-LoginTTL-time.Second))
	if spendStoredLink(ctx, st, strings.TrimPrefix(old, "/ui/login?t="), now) {
		t.Error("an expired link worked")
	}
	for _, bad := range []string{"", "x", secret + "x", strings.Repeat("A", 43), strings.Repeat("A", 5000)} {
		if spendStoredLink(ctx, st, bad, now) {
			t.Errorf("%q worked", bad)
		}
	}
	// Expired links are removed when the next is made.
	if _, err := StoreLoginLink(ctx, st, now.Add(2*LoginTTL)); err != nil {
		t.Fatal(err)
	}
	m, _ := st.ListState(ctx, loginApp, "")
	if len(m) != 1 {
		t.Errorf("%d stored login records after the expired ones went, want 1", len(m))
	}
}
