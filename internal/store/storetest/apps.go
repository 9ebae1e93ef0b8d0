package storetest

import (
	"testing"

	"github.com/capgate/capgate/internal/store"
)

func normApp(a store.App) store.App {
	a.Updated = normTime(a.Updated)
	a.Manifest = normBytes(a.Manifest)
	return a
}

func testApps(t *testing.T, open func(t *testing.T) store.Store) {
	app := func(id, alias string) store.App {
		return store.App{
			AppID: id, Alias: alias, Tier: 2, Reason: "reads files",
			Manifest: []byte(`{"app_id":"` + id + `"}`), Enabled: true, Updated: at(0),
		}
	}

	t.Run("NotFound", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		_, err := s.GetApp(ctx, "org.example.none")
		wantErr(t, "GetApp", err, store.ErrNotFound)
		_, err = s.AppByAlias(ctx, "none")
		wantErr(t, "AppByAlias", err, store.ErrNotFound)
		_, err = s.AppByAlias(ctx, "")
		wantErr(t, "AppByAlias empty", err, store.ErrNotFound)
		wantErr(t, "SetAppEnabled", s.SetAppEnabled(ctx, "org.example.none", true), store.ErrNotFound)
		wantErr(t, "DeleteApp", s.DeleteApp(ctx, "org.example.none"), store.ErrNotFound)
		list, err := s.ListApps(ctx)
		wantEmpty(t, "ListApps", list, err)
	})

	t.Run("RoundTrip", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		a := store.App{
			AppID: "org.example.files", Alias: "files", Tier: 1, Reason: "signed by the vendor",
			Manifest: []byte("{\"x\":\"\x00\xff\"}"), Enabled: true, Updated: at(0),
		}
		must(t, "PutApp", s.PutApp(ctx, a))
		got, err := s.GetApp(ctx, a.AppID)
		must(t, "GetApp", err)
		same(t, "GetApp", got, a, normApp)
		got, err = s.AppByAlias(ctx, "files")
		must(t, "AppByAlias", err)
		same(t, "AppByAlias", got, a, normApp)

		// Zero values come back as zero values.
		z := store.App{AppID: "org.example.zero"}
		must(t, "PutApp zero", s.PutApp(ctx, z))
		got, err = s.GetApp(ctx, z.AppID)
		must(t, "GetApp zero", err)
		same(t, "GetApp zero", got, z, normApp)
	})

	t.Run("Replace", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		must(t, "PutApp", s.PutApp(ctx, app("org.example.a", "a")))
		b := store.App{AppID: "org.example.a", Alias: "a2", Tier: 1, Reason: "upgraded",
			Manifest: []byte("{}"), Enabled: false, Updated: at(1e9)}
		must(t, "PutApp replace", s.PutApp(ctx, b))
		got, err := s.GetApp(ctx, b.AppID)
		must(t, "GetApp", err)
		same(t, "GetApp after replace", got, b, normApp)
		_, err = s.AppByAlias(ctx, "a")
		wantErr(t, "AppByAlias old alias", err, store.ErrNotFound)
		// Replacing an app with its own alias is not a conflict.
		must(t, "PutApp same alias", s.PutApp(ctx, b))
	})

	t.Run("AliasTaken", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		must(t, "PutApp a", s.PutApp(ctx, app("org.example.a", "same")))
		wantErr(t, "PutApp new app, taken alias", s.PutApp(ctx, app("org.example.b", "same")), store.ErrExists)
		if _, err := s.GetApp(ctx, "org.example.b"); err == nil {
			t.Errorf("refused app was stored")
		}
		must(t, "PutApp b", s.PutApp(ctx, app("org.example.b", "other")))
		wantErr(t, "PutApp existing app, taken alias", s.PutApp(ctx, app("org.example.b", "same")), store.ErrExists)
		got, err := s.GetApp(ctx, "org.example.b")
		must(t, "GetApp b", err)
		if got.Alias != "other" {
			t.Errorf("refused replace changed the alias to %q", got.Alias)
		}
		// The empty alias is no alias: any number of apps may have it.
		must(t, "PutApp c", s.PutApp(ctx, app("org.example.c", "")))
		must(t, "PutApp d", s.PutApp(ctx, app("org.example.d", "")))
		// A deleted app's alias is free again.
		must(t, "DeleteApp a", s.DeleteApp(ctx, "org.example.a"))
		must(t, "PutApp e", s.PutApp(ctx, app("org.example.e", "same")))
	})

	t.Run("ListOrder", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		for _, id := range []string{"org.example.m", "com.example.z", "org.example.b", "net.example.a"} {
			must(t, "PutApp", s.PutApp(ctx, app(id, "")))
		}
		list, err := s.ListApps(ctx)
		must(t, "ListApps", err)
		var ids []string
		for _, a := range list {
			ids = append(ids, a.AppID)
		}
		same(t, "ListApps order", ids,
			[]string{"com.example.z", "net.example.a", "org.example.b", "org.example.m"}, ident)
	})

	t.Run("EnableDelete", func(t *testing.T) {
		s, ctx := open(t), t.Context()
		a := app("org.example.a", "a")
		must(t, "PutApp", s.PutApp(ctx, a))
		must(t, "SetAppEnabled false", s.SetAppEnabled(ctx, a.AppID, false))
		got, err := s.GetApp(ctx, a.AppID)
		must(t, "GetApp", err)
		a.Enabled = false
		same(t, "after disable", got, a, normApp)
		must(t, "SetAppEnabled true", s.SetAppEnabled(ctx, a.AppID, true))
		got, err = s.GetApp(ctx, a.AppID)
		must(t, "GetApp", err)
		if !got.Enabled {
			t.Errorf("SetAppEnabled true: still disabled")
		}
		must(t, "DeleteApp", s.DeleteApp(ctx, a.AppID))
		_, err = s.GetApp(ctx, a.AppID)
		wantErr(t, "GetApp after delete", err, store.ErrNotFound)
		_, err = s.AppByAlias(ctx, "a")
		wantErr(t, "AppByAlias after delete", err, store.ErrNotFound)
		wantErr(t, "DeleteApp twice", s.DeleteApp(ctx, a.AppID), store.ErrNotFound)
	})
}

func ident[T any](v T) T { return v }
