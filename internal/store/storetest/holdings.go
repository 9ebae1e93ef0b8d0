package storetest

import (
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store"
)

func normHolding(h store.Holding) store.Holding {
	h.ExpiresAt = normTime(h.ExpiresAt)
	h.Created = normTime(h.Created)
	return h
}

func handles(list []store.Holding) []string {
	var out []string
	for _, h := range list {
		out = append(out, h.Handle)
	}
	return out
}

func testHoldings(t *testing.T, open func(t *testing.T) store.Store) {
	holding := func(handle, client string, created, expires time.Duration) store.Holding {
		return store.Holding{Handle: handle, ClientID: client, TokenID: "tk_" + handle, Wire: "cgt1.wire-of-" + handle,
			Grants: []string{"app.calc.compute", "fs.*"}, MaxUses: 3, Constrained: true, Created: at(created), ExpiresAt: at(expires)}
	}

	t.Run("NotFound", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		_, err := s.GetHolding(ctx, "h1")
		wantErr(t, "GetHolding", err, store.ErrNotFound)
		wantErr(t, "DeleteHolding", s.DeleteHolding(ctx, "h1"), store.ErrNotFound)
		list, err := s.ListHoldings(ctx, "cl_a", at(0))
		wantEmpty(t, "ListHoldings", list, err)
	})

	t.Run("CRUD", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		h := holding("h1", "cl_a", 0, time.Hour)
		must(t, "PutHolding", s.PutHolding(ctx, h, 10))
		got, err := s.GetHolding(ctx, "h1")
		must(t, "GetHolding", err)
		same(t, "GetHolding", got, h, normHolding)
		wantErr(t, "PutHolding taken handle", s.PutHolding(ctx, holding("h1", "cl_b", 1, time.Hour), 10), store.ErrExists)
		got, _ = s.GetHolding(ctx, "h1")
		if got.ClientID != "cl_a" {
			t.Errorf("a refused PutHolding changed the holding's client to %s", got.ClientID)
		}
		must(t, "PutHolding h2", s.PutHolding(ctx, holding("h2", "cl_b", 2, time.Hour), 10))
		list, err := s.ListHoldings(ctx, "cl_a", at(time.Minute))
		must(t, "ListHoldings", err)
		same(t, "ListHoldings cl_a", handles(list), []string{"h1"}, ident)
		must(t, "DeleteHolding", s.DeleteHolding(ctx, "h1"))
		_, err = s.GetHolding(ctx, "h1")
		wantErr(t, "GetHolding after delete", err, store.ErrNotFound)
		list, err = s.ListHoldings(ctx, "cl_b", at(time.Minute))
		must(t, "ListHoldings", err)
		same(t, "ListHoldings cl_b after deleting cl_a's", handles(list), []string{"h2"}, ident)
	})

	t.Run("Expiry", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		must(t, "PutHolding", s.PutHolding(ctx, holding("h1", "cl_a", 0, time.Minute), 10))
		must(t, "PutHolding", s.PutHolding(ctx, holding("h2", "cl_a", 1, time.Hour), 10))
		list, err := s.ListHoldings(ctx, "cl_a", at(time.Minute))
		must(t, "ListHoldings", err)
		same(t, "ListHoldings at the first's expiry", handles(list), []string{"h2"}, ident)
		list, err = s.ListHoldings(ctx, "cl_a", at(time.Minute-time.Millisecond))
		must(t, "ListHoldings", err)
		same(t, "ListHoldings before it", handles(list), []string{"h1", "h2"}, ident)
		// A later put removes the client's expired holdings, and only that client's.
		must(t, "PutHolding other", s.PutHolding(ctx, holding("o1", "cl_b", 0, time.Minute), 10))
		must(t, "PutHolding", s.PutHolding(ctx, holding("h3", "cl_a", 2*time.Minute, time.Hour), 10))
		_, err = s.GetHolding(ctx, "h1")
		wantErr(t, "GetHolding of an expired holding after a put", err, store.ErrNotFound)
		if _, err := s.GetHolding(ctx, "o1"); err != nil {
			t.Errorf("another client's expired holding went with this client's put: %v", err)
		}
		if _, err := s.ListHoldings(ctx, "cl_a", time.Time{}); err == nil {
			t.Errorf("ListHoldings at the zero time: no error")
		}
	})

	t.Run("Keep", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		for i, h := range []string{"h1", "h2", "h3", "h4"} {
			must(t, "PutHolding "+h, s.PutHolding(ctx, holding(h, "cl_a", time.Duration(i)*time.Second, time.Hour), 2))
		}
		must(t, "PutHolding other", s.PutHolding(ctx, holding("o1", "cl_b", 0, time.Hour), 2))
		list, err := s.ListHoldings(ctx, "cl_a", at(time.Minute))
		must(t, "ListHoldings", err)
		same(t, "ListHoldings keeps the newest 2", handles(list), []string{"h3", "h4"}, ident)
		list, err = s.ListHoldings(ctx, "cl_b", at(time.Minute))
		must(t, "ListHoldings", err)
		same(t, "another client's", handles(list), []string{"o1"}, ident)
	})

	t.Run("Invalid", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		for name, h := range map[string]store.Holding{
			"no handle":    {ClientID: "cl_a", TokenID: "tk", Wire: "w", Grants: []string{"a.b"}, ExpiresAt: at(0)},
			"no client":    {Handle: "h", TokenID: "tk", Wire: "w", Grants: []string{"a.b"}, ExpiresAt: at(0)},
			"no wire":      {Handle: "h", ClientID: "cl_a", TokenID: "tk", Grants: []string{"a.b"}, ExpiresAt: at(0)},
			"no grants":    {Handle: "h", ClientID: "cl_a", TokenID: "tk", Wire: "w", ExpiresAt: at(0)},
			"no expiry":    {Handle: "h", ClientID: "cl_a", TokenID: "tk", Wire: "w", Grants: []string{"a.b"}},
			"negative use": {Handle: "h", ClientID: "cl_a", TokenID: "tk", Wire: "w", Grants: []string{"a.b"}, ExpiresAt: at(0), MaxUses: -1},
		} {
			if err := s.PutHolding(ctx, h, 10); err == nil {
				t.Errorf("PutHolding with %s: no error", name)
			}
		}
		list, err := s.ListHoldings(ctx, "cl_a", at(-time.Hour))
		wantEmpty(t, "ListHoldings after refused puts", list, err)
	})
}
