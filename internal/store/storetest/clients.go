package storetest

import (
	"testing"

	"github.com/capgate/capgate/internal/store"
)

func normClient(c store.Client) store.Client {
	c.Created = normTime(c.Created)
	return c
}

func testClients(t *testing.T, open func(t *testing.T) store.Store) {
	uid := func(n int) *int { return &n }
	client := func(id, name string) store.Client {
		return store.Client{ID: id, Name: name, KeyHash: "sha256:" + id, Trust: "user", Created: at(0)}
	}

	t.Run("NotFound", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		_, err := s.GetClient(ctx, "cl_none")
		wantErr(t, "GetClient", err, store.ErrNotFound)
		_, err = s.ClientByKeyHash(ctx, "sha256:none")
		wantErr(t, "ClientByKeyHash", err, store.ErrNotFound)
		_, err = s.ClientByName(ctx, "none")
		wantErr(t, "ClientByName", err, store.ErrNotFound)
		_, err = s.ClientByUID(ctx, 1000)
		wantErr(t, "ClientByUID", err, store.ErrNotFound)
		wantErr(t, "UpdateClient", s.UpdateClient(ctx, client("cl_none", "none")), store.ErrNotFound)
		list, err := s.ListClients(ctx)
		must(t, "ListClients", err)
		if len(list) != 0 {
			t.Errorf("ListClients on empty store: %d clients", len(list))
		}
	})

	t.Run("RoundTrip", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		c := store.Client{ID: "cl_1", Name: "claude", KeyHash: "sha256:abcd", Trust: "privileged",
			NeverAsk: true, UnixUID: uid(1000), Created: at(0), Disabled: true}
		must(t, "PutClient", s.PutClient(ctx, c))
		for name, get := range map[string]func() (store.Client, error){
			"GetClient":       func() (store.Client, error) { return s.GetClient(ctx, "cl_1") },
			"ClientByKeyHash": func() (store.Client, error) { return s.ClientByKeyHash(ctx, "sha256:abcd") },
			"ClientByName":    func() (store.Client, error) { return s.ClientByName(ctx, "claude") },
			"ClientByUID":     func() (store.Client, error) { return s.ClientByUID(ctx, 1000) },
		} {
			got, err := get()
			must(t, name, err)
			same(t, name, got, c, normClient)
		}
		// UID 0 (root) is a uid like any other, and no UID is not uid 0.
		nouid := store.Client{ID: "cl_2", Name: "public", KeyHash: "sha256:ef", Trust: "public"}
		must(t, "PutClient no uid", s.PutClient(ctx, nouid))
		got, err := s.GetClient(ctx, "cl_2")
		must(t, "GetClient no uid", err)
		same(t, "GetClient no uid", got, nouid, normClient)
		_, err = s.ClientByUID(ctx, 0)
		wantErr(t, "ClientByUID 0 with no uid-0 client", err, store.ErrNotFound)
		root := store.Client{ID: "cl_3", Name: "root", KeyHash: "sha256:01", Trust: "user", UnixUID: uid(0)}
		must(t, "PutClient uid 0", s.PutClient(ctx, root))
		got, err = s.ClientByUID(ctx, 0)
		must(t, "ClientByUID 0", err)
		same(t, "ClientByUID 0", got, root, normClient)
	})

	t.Run("Taken", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		a := client("cl_a", "alpha")
		a.UnixUID = uid(501)
		must(t, "PutClient", s.PutClient(ctx, a))
		dupID := client("cl_a", "other")
		wantErr(t, "PutClient taken ID", s.PutClient(ctx, dupID), store.ErrExists)
		dupName := client("cl_b", "alpha")
		wantErr(t, "PutClient taken Name", s.PutClient(ctx, dupName), store.ErrExists)
		dupKey := client("cl_c", "gamma")
		dupKey.KeyHash = a.KeyHash
		wantErr(t, "PutClient taken KeyHash", s.PutClient(ctx, dupKey), store.ErrExists)
		dupUID := client("cl_d", "delta")
		dupUID.UnixUID = uid(501)
		wantErr(t, "PutClient taken UnixUID", s.PutClient(ctx, dupUID), store.ErrExists)
		got, err := s.GetClient(ctx, "cl_a")
		must(t, "GetClient", err)
		same(t, "client after refused puts", got, a, normClient)
		for _, id := range []string{"cl_b", "cl_c", "cl_d"} {
			_, err := s.GetClient(ctx, id)
			wantErr(t, "refused client "+id, err, store.ErrNotFound)
		}
	})

	t.Run("Update", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		a, b := client("cl_a", "alpha"), client("cl_b", "beta")
		must(t, "PutClient a", s.PutClient(ctx, a))
		must(t, "PutClient b", s.PutClient(ctx, b))
		a2 := store.Client{ID: "cl_a", Name: "alpha2", KeyHash: "sha256:new", Trust: "public",
			NeverAsk: true, UnixUID: uid(42), Created: at(0), Disabled: true}
		must(t, "UpdateClient", s.UpdateClient(ctx, a2))
		got, err := s.GetClient(ctx, "cl_a")
		must(t, "GetClient", err)
		same(t, "after update", got, a2, normClient)
		_, err = s.ClientByName(ctx, "alpha")
		wantErr(t, "old name", err, store.ErrNotFound)
		_, err = s.ClientByKeyHash(ctx, a.KeyHash)
		wantErr(t, "old key hash", err, store.ErrNotFound)
		got, err = s.ClientByUID(ctx, 42)
		must(t, "ClientByUID", err)
		same(t, "ClientByUID after update", got, a2, normClient)

		b2 := b
		b2.Name = "alpha2"
		wantErr(t, "UpdateClient to a taken Name", s.UpdateClient(ctx, b2), store.ErrExists)
		b2 = b
		b2.KeyHash = a2.KeyHash
		wantErr(t, "UpdateClient to a taken KeyHash", s.UpdateClient(ctx, b2), store.ErrExists)
		b2 = b
		b2.UnixUID = uid(42)
		wantErr(t, "UpdateClient to a taken UnixUID", s.UpdateClient(ctx, b2), store.ErrExists)
		got, err = s.GetClient(ctx, "cl_b")
		must(t, "GetClient b", err)
		same(t, "b after refused updates", got, b, normClient)

		// Clearing the uid.
		a2.UnixUID = nil
		must(t, "UpdateClient clear uid", s.UpdateClient(ctx, a2))
		_, err = s.ClientByUID(ctx, 42)
		wantErr(t, "ClientByUID after clearing", err, store.ErrNotFound)
	})

	t.Run("ListOrder", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		for i, name := range []string{"mallory", "alice", "bob", "Zed"} {
			must(t, "PutClient", s.PutClient(ctx, client("cl_"+string(rune('0'+i)), name)))
		}
		list, err := s.ListClients(ctx)
		must(t, "ListClients", err)
		var names []string
		for _, c := range list {
			names = append(names, c.Name)
		}
		// Byte order: upper case before lower case.
		same(t, "ListClients order", names, []string{"Zed", "alice", "bob", "mallory"}, ident)
	})
}
