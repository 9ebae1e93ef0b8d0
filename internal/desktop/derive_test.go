package desktop

import (
	"strings"
	"testing"

	"github.com/capgate/capgate/manifest"
)

// An app's name, the app's own word, becomes an app id under desktop. that is always valid,
// never another namespace's, or is refused.
func TestAppIDOf(t *testing.T) {
	for name, want := range map[string]string{
		"org.example.Counter":  "desktop.org.example.counter",
		"gedit":                "desktop.gedit",
		"My App 2":             "desktop.my-app-2",
		"org.capgate.settings": "desktop.org.capgate.settings",
		"3d.viewer":            "desktop.a3d.viewer",
		"..a..b..":             "desktop.a.b",
	} {
		got, err := AppIDOf(name)
		if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"", "...", "—", "\u202e"} {
		if got, err := AppIDOf(name); err == nil {
			t.Errorf("%q made the app id %q", name, got)
		}
	}
}

// FuzzAppIDOf: any name makes a valid app id under desktop., or none; and a slug is always
// a valid action.
func FuzzAppIDOf(f *testing.F) {
	for _, s := range []string{"org.example.Counter", "gedit", "My App", "..", "şifre ödeme", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		id, err := AppIDOf(name)
		if err == nil {
			if !strings.HasPrefix(id, AppPrefix) {
				t.Fatalf("%q: %q is not under %s", name, id, AppPrefix)
			}
			if _, err := manifest.ParseAppID(id); err != nil {
				t.Fatalf("%q: %q is not an app id: %v", name, id, err)
			}
		}
		s := slug(name, "push button")
		for _, r := range s {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
				t.Fatalf("slug %q of %q", s, name)
			}
		}
		if s == "" || len(s) > 40 {
			t.Fatalf("slug %q of %q", s, name)
		}
	})
}
