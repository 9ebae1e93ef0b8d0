// Package storetest is the conformance suite every store.Store implementation passes. It
// uses the interface only, so that SQLite and PostgreSQL are held to the same contract.
//
// Run is the suite. Beside it are the checks a backend runs with what only it can provide,
// so that those too are written once: Reopen (the same database opened twice), ExactTimes,
// UseProcesses and TakeUses (processes sharing one database), Migrations and StepsUnchanged
// (the backend's schema steps and their bookkeeping), and AppendAfterHead and EntriesAfter
// for a backend's own audit tests.
//
// Times are compared at millisecond precision: a store may keep more (SQLite keeps
// nanoseconds, PostgreSQL microseconds) but never less. The zero time must come back as the
// zero time. Byte fields are compared by content: a store need not tell nil from empty.
package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// Run runs the suite. open must return a fresh, empty store on each call and arrange for it
// to be closed when the test ends (t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Apps", func(t *testing.T) { testApps(t, open) })
	t.Run("Clients", func(t *testing.T) { testClients(t, open) })
	t.Run("Tokens", func(t *testing.T) { testTokens(t, open) })
	t.Run("Consents", func(t *testing.T) { testConsents(t, open) })
	t.Run("Mandates", func(t *testing.T) { testMandates(t, open) })
	t.Run("State", func(t *testing.T) { testState(t, open) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, open) })
	t.Run("Holdings", func(t *testing.T) { testHoldings(t, open) })
	t.Run("Revision", func(t *testing.T) { testRevision(t, open) })
	t.Run("Close", func(t *testing.T) {
		s := open(t)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if _, err := s.GetApp(t.Context(), "a"); err == nil {
			t.Errorf("GetApp after Close: no error")
		}
	})
}

// t0 is the suite's clock: sub-millisecond digits check that nothing rounds a time up, a
// zone other than UTC that the instant, not the zone, is kept.
var t0 = time.Date(2031, 5, 6, 7, 8, 9, 123_456_789, time.FixedZone("X", 2*3600+30*60))

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// normTime is t as the suite compares it: UTC, at millisecond precision.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Truncate(time.Millisecond).UTC()
}

func normBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// same reports whether got and want are equal after norm, and says how they differ if not.
func same[T any](t *testing.T, what string, got, want T, norm func(T) T) {
	t.Helper()
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

// wantErr fails the test unless errors.Is(err, target).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

// wantEmpty fails the test unless a read of an empty store, list and err, found nothing.
func wantEmpty[T any](t *testing.T, what string, list []T, err error) {
	t.Helper()
	must(t, what, err)
	if len(list) != 0 {
		t.Errorf("%s on empty store: %d entries, want none", what, len(list))
	}
}

// must fails the test now on err.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// chainHash is the suite's stand-in for package audit's hash: it only has to differ per entry.
func chainHash(prev string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// testRevision checks that Revision grows with each change a cache depends on, and only moves
// forward.
func testRevision(t *testing.T, open func(t *testing.T) store.Store) {
	s, ctx := open(t), t.Context()
	last, err := s.Revision(ctx)
	must(t, "Revision", err)
	grows := func(what string, err error) {
		t.Helper()
		must(t, what, err)
		rev, err := s.Revision(ctx)
		must(t, "Revision", err)
		if rev <= last {
			t.Errorf("Revision after %s: %d, want more than %d", what, rev, last)
		}
		last = rev
	}
	still := func(what string, err error) {
		t.Helper()
		must(t, what, err)
		rev, err := s.Revision(ctx)
		must(t, "Revision", err)
		if rev < last {
			t.Errorf("Revision after %s went back: %d < %d", what, rev, last)
		}
		last = rev
	}
	grows("PutMandate", s.PutMandate(ctx, store.Mandate{Permission: "fs.read", Autonomy: "act"}))
	grows("PutMandate replace", s.PutMandate(ctx, store.Mandate{Permission: "fs.read", Autonomy: "ask"}))
	grows("DeleteMandate", s.DeleteMandate(ctx, "fs.read"))
	c := store.Client{ID: "cl_1", Name: "one", KeyHash: "sha256:" + hexSum("k1"), Trust: "user"}
	grows("PutClient", s.PutClient(ctx, c))
	c.Disabled = true
	grows("UpdateClient", s.UpdateClient(ctx, c))
	grows("SetClientDisabled true", s.SetClientDisabled(ctx, "cl_1", true))
	grows("SetClientDisabled false", s.SetClientDisabled(ctx, "cl_1", false))
	grows("PutApp", s.PutApp(ctx, store.App{AppID: "org.example.a", Tier: 2, Reason: "unsigned", Manifest: []byte("{}"), Enabled: true}))
	grows("SetAppEnabled", s.SetAppEnabled(ctx, "org.example.a", false))
	grows("DeleteApp", s.DeleteApp(ctx, "org.example.a"))
	tok := store.Token{ID: "tk_1", ClientID: "cl_1", Hash: "sha256:" + hexSum("t1"), IssuedAt: at(0), ExpiresAt: at(3600e9), Body: []byte("{}")}
	still("PutToken", s.PutToken(ctx, tok))
	_, err = s.TakeUse(ctx, "tk_1", at(1e9))
	still("TakeUse", err)
	grows("Revoke", s.Revoke(ctx, "tk_1", at(2e9)))
	gone := store.Client{ID: "cl_2", Name: "two", KeyHash: "sha256:" + hexSum("k2"), Trust: "user"}
	grows("PutClient", s.PutClient(ctx, gone))
	grows("DeleteClient without tokens", s.DeleteClient(ctx, "cl_2", at(3e9)))
	still("PutToken", s.PutToken(ctx, store.Token{ID: "tk_2", ClientID: "cl_1", Hash: "sha256:" + hexSum("t2"), IssuedAt: at(0), ExpiresAt: at(3600e9), Body: []byte("{}")}))
	grows("DeleteClient", s.DeleteClient(ctx, "cl_1", at(4e9)))
}

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
