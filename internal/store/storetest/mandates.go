package storetest

import (
	"testing"

	"github.com/capgate/capgate/internal/store"
)

func normMandate(m store.Mandate) store.Mandate {
	m.AgreedAt = normTime(m.AgreedAt)
	m.Updated = normTime(m.Updated)
	return m
}

func testMandates(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("NotFound", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		_, err := s.GetMandate(ctx, "fs.read")
		wantErr(t, "GetMandate", err, store.ErrNotFound)
		wantErr(t, "DeleteMandate", s.DeleteMandate(ctx, "fs.read"), store.ErrNotFound)
		list, err := s.ListMandates(ctx)
		wantEmpty(t, "ListMandates", list, err)
	})

	t.Run("CRUD", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		m := store.Mandate{Permission: "fs.*", Autonomy: "act_if_agreed", AgreedID: "cr_1",
			Wording: "you may tidy my downloads", AgreedAt: at(0), Updated: at(1e6)}
		must(t, "PutMandate", s.PutMandate(ctx, m))
		got, err := s.GetMandate(ctx, "fs.*")
		must(t, "GetMandate", err)
		same(t, "GetMandate", got, m, normMandate)

		m2 := store.Mandate{Permission: "fs.*", Autonomy: "ask", Updated: at(2e9)}
		must(t, "PutMandate replace", s.PutMandate(ctx, m2))
		got, err = s.GetMandate(ctx, "fs.*")
		must(t, "GetMandate", err)
		same(t, "GetMandate after replace", got, m2, normMandate)

		for _, p := range []string{"net.fetch", "calendar.read", "fs.read"} {
			must(t, "PutMandate "+p, s.PutMandate(ctx, store.Mandate{Permission: p, Autonomy: "act"}))
		}
		list, err := s.ListMandates(ctx)
		must(t, "ListMandates", err)
		var perms []string
		for _, m := range list {
			perms = append(perms, m.Permission)
		}
		same(t, "ListMandates order", perms, []string{"calendar.read", "fs.*", "fs.read", "net.fetch"}, ident)

		must(t, "DeleteMandate", s.DeleteMandate(ctx, "fs.*"))
		_, err = s.GetMandate(ctx, "fs.*")
		wantErr(t, "GetMandate after delete", err, store.ErrNotFound)
		list, err = s.ListMandates(ctx)
		must(t, "ListMandates", err)
		if len(list) != 3 {
			t.Errorf("ListMandates after delete: %d, want 3", len(list))
		}
	})
}
