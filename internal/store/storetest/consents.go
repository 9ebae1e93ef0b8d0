package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

func normConsent(c store.Consent) store.Consent {
	c.Created = normTime(c.Created)
	c.Expires = normTime(c.Expires)
	c.Answered = normTime(c.Answered)
	c.Payload = normBytes(c.Payload)
	return c
}

func testConsents(t *testing.T, open func(t *testing.T) store.Store) {
	// consent is a pending request created at t0+created (seconds), open for ten minutes.
	consent := func(id string, created int) store.Consent {
		c := at(time.Duration(created) * time.Second)
		return store.Consent{ID: id, ClientID: "cl_1", Kind: "call",
			Payload: []byte(`{"ask":"` + id + `"}`), State: store.ConsentPending,
			Created: c, Expires: c.Add(10 * time.Minute)}
	}
	put := func(t *testing.T, s store.Store, c store.Consent) {
		t.Helper()
		must(t, "PutConsent "+c.ID, s.PutConsent(t.Context(), c))
	}
	get := func(t *testing.T, s store.Store, id string) store.Consent {
		t.Helper()
		c, err := s.GetConsent(t.Context(), id)
		must(t, "GetConsent "+id, err)
		return c
	}
	now := at(time.Minute)

	t.Run("NotFound", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		_, err := s.GetConsent(ctx, "cr_none")
		wantErr(t, "GetConsent", err, store.ErrNotFound)
		wantErr(t, "AnswerConsent", s.AnswerConsent(ctx, "cr_none", store.ConsentApproved, "me", "", now), store.ErrNotFound)
		list, err := s.ListConsents(ctx, "")
		wantEmpty(t, "ListConsents", list, err)
		ids, err := s.ExpireConsents(ctx, now)
		wantEmpty(t, "ExpireConsents", ids, err)
	})

	t.Run("RoundTrip", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		c := consent("cr_1", 0)
		put(t, s, c)
		same(t, "GetConsent", get(t, s, "cr_1"), c, normConsent)
		wantErr(t, "PutConsent taken ID", s.PutConsent(ctx, consent("cr_1", 5)), store.ErrExists)
		same(t, "after refused put", get(t, s, "cr_1"), c, normConsent)
		// Every field, an answered request included.
		d := store.Consent{ID: "cr_2", ClientID: "cl_2", Kind: "commit", Payload: []byte("{}"),
			State: store.ConsentApproved, Created: at(0), Expires: at(time.Hour), Answered: at(time.Second),
			AnsweredBy: "person", Wording: "go ahead"}
		put(t, s, d)
		same(t, "GetConsent answered", get(t, s, "cr_2"), d, normConsent)
	})

	t.Run("Answer", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		c := consent("cr_1", 0)
		put(t, s, c)
		must(t, "AnswerConsent", s.AnswerConsent(ctx, "cr_1", store.ConsentApproved, "person", "tidy downloads", now))
		want := c
		want.State, want.AnsweredBy, want.Wording, want.Answered = store.ConsentApproved, "person", "tidy downloads", now
		same(t, "answered", get(t, s, "cr_1"), want, normConsent)
		wantErr(t, "answering twice", s.AnswerConsent(ctx, "cr_1", store.ConsentDenied, "other", "", now), store.ErrConflict)
		same(t, "after the refused answer", get(t, s, "cr_1"), want, normConsent)

		put(t, s, consent("cr_2", 0))
		must(t, "cancel", s.AnswerConsent(ctx, "cr_2", store.ConsentCancelled, "agent", "", now))
		wantErr(t, "answering a cancelled request", s.AnswerConsent(ctx, "cr_2", store.ConsentApproved, "person", "", now), store.ErrConflict)
		if st := get(t, s, "cr_2").State; st != store.ConsentCancelled {
			t.Errorf("cancelled request is now %q", st)
		}

		e := consent("cr_3", 0)
		put(t, s, e)
		_, err := s.ExpireConsents(ctx, e.Expires)
		must(t, "ExpireConsents", err)
		wantErr(t, "answering an expired request", s.AnswerConsent(ctx, "cr_3", store.ConsentApproved, "person", "", e.Expires), store.ErrConflict)
		if st := get(t, s, "cr_3").State; st != store.ConsentExpired {
			t.Errorf("expired request is now %q", st)
		}

		// Unanswered at Expires means denied, swept or not.
		late := consent("cr_4", 0)
		put(t, s, late)
		wantErr(t, "answering at Expires", s.AnswerConsent(ctx, "cr_4", store.ConsentApproved, "person", "", late.Expires), store.ErrConflict)
		if st := get(t, s, "cr_4").State; st == store.ConsentApproved {
			t.Errorf("a request answered at its expiry was approved")
		}
	})

	t.Run("ConcurrentAnswer", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		put(t, s, consent("cr_1", 0))
		const n = 16
		var mu sync.Mutex
		var winners []string
		conflicts := 0
		var wg sync.WaitGroup
		for i := range n {
			by := fmt.Sprintf("answerer-%d", i)
			state := []string{store.ConsentApproved, store.ConsentDenied}[i%2]
			wg.Go(func() {
				err := s.AnswerConsent(ctx, "cr_1", state, by, "", now)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, by)
				case errors.Is(err, store.ErrConflict):
					conflicts++
				default:
					t.Errorf("AnswerConsent: %v", err)
				}
			})
		}
		wg.Wait()
		if len(winners) != 1 || conflicts != n-1 {
			t.Fatalf("%d successes (%v) and %d ErrConflict, want 1 and %d", len(winners), winners, conflicts, n-1)
		}
		if got := get(t, s, "cr_1").AnsweredBy; got != winners[0] {
			t.Errorf("stored answer is by %q, the winner was %q", got, winners[0])
		}
	})

	t.Run("Expire", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		a, b, c, d := consent("cr_a", 0), consent("cr_b", 10), consent("cr_c", 20), consent("cr_d", 0)
		for _, x := range []store.Consent{c, a, b, d} {
			put(t, s, x)
		}
		must(t, "AnswerConsent d", s.AnswerConsent(ctx, "cr_d", store.ConsentApproved, "person", "", now))
		// At b's expiry: a (earlier) and b (exactly now) expire; c does not; d is answered.
		ids, err := s.ExpireConsents(ctx, b.Expires)
		must(t, "ExpireConsents", err)
		same(t, "expired ids", ids, []string{"cr_a", "cr_b"}, ident)
		for id, want := range map[string]string{"cr_a": store.ConsentExpired, "cr_b": store.ConsentExpired,
			"cr_c": store.ConsentPending, "cr_d": store.ConsentApproved} {
			if st := get(t, s, id).State; st != want {
				t.Errorf("%s is %q, want %q", id, st, want)
			}
		}
		ids, err = s.ExpireConsents(ctx, b.Expires)
		must(t, "ExpireConsents again", err)
		if len(ids) != 0 {
			t.Errorf("ExpireConsents again: %v, want none", ids)
		}
		// c can still be answered before its expiry.
		must(t, "AnswerConsent c", s.AnswerConsent(ctx, "cr_c", store.ConsentDenied, "person", "", b.Expires))
	})

	t.Run("List", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		for i, id := range []string{"cr_z", "cr_y", "cr_x", "cr_w"} {
			put(t, s, consent(id, 10*(4-i))) // cr_w oldest
		}
		must(t, "AnswerConsent", s.AnswerConsent(ctx, "cr_y", store.ConsentDenied, "person", "", now))
		ids := func(cs []store.Consent) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.ID)
			}
			return out
		}
		all, err := s.ListConsents(ctx, "")
		must(t, "ListConsents all", err)
		same(t, "ListConsents all", ids(all), []string{"cr_w", "cr_x", "cr_y", "cr_z"}, ident)
		same(t, "listed consent", all[0], get(t, s, "cr_w"), normConsent)
		pending, err := s.ListConsents(ctx, store.ConsentPending)
		must(t, "ListConsents pending", err)
		same(t, "ListConsents pending", ids(pending), []string{"cr_w", "cr_x", "cr_z"}, ident)
		denied, err := s.ListConsents(ctx, store.ConsentDenied)
		must(t, "ListConsents denied", err)
		same(t, "ListConsents denied", ids(denied), []string{"cr_y"}, ident)
	})
}
