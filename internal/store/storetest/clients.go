package storetest

import (
	"testing"
	"time"

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
		wantErr(t, "SetClientDisabled", s.SetClientDisabled(ctx, "cl_none", true), store.ErrNotFound)
		wantErr(t, "DeleteClient", s.DeleteClient(ctx, "cl_none", at(0)), store.ErrNotFound)
		list, err := s.ListClients(ctx)
		wantEmpty(t, "ListClients", list, err)
	})

	t.Run("RoundTrip", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		c := store.Client{ID: "cl_1", Name: "claude", KeyHash: "sha256:abcd", Trust: "privileged",
			NeverAsk: true, UnixUID: uid(1000), Created: at(0), Disabled: true, RequireToken: true, Assistant: "private"}
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
			NeverAsk: true, UnixUID: uid(42), Created: at(0), Disabled: true, RequireToken: true, Assistant: "keeps"}
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

	t.Run("Disable", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		a, b := client("cl_a", "alpha"), client("cl_b", "beta")
		a.RequireToken = true
		must(t, "PutClient a", s.PutClient(ctx, a))
		must(t, "PutClient b", s.PutClient(ctx, b))
		for _, disabled := range []bool{true, true, false, false, true} {
			must(t, "SetClientDisabled", s.SetClientDisabled(ctx, "cl_a", disabled))
			want := a
			want.Disabled = disabled
			got, err := s.GetClient(ctx, "cl_a")
			must(t, "GetClient", err)
			same(t, "after SetClientDisabled", got, want, normClient)
		}
		got, err := s.GetClient(ctx, "cl_b")
		must(t, "GetClient b", err)
		same(t, "the other client", got, b, normClient)
	})

	// A disabled client's tokens are refused at use, neither revoked nor used, and work again
	// once it is enabled; the checks come in the order revoked, disabled, expired.
	t.Run("DisabledClientTokens", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		must(t, "PutClient", s.PutClient(ctx, client("cl_a", "alpha")))
		must(t, "PutClient", s.PutClient(ctx, client("cl_b", "beta")))
		tok := func(id, clientID, parent string, maxUses int64) store.Token {
			return store.Token{ID: id, ClientID: clientID, ParentID: parent, Hash: "sha256:" + id, IssuedAt: at(0),
				ExpiresAt: at(time.Hour), MaxUses: maxUses, Body: []byte("{}")}
		}
		for _, tk := range []store.Token{tok("tk_root", "cl_a", "", 0), tok("tk_child", "cl_a", "tk_root", 5),
			tok("tk_lim", "cl_a", "", 5), tok("tk_b", "cl_b", "", 5), tok("tk_gone", "cl_nobody", "", 5)} {
			must(t, "PutToken "+tk.ID, s.PutToken(ctx, tk))
		}
		now := at(time.Minute)
		must(t, "SetClientDisabled", s.SetClientDisabled(ctx, "cl_a", true))
		wantErr(t, "CheckToken of a disabled client's token", s.CheckToken(ctx, "tk_root", now), store.ErrClientDisabled)
		for _, id := range []string{"tk_root", "tk_child", "tk_lim"} {
			_, err := s.TakeUse(ctx, id, now)
			wantErr(t, "TakeUse of a disabled client's "+id, err, store.ErrClientDisabled)
			if got, err := s.GetToken(ctx, id); err != nil || got.Uses != 0 || got.Revoked {
				t.Errorf("%s after a refused use: %+v %v", id, got, err)
			}
		}
		wantErr(t, "CheckToken at expiry, disabled", s.CheckToken(ctx, "tk_root", at(2*time.Hour)), store.ErrClientDisabled)
		_, err := s.TakeUse(ctx, "tk_lim", at(2*time.Hour))
		wantErr(t, "TakeUse at expiry, disabled", err, store.ErrClientDisabled)
		_, err = s.TakeUse(ctx, "tk_b", now)
		must(t, "TakeUse of another client's token", err)
		_, err = s.TakeUse(ctx, "tk_gone", now)
		must(t, "TakeUse of a token whose client is not in the store", err)
		must(t, "CheckToken of a token whose client is not in the store", s.CheckToken(ctx, "tk_gone", now))

		must(t, "SetClientDisabled false", s.SetClientDisabled(ctx, "cl_a", false))
		must(t, "CheckToken once enabled", s.CheckToken(ctx, "tk_root", now))
		for _, id := range []string{"tk_child", "tk_lim"} {
			n, err := s.TakeUse(ctx, id, now)
			must(t, "TakeUse once enabled "+id, err)
			if n != 1 {
				t.Errorf("TakeUse %s once enabled: %d uses, want 1", id, n)
			}
		}
		must(t, "Revoke", s.Revoke(ctx, "tk_lim", now))
		must(t, "SetClientDisabled", s.SetClientDisabled(ctx, "cl_a", true))
		_, err = s.TakeUse(ctx, "tk_lim", now)
		wantErr(t, "TakeUse revoked and disabled", err, store.ErrRevoked)
		wantErr(t, "CheckToken revoked and disabled", s.CheckToken(ctx, "tk_lim", now), store.ErrRevoked)
	})

	// Deleting a client removes it by every key and revokes its tokens and those derived from
	// them, at the time given, and nothing else; its name, key and uid are free again.
	t.Run("Delete", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		a, b := client("cl_a", "alpha"), client("cl_b", "beta")
		a.UnixUID = uid(501)
		must(t, "PutClient a", s.PutClient(ctx, a))
		must(t, "PutClient b", s.PutClient(ctx, b))
		tok := func(id, clientID, parent string) store.Token {
			return store.Token{ID: id, ClientID: clientID, ParentID: parent, Hash: "sha256:" + id, IssuedAt: at(0),
				ExpiresAt: at(time.Hour), Body: []byte("{}")}
		}
		early := tok("tk_early", "cl_a", "")
		early.Revoked, early.RevokedAt = true, at(time.Second)
		for _, tk := range []store.Token{tok("tk_a", "cl_a", ""), tok("tk_a1", "cl_a", "tk_a"), tok("tk_a11", "cl_a", "tk_a1"),
			tok("tk_a2", "cl_a", ""), early, tok("tk_b", "cl_b", "")} {
			must(t, "PutToken "+tk.ID, s.PutToken(ctx, tk))
		}
		when := at(time.Minute)
		must(t, "DeleteClient", s.DeleteClient(ctx, "cl_a", when))
		for name, get := range map[string]func() (store.Client, error){
			"GetClient":       func() (store.Client, error) { return s.GetClient(ctx, "cl_a") },
			"ClientByKeyHash": func() (store.Client, error) { return s.ClientByKeyHash(ctx, a.KeyHash) },
			"ClientByName":    func() (store.Client, error) { return s.ClientByName(ctx, "alpha") },
			"ClientByUID":     func() (store.Client, error) { return s.ClientByUID(ctx, 501) },
		} {
			_, err := get()
			wantErr(t, name+" after DeleteClient", err, store.ErrNotFound)
		}
		for _, id := range []string{"tk_a", "tk_a1", "tk_a11", "tk_a2"} {
			got, err := s.GetToken(ctx, id)
			must(t, "GetToken "+id, err)
			if !got.Revoked || !normTime(got.RevokedAt).Equal(normTime(when)) {
				t.Errorf("%s after its client was removed: revoked %v at %v, want at %v", id, got.Revoked, got.RevokedAt, when)
			}
			_, err = s.TakeUse(ctx, id, when)
			wantErr(t, "TakeUse "+id, err, store.ErrRevoked)
		}
		if got, err := s.GetToken(ctx, "tk_early"); err != nil || !normTime(got.RevokedAt).Equal(normTime(early.RevokedAt)) {
			t.Errorf("a token revoked before keeps its time: %+v %v", got, err)
		}
		if got, err := s.GetToken(ctx, "tk_b"); err != nil || got.Revoked {
			t.Errorf("the other client's token: %+v %v", got, err)
		}
		list, err := s.ListClients(ctx)
		must(t, "ListClients", err)
		if len(list) != 1 || list[0].ID != "cl_b" {
			t.Errorf("ListClients after DeleteClient: %+v", list)
		}
		wantErr(t, "DeleteClient again", s.DeleteClient(ctx, "cl_a", when), store.ErrNotFound)
		again := a
		again.ID = "cl_a2"
		must(t, "PutClient with the removed client's name, key and uid", s.PutClient(ctx, again))
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
