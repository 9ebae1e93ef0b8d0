package profile_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/profile"
)

func TestNormalize(t *testing.T) {
	good := []struct{ in, want profile.Profile }{
		{profile.Profile{}, profile.Profile{}},
		{profile.Profile{DisplayName: "  Ayşe Yılmaz ", Language: "EN-gb", TimeZone: "Europe/Istanbul"}, profile.Profile{DisplayName: "Ayşe Yılmaz", Language: "en-GB", TimeZone: "Europe/Istanbul"}},
		{profile.Profile{DisplayName: "Ayse\u0301", Language: "tr"}, profile.Profile{DisplayName: "Aysé", Language: "tr"}},
	}
	for _, c := range good {
		got, err := profile.Normalize(c.in)
		if err != nil || got != c.want {
			t.Errorf("%+v: %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	bad := []struct {
		in    profile.Profile
		field string
	}{
		{profile.Profile{DisplayName: "a\x00b"}, "display_name"},
		{profile.Profile{DisplayName: "evil\u202egnp.exe"}, "display_name"},
		{profile.Profile{DisplayName: "zero\u200bwidth"}, "display_name"},
		{profile.Profile{DisplayName: strings.Repeat("a", 129)}, "display_name"},
		{profile.Profile{DisplayName: "\xff"}, "display_name"},
		{profile.Profile{Language: "not a tag"}, "language"},
		{profile.Profile{Language: "en-" + strings.Repeat("x", 40)}, "language"},
		{profile.Profile{TimeZone: "Local"}, "time_zone"},
		{profile.Profile{TimeZone: "Mars/Olympus"}, "time_zone"},
		{profile.Profile{TimeZone: "../../etc/passwd"}, "time_zone"},
	}
	for _, c := range bad {
		_, err := profile.Normalize(c.in)
		if !errors.Is(err, profile.ErrInvalid) || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%+v: %v, want an error naming %s", c.in, err, c.field)
		}
		if err != nil && c.in.DisplayName != "" && len(c.in.DisplayName) > 3 && strings.Contains(err.Error(), c.in.DisplayName) {
			t.Errorf("the error %q echoes the value", err)
		}
	}
}

func TestSaveLoadAndGrants(t *testing.T) {
	ctx := context.Background()
	st := gatewaytest.Store(t)
	if p, err := profile.Load(ctx, st); err != nil || p != (profile.Profile{}) {
		t.Fatalf("no profile: %+v %v", p, err)
	}
	want := profile.Profile{DisplayName: "Ayşe", Language: "tr", TimeZone: "Europe/Istanbul"}
	if err := profile.Save(ctx, st, want); err != nil {
		t.Fatal(err)
	}
	if p, err := profile.Load(ctx, st); err != nil || p != want {
		t.Fatalf("loaded %+v %v", p, err)
	}
	if err := profile.Save(ctx, st, profile.Profile{TimeZone: "Nowhere/Else"}); err == nil {
		t.Fatal("a bad profile was saved")
	}
	if p, _ := profile.Load(ctx, st); p != want {
		t.Fatalf("a refused save changed the profile: %+v", p)
	}
	if err := st.PutState(ctx, "capgate.profile", "profile", []byte(`{"display_name":"x","password":"y"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := profile.Load(ctx, st); err == nil {
		t.Fatal("a stored profile with an unknown field was read")
	}

	if profile.Granted(ctx, st, "weather") {
		t.Fatal("granted with no grant")
	}
	if err := profile.SetGrant(ctx, st, "weather", true); err != nil {
		t.Fatal(err)
	}
	if !profile.Granted(ctx, st, "weather") || profile.Granted(ctx, st, "weathe") || profile.Granted(ctx, st, "weather2") {
		t.Fatal("the grant covers the wrong servers")
	}
	if gs, err := profile.Grants(ctx, st); err != nil || len(gs) != 1 || gs[0] != "weather" {
		t.Fatalf("grants: %v %v", gs, err)
	}
	if err := profile.SetGrant(ctx, st, "weather", false); err != nil || profile.Granted(ctx, st, "weather") {
		t.Fatalf("the grant was not taken back: %v", err)
	}
}

func TestFieldOf(t *testing.T) {
	for _, c := range []struct {
		name, typ string
		want      profile.Field
		ok        bool
	}{
		{"name", "string", profile.FieldDisplayName, true},
		{"displayName", "", profile.FieldDisplayName, true},
		{"Display-Name", "string", profile.FieldDisplayName, true},
		{"full_name", "string", profile.FieldDisplayName, true},
		{"isim", "string", profile.FieldDisplayName, true},
		{"preferred_language", "string", profile.FieldLanguage, true},
		{"locale", "string", profile.FieldLanguage, true},
		{"timeZone", "string", profile.FieldTimeZone, true},
		{"saat_dilimi", "string", profile.FieldTimeZone, true},
		{"name", "integer", "", false},
		{"username", "string", "", false},
		{"company_name", "string", "", false},
		{"email", "string", "", false},
		{"address", "string", "", false},
		{"names", "array", "", false},
	} {
		f, ok := profile.FieldOf(c.name, c.typ)
		if f != c.want || ok != c.ok {
			t.Errorf("%s (%s): %q %v", c.name, c.typ, f, ok)
		}
	}
	p := profile.Profile{DisplayName: "A", Language: "tr", TimeZone: "UTC"}
	if p.Value(profile.FieldDisplayName) != "A" || p.Value(profile.FieldLanguage) != "tr" || p.Value(profile.FieldTimeZone) != "UTC" || p.Value("other") != "" {
		t.Error("Value")
	}
}
