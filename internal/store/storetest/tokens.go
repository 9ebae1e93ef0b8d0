package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

func normToken(t store.Token) store.Token {
	t.IssuedAt = normTime(t.IssuedAt)
	t.ExpiresAt = normTime(t.ExpiresAt)
	t.RevokedAt = normTime(t.RevokedAt)
	t.Body = normBytes(t.Body)
	return t
}

// useCount tallies the results of TakeUse calls made at once: the uses taken and the
// ErrExhausted met. Any other error fails the test.
type useCount struct {
	mu            sync.Mutex
	ok, exhausted int
}

// add counts the result err of a TakeUse of id.
func (n *useCount) add(t *testing.T, id string, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case err == nil:
		n.ok++
	case errors.Is(err, store.ErrExhausted):
		n.exhausted++
	default:
		t.Errorf("TakeUse %s: %v", id, err)
	}
}

func testTokens(t *testing.T, open func(t *testing.T) store.Store) {
	// token is a token issued at t0+issued (seconds), valid for an hour.
	token := func(id, parent string, maxUses int64, issued int) store.Token {
		return store.Token{
			ID: id, ClientID: "cl_1", ParentID: parent, Hash: "sha256:" + id,
			IssuedAt: at(time.Duration(issued) * time.Second), ExpiresAt: at(time.Hour),
			MaxUses: maxUses, AuditTag: "tag-" + id, Body: []byte(`{"token_id":"` + id + `"}`),
		}
	}
	now := at(time.Minute)
	put := func(t *testing.T, s store.Store, tok store.Token) {
		t.Helper()
		must(t, "PutToken "+tok.ID, s.PutToken(t.Context(), tok))
	}
	get := func(t *testing.T, s store.Store, id string) store.Token {
		t.Helper()
		tok, err := s.GetToken(t.Context(), id)
		must(t, "GetToken "+id, err)
		return tok
	}

	t.Run("NotFound", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		_, err := s.GetToken(ctx, "tk_none")
		wantErr(t, "GetToken", err, store.ErrNotFound)
		_, err = s.TakeUse(ctx, "tk_none", now)
		wantErr(t, "TakeUse", err, store.ErrNotFound)
		wantErr(t, "Revoke", s.Revoke(ctx, "tk_none", now), store.ErrNotFound)
		wantErr(t, "PutToken with a missing parent", s.PutToken(ctx, token("tk_c", "tk_none", 0, 0)), store.ErrNotFound)
		_, err = s.GetToken(ctx, "tk_c")
		wantErr(t, "refused token", err, store.ErrNotFound)
		list, err := s.ListTokens(ctx, false, now)
		wantEmpty(t, "ListTokens", list, err)
	})

	t.Run("RoundTrip", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		root := token("tk_root", "", 7, 0)
		put(t, s, root)
		same(t, "GetToken root", get(t, s, "tk_root"), root, normToken)
		child := token("tk_child", "tk_root", 2, 1)
		child.Uses = 1
		put(t, s, child)
		same(t, "GetToken child", get(t, s, "tk_child"), child, normToken)
		wantErr(t, "PutToken taken ID", s.PutToken(ctx, token("tk_root", "", 1, 5)), store.ErrExists)
		same(t, "root after refused put", get(t, s, "tk_root"), root, normToken)
	})

	t.Run("TakeUse", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		put(t, s, token("tk_3", "", 3, 0))
		for want := int64(1); want <= 3; want++ {
			n, err := s.TakeUse(ctx, "tk_3", now)
			must(t, "TakeUse", err)
			if n != want {
				t.Errorf("TakeUse returned %d, want %d", n, want)
			}
		}
		_, err := s.TakeUse(ctx, "tk_3", now)
		wantErr(t, "TakeUse past MaxUses", err, store.ErrExhausted)
		if got := get(t, s, "tk_3").Uses; got != 3 {
			t.Errorf("Uses after exhaustion = %d, want 3", got)
		}

		put(t, s, token("tk_unlimited", "", 0, 0))
		for i := 1; i <= 50; i++ {
			n, err := s.TakeUse(ctx, "tk_unlimited", now)
			must(t, "TakeUse unlimited", err)
			if n != int64(i) {
				t.Fatalf("TakeUse unlimited returned %d, want %d", n, i)
			}
		}
		if got := get(t, s, "tk_unlimited").Uses; got != 50 {
			t.Errorf("Uses = %d, want 50", got)
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		tok := token("tk_e", "", 0, 0)
		put(t, s, tok)
		_, err := s.TakeUse(ctx, "tk_e", tok.ExpiresAt.Add(-time.Millisecond))
		must(t, "TakeUse just before expiry", err)
		_, err = s.TakeUse(ctx, "tk_e", tok.ExpiresAt)
		wantErr(t, "TakeUse at expiry", err, store.ErrExpired)
		_, err = s.TakeUse(ctx, "tk_e", tok.ExpiresAt.Add(time.Hour))
		wantErr(t, "TakeUse after expiry", err, store.ErrExpired)
		if got := get(t, s, "tk_e").Uses; got != 1 {
			t.Errorf("Uses = %d, want 1: a refused use was counted", got)
		}

		// A child outliving its parent expires with the parent.
		parent := token("tk_p", "", 0, 0)
		put(t, s, parent)
		child := token("tk_c", "tk_p", 0, 1)
		child.ExpiresAt = parent.ExpiresAt.Add(time.Hour)
		put(t, s, child)
		_, err = s.TakeUse(ctx, "tk_c", parent.ExpiresAt.Add(-time.Millisecond))
		must(t, "TakeUse child before the parent's expiry", err)
		_, err = s.TakeUse(ctx, "tk_c", parent.ExpiresAt)
		wantErr(t, "TakeUse child at the parent's expiry", err, store.ErrExpired)
		grandchild := token("tk_g", "tk_c", 0, 2)
		grandchild.ExpiresAt = child.ExpiresAt
		put(t, s, grandchild)
		_, err = s.TakeUse(ctx, "tk_g", parent.ExpiresAt.Add(time.Minute))
		wantErr(t, "TakeUse grandchild after the root's expiry", err, store.ErrExpired)
	})

	t.Run("CheckToken", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		wantErr(t, "CheckToken unknown", s.CheckToken(ctx, "tk_none", now), store.ErrNotFound)
		tok := token("tk_k", "", 1, 0)
		put(t, s, tok)
		must(t, "CheckToken live", s.CheckToken(ctx, "tk_k", now))
		must(t, "CheckToken just before expiry", s.CheckToken(ctx, "tk_k", tok.ExpiresAt.Add(-time.Nanosecond)))
		wantErr(t, "CheckToken at expiry", s.CheckToken(ctx, "tk_k", tok.ExpiresAt), store.ErrExpired)
		_, err := s.TakeUse(ctx, "tk_k", now)
		must(t, "TakeUse", err)
		must(t, "CheckToken of a token with no uses left (uses are not its business)", s.CheckToken(ctx, "tk_k", now))
		if got := get(t, s, "tk_k").Uses; got != 1 {
			t.Errorf("Uses = %d after CheckToken, want 1: a check took a use", got)
		}
		put(t, s, token("tk_kc", "tk_k", 0, 1))
		must(t, "Revoke", s.Revoke(ctx, "tk_k", now))
		wantErr(t, "CheckToken revoked", s.CheckToken(ctx, "tk_k", now), store.ErrRevoked)
		wantErr(t, "CheckToken of a revoked token's child", s.CheckToken(ctx, "tk_kc", now), store.ErrRevoked)
		wantErr(t, "CheckToken revoked and expired", s.CheckToken(ctx, "tk_k", tok.ExpiresAt.Add(time.Hour)), store.ErrRevoked)
	})

	t.Run("Revoke", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		//   root ─┬─ a ─── a1
		//         └─ b ─── b1
		// other
		put(t, s, token("root", "", 0, 0))
		put(t, s, token("a", "root", 0, 1))
		put(t, s, token("a1", "a", 0, 2))
		put(t, s, token("b", "root", 0, 3))
		put(t, s, token("b1", "b", 0, 4))
		put(t, s, token("other", "", 0, 5))

		revokedAt := at(30 * time.Second)
		must(t, "Revoke b", s.Revoke(ctx, "b", revokedAt))
		for _, id := range []string{"b", "b1"} {
			_, err := s.TakeUse(ctx, id, now)
			wantErr(t, "TakeUse "+id+" after revoking b", err, store.ErrRevoked)
			tok := get(t, s, id)
			if !tok.Revoked || !normTime(tok.RevokedAt).Equal(normTime(revokedAt)) {
				t.Errorf("%s: Revoked %v at %v, want true at %v", id, tok.Revoked, tok.RevokedAt, revokedAt)
			}
		}
		for _, id := range []string{"root", "a", "a1", "other"} {
			if _, err := s.TakeUse(ctx, id, now); err != nil {
				t.Errorf("TakeUse %s after revoking b: %v", id, err)
			}
			if get(t, s, id).Revoked {
				t.Errorf("%s revoked by revoking b", id)
			}
		}

		must(t, "Revoke root", s.Revoke(ctx, "root", at(40*time.Second)))
		for _, id := range []string{"root", "a", "a1", "b", "b1"} {
			_, err := s.TakeUse(ctx, id, now)
			wantErr(t, "TakeUse "+id+" after revoking root", err, store.ErrRevoked)
			if !get(t, s, id).Revoked {
				t.Errorf("%s not revoked by revoking root", id)
			}
		}
		if _, err := s.TakeUse(ctx, "other", now); err != nil {
			t.Errorf("TakeUse other after revoking root: %v", err)
		}
		// Revoking again is not an error.
		must(t, "Revoke root again", s.Revoke(ctx, "root", at(50*time.Second)))

		// A token derived from a revoked one cannot be used.
		put(t, s, token("late", "a1", 0, 6))
		_, err := s.TakeUse(ctx, "late", now)
		wantErr(t, "TakeUse of a token derived from a revoked one", err, store.ErrRevoked)

		// Revocation wins over exhaustion and expiry alike: a revoked token never works.
		put(t, s, token("x", "", 1, 7))
		_, err = s.TakeUse(ctx, "x", now)
		must(t, "TakeUse x", err)
		must(t, "Revoke x", s.Revoke(ctx, "x", now))
		_, err = s.TakeUse(ctx, "x", now)
		if !errors.Is(err, store.ErrRevoked) && !errors.Is(err, store.ErrExhausted) {
			t.Errorf("TakeUse of a revoked, exhausted token: %v", err)
		}
	})

	t.Run("DerivedCountsAgainstAncestors", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		put(t, s, token("p", "", 3, 0))
		put(t, s, token("c1", "p", 5, 1))
		put(t, s, token("c2", "p", 5, 2))
		put(t, s, token("g", "c1", 0, 3))
		ok := 0
		for i := 0; i < 5; i++ {
			for _, id := range []string{"c1", "c2", "g"} {
				_, err := s.TakeUse(ctx, id, now)
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, store.ErrExhausted):
					t.Errorf("TakeUse %s: %v, want nil or ErrExhausted", id, err)
				}
			}
		}
		if ok != 3 {
			t.Errorf("%d uses across the children, want 3 (the parent's MaxUses)", ok)
		}
		p, c1, c2, g := get(t, s, "p"), get(t, s, "c1"), get(t, s, "c2"), get(t, s, "g")
		if p.Uses != 3 {
			t.Errorf("parent Uses = %d, want 3", p.Uses)
		}
		// c1 counts its own uses and g's; c2 its own.
		if c1.Uses+c2.Uses != 3 || c1.Uses < g.Uses {
			t.Errorf("children Uses c1=%d c2=%d g=%d: want c1+c2 = 3 and c1 >= g", c1.Uses, c2.Uses, g.Uses)
		}
		_, err := s.TakeUse(ctx, "p", now)
		wantErr(t, "TakeUse parent", err, store.ErrExhausted)
	})

	t.Run("ConcurrentTakeUse", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		put(t, s, token("tk_c", "", 10, 0))
		const n = 64
		var mu sync.Mutex
		var got []int64
		exhausted := 0
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				k, err := s.TakeUse(ctx, "tk_c", now)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					got = append(got, k)
				case errors.Is(err, store.ErrExhausted):
					exhausted++
				default:
					t.Errorf("TakeUse: %v", err)
				}
			})
		}
		wg.Wait()
		slices.Sort(got)
		if want := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}; !slices.Equal(got, want) {
			t.Errorf("successful TakeUse results %v, want %v", got, want)
		}
		if exhausted != n-10 {
			t.Errorf("%d ErrExhausted, want %d", exhausted, n-10)
		}
		if u := get(t, s, "tk_c").Uses; u != 10 {
			t.Errorf("Uses = %d, want 10", u)
		}
	})

	t.Run("ConcurrentDerived", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		put(t, s, token("p", "", 3, 0))
		put(t, s, token("c1", "p", 5, 1))
		put(t, s, token("c2", "p", 5, 2))
		var n useCount
		var wg sync.WaitGroup
		for i := range 32 {
			id := []string{"c1", "c2"}[i%2]
			wg.Go(func() {
				_, err := s.TakeUse(ctx, id, now)
				n.add(t, id, err)
			})
		}
		wg.Wait()
		if n.ok != 3 || n.exhausted != 29 {
			t.Errorf("%d successes and %d ErrExhausted, want 3 and 29", n.ok, n.exhausted)
		}
	})

	t.Run("List", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		// Put out of IssuedAt order.
		put(t, s, token("t5_live", "", 0, 5))
		put(t, s, token("t1_revoked", "", 0, 1))
		put(t, s, token("t3_exhausted", "", 1, 3))
		put(t, s, token("t2_live", "", 3, 2))
		exp := token("t4_expired", "", 0, 4)
		exp.ExpiresAt = now
		put(t, s, exp)
		put(t, s, token("t6_child_of_revoked", "t1_revoked", 0, 6))
		put(t, s, token("t7_child_of_exhausted", "t3_exhausted", 0, 7))
		put(t, s, token("t8_child_of_expired", "t4_expired", 0, 8))
		put(t, s, token("t9_child_of_live", "t2_live", 0, 9))
		must(t, "Revoke", s.Revoke(ctx, "t1_revoked", now))
		_, err := s.TakeUse(ctx, "t3_exhausted", now)
		must(t, "TakeUse", err)
		_, err = s.TakeUse(ctx, "t2_live", now)
		must(t, "TakeUse", err)

		ids := func(ts []store.Token) []string {
			var out []string
			for _, t := range ts {
				out = append(out, t.ID)
			}
			return out
		}
		all, err := s.ListTokens(ctx, false, now)
		must(t, "ListTokens all", err)
		same(t, "ListTokens all", ids(all), []string{"t1_revoked", "t2_live", "t3_exhausted", "t4_expired",
			"t5_live", "t6_child_of_revoked", "t7_child_of_exhausted", "t8_child_of_expired", "t9_child_of_live"}, ident)
		same(t, "listed token", all[1], get(t, s, "t2_live"), normToken)

		// Live: what TakeUse would accept at now, ancestors included.
		live, err := s.ListTokens(ctx, true, now)
		must(t, "ListTokens live", err)
		same(t, "ListTokens live", ids(live), []string{"t2_live", "t5_live", "t9_child_of_live"}, ident)
		for _, tok := range live {
			if _, err := s.TakeUse(ctx, tok.ID, now); err != nil {
				t.Errorf("TakeUse of live token %s: %v", tok.ID, err)
			}
		}
		// t2 now has 3 of 3 uses (its own two and its child's): it and its child are no longer live.
		live, err = s.ListTokens(ctx, true, now)
		must(t, "ListTokens live", err)
		same(t, "ListTokens live after uses", ids(live), []string{"t5_live"}, ident)
	})
}
