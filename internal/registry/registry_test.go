package registry_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/store/sqlite"
	"github.com/capgate/capgate/manifest"
)

// filesApp declares two capabilities with the action "read" under different domains, and
// explicit permissions for the fs ones.
func filesApp(t *testing.T, version string) []byte {
	return manifestJSON(t, "org.example.files", version,
		capability("fs.org.example.files.read", "read", "permission", "fs.read"),
		capability("fs.org.example.files.write", "write", "permission", "fs.write"),
		capability("fs.org.example.files.delete", "destructive", "permission", "fs.delete"),
		capability("files.org.example.files.read", "read"),
		capability("files.org.example.files.list", "none", "permission", "fsx.list"),
	)
}

func terminalApp(t *testing.T) []byte {
	return manifestJSON(t, "org.capgate.terminal", "1.0.0",
		capability("app.org.capgate.terminal.execute", "system", "permission", "app.terminal.execute"),
		capability("app.org.capgate.terminal.history", "read", "permission", "app.terminal.history"),
	)
}

func driveApp(t *testing.T) []byte {
	return manifestJSON(t, "com.other.drive", "2.0.0",
		capability("fs.com.other.drive.read", "read", "permission", "fs.read"),
		capability("fs.com.other.drive.share", "network", "permission", "net.share", "risk", "medium"),
	)
}

func TestRegisterTiers(t *testing.T) {
	pub, priv := newKey(t)
	_, otherPriv := newKey(t)
	unsigned := filesApp(t, "1.0.0")
	malformed := []byte(strings.Replace(string(sign(t, unsigned, priv)), `"signature": "ed25519:`, `"signature": "ed25519:!`, 1))
	tests := []struct {
		name    string
		data    []byte
		trusted bool
		tier    manifest.Tier
		reason  manifest.Reason
	}{
		{"signed by the trusted key", sign(t, unsigned, priv), true, manifest.Tier1, manifest.ReasonVerified},
		{"unsigned", unsigned, true, manifest.Tier2, manifest.ReasonUnsigned},
		{"signed by another key", sign(t, unsigned, otherPriv), true, manifest.Tier2, manifest.ReasonBadSignature},
		{"no trusted key for the app", sign(t, unsigned, priv), false, manifest.Tier2, manifest.ReasonNoTrustedKey},
		{"malformed signature", malformed, true, manifest.Tier2, manifest.ReasonMalformedSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := &trust{}
			if tt.trusted {
				keys.set("org.example.files", pub)
			}
			r, s := newRegistry(t, keys)
			a := register(t, r, tt.data, "")
			if a.Tier != tt.tier || a.Reason != tt.reason || !a.Enabled || a.ID.String() != "org.example.files" {
				t.Fatalf("Register = tier %d reason %q enabled %v id %q, want tier %d reason %q", a.Tier, a.Reason, a.Enabled, a.ID, tt.tier, tt.reason)
			}
			if (a.Detail == "") != (tt.tier == manifest.Tier1) {
				t.Errorf("Detail = %q at tier %d", a.Detail, a.Tier)
			}
			got, ok := r.App("org.example.files")
			if !ok || got.Tier != tt.tier || got.Reason != tt.reason {
				t.Fatalf("App = %+v, %v", got, ok)
			}
			// A Tier 2 app stays usable: its capabilities resolve.
			if _, ok := r.Capability("fs.org.example.files.write"); !ok {
				t.Error("capability of the registered app not found")
			}
			rec, err := s.GetApp(t.Context(), "org.example.files")
			if err != nil {
				t.Fatalf("store: %v", err)
			}
			if rec.Tier != int(tt.tier) || rec.Reason != string(tt.reason) || rec.Alias != "files" || !rec.Enabled {
				t.Errorf("stored %+v", rec)
			}
			if want := a.Doc.Raw(); string(rec.Manifest) != string(want) {
				t.Error("stored manifest is not the document's canonical form")
			}
		})
	}
}

// notesYAML is a manifest in the YAML authoring form.
const notesYAML = `app_id: org.example.notes
version: 1.0.0
manifest_version: "1.0"
capabilities:
  - id: notes.org.example.notes.search
    name: Search
    description: Finds notes.
    category: TEXT_QUERY
    parameters: {type: object}
    returns: {type: object}
    side_effects: read
`

// YAML is an authoring form: Register takes JSON only, and refuses the YAML with a problem
// that names the command signing it into JSON, in every spelling a YAML file starts with.
// Nothing is stored. The JSON twin registers.
func TestRegisterRefusesYAML(t *testing.T) {
	r, s := newRegistry(t, &trust{})
	for name, y := range map[string]string{
		"plain":           notesYAML,
		"comment first":   "# notes\n" + notesYAML,
		"document marker": "---\n" + notesYAML,
		"byte order mark": "\uFEFF" + notesYAML,
		"blank lines":     "\n\n  \n" + notesYAML,
		"CRLF":            strings.ReplaceAll(notesYAML, "\n", "\r\n"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := r.Register(t.Context(), []byte(y), "")
			var ps manifest.Problems
			if !errors.As(err, &ps) || len(ps) != 1 {
				t.Fatalf("Register YAML = %v, want one problem", err)
			}
			if !strings.Contains(ps[0].Rule, "capgate manifest sign -o manifest.json manifest.yaml") {
				t.Errorf("the problem does not name the fix: %v", ps[0])
			}
		})
	}
	// A YAML flow mapping starts as JSON does: refused as not JSON, without the hint.
	if _, err := r.Register(t.Context(), []byte(`{app_id: org.example.notes}`), ""); err == nil {
		t.Error("a YAML flow mapping registered")
	}
	if apps, err := s.ListApps(t.Context()); err != nil || len(apps) != 0 {
		t.Fatalf("store holds %d apps (%v) after YAML was refused", len(apps), err)
	}

	doc, err := manifest.ParseYAML([]byte(notesYAML))
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Register(t.Context(), doc.JSON(), "")
	if err != nil {
		t.Fatalf("Register the JSON twin: %v", err)
	}
	if a.Alias != "notes" || a.Reason != manifest.ReasonUnsigned {
		t.Fatalf("App = %+v", a)
	}
	if _, ok := r.Method("notes", "search"); !ok {
		t.Error("Method(notes, search) not found")
	}
	r2, err := registry.New(t.Context(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r2.Capability("notes.org.example.notes.search"); !ok {
		t.Error("the registered app did not reload")
	}
}

func TestRegisterRefusesInvalidManifest(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		path string // a path among the problems
	}{
		{"capability in another app's space", manifestJSON(t, "org.example.files", "1.0.0",
			capability("fs.org.example.other.read", "read")), "capabilities[0].id"},
		{"bad version", manifestJSON(t, "org.example.files", "one", capability("fs.org.example.files.read", "read")), "version"},
		{"unknown side effect", manifestJSON(t, "org.example.files", "1.0.0",
			capability("fs.org.example.files.read", "sometimes")), "capabilities[0].side_effects"},
		{"not JSON", []byte(`{"app_id": `), "app_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, s := newRegistry(t, &trust{})
			_, err := r.Register(t.Context(), tt.data, "")
			var ps manifest.Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("Register = %v, want manifest.Problems", err)
			}
			if !slices.ContainsFunc(ps, func(p manifest.Problem) bool { return p.Path == tt.path }) {
				t.Errorf("problems %v lack path %q", ps, tt.path)
			}
			if len(r.List()) != 0 {
				t.Error("an invalid manifest was indexed")
			}
			if apps, err := s.ListApps(t.Context()); err != nil || len(apps) != 0 {
				t.Errorf("store holds %d apps (%v) after a refused manifest", len(apps), err)
			}
		})
	}
}

func TestAliases(t *testing.T) {
	r, s := newRegistry(t, &trust{})
	term := register(t, r, terminalApp(t), "")
	if term.Alias != "terminal" {
		t.Fatalf("default alias = %q, want terminal", term.Alias)
	}
	drive := register(t, r, driveApp(t), "gdrive")
	if drive.Alias != "gdrive" {
		t.Fatalf("explicit alias = %q", drive.Alias)
	}
	for name, want := range map[string]string{
		"terminal": "org.capgate.terminal", "org.capgate.terminal": "org.capgate.terminal",
		"gdrive": "com.other.drive", "com.other.drive": "com.other.drive",
	} {
		if a, ok := r.App(name); !ok || a.ID.String() != want {
			t.Errorf("App(%q) = %v, %v; want %s", name, a, ok, want)
		}
	}
	for _, name := range []string{"Terminal", "TERMINAL", " terminal", "drive", "org.capgate.Terminal", ""} {
		if a, ok := r.App(name); ok {
			t.Errorf("App(%q) = %s, want none (lookups are exact)", name, a.ID)
		}
	}

	t.Run("duplicate", func(t *testing.T) {
		other := manifestJSON(t, "org.example.terminal", "1.0.0", capability("app.org.example.terminal.run", "system"))
		if _, err := r.Register(t.Context(), other, ""); !errors.Is(err, registry.ErrAliasTaken) {
			t.Fatalf("default alias of another app: %v, want ErrAliasTaken", err)
		}
		if _, err := r.Register(t.Context(), other, "gdrive"); !errors.Is(err, registry.ErrAliasTaken) {
			t.Fatalf("explicit alias of another app: %v, want ErrAliasTaken", err)
		}
		if _, err := s.GetApp(t.Context(), "org.example.terminal"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("refused app was stored: %v", err)
		}
		if a, _ := r.App("terminal"); a.ID.String() != "org.capgate.terminal" {
			t.Errorf("terminal now names %s", a.ID)
		}
		if a := register(t, r, other, "term2"); a.Alias != "term2" {
			t.Errorf("alias = %q", a.Alias)
		}
	})

	t.Run("grammar", func(t *testing.T) {
		app := manifestJSON(t, "org.example.grammar", "1.0.0", capability("g.org.example.grammar.x", "none"))
		for _, bad := range []string{"Term", "1term", "_term", "-term", "te rm", "a.b", "térm", "term\n", strings.Repeat("a", 33)} {
			if _, err := r.Register(t.Context(), app, bad); !errors.Is(err, registry.ErrInvalidAlias) {
				t.Errorf("alias %q: %v, want ErrInvalidAlias", bad, err)
			}
		}
		if _, ok := r.App("org.example.grammar"); ok {
			t.Fatal("app registered under a bad alias")
		}
		for _, good := range []string{"g", "g2", "g_h-i", strings.Repeat("a", 32)} {
			if a, err := r.Register(t.Context(), app, good); err != nil || a.Alias != good {
				t.Errorf("alias %q: %v, %q", good, err, a.Alias)
			}
		}
		if _, ok := r.App("g"); ok {
			t.Error("an old alias still names the app after it changed")
		}
	})

	t.Run("default too long", func(t *testing.T) {
		long := "org.example.a" + strings.Repeat("b", 40)
		app := manifestJSON(t, long, "1.0.0", capability("x."+long+".y", "none"))
		if _, err := r.Register(t.Context(), app, ""); !errors.Is(err, registry.ErrInvalidAlias) {
			t.Fatalf("default alias of 41 bytes: %v, want ErrInvalidAlias", err)
		}
		if a := register(t, r, app, "long"); a.Alias != "long" {
			t.Errorf("alias = %q", a.Alias)
		}
	})

	t.Run("re-register keeps the alias", func(t *testing.T) {
		a := register(t, r, driveApp(t), "")
		if a.Alias != "gdrive" {
			t.Errorf("re-registered with no alias: %q, want the app's own gdrive", a.Alias)
		}
	})
}

func TestMethod(t *testing.T) {
	r, _ := newRegistry(t, &trust{})
	register(t, r, filesApp(t, "1.0.0"), "")
	register(t, r, terminalApp(t), "")
	tests := []struct {
		app, method string
		want        string // "" for not found
	}{
		{"files", "write", "fs.org.example.files.write"},
		{"org.example.files", "write", "fs.org.example.files.write"},
		{"files", "list", "files.org.example.files.list"},
		{"terminal", "execute", "app.org.capgate.terminal.execute"},
		{"files", "read", ""}, // two domains share the action
		{"files", "fs.org.example.files.read", "fs.org.example.files.read"},
		{"files", "files.org.example.files.read", "files.org.example.files.read"},
		{"files", "app.org.capgate.terminal.execute", ""}, // another app's capability
		{"terminal", "write", ""},
		{"files", "Write", ""},
		{"Files", "write", ""},
		{"files", "nope", ""},
		{"nope", "write", ""},
		{"files", "", ""},
	}
	for _, tt := range tests {
		c, ok := r.Method(tt.app, tt.method)
		got := ""
		if ok {
			got = c.Cap.ID
			// The parsed values are the manifest's text, the permission defaulting to the id.
			if c.ID.String() != c.Cap.ID || c.Permission.String() != c.Cap.Permission || c.ID.AppID() != c.App.ID {
				t.Errorf("Method(%q, %q): parsed id %q permission %q app %q, manifest says %q %q %q",
					tt.app, tt.method, c.ID, c.Permission, c.ID.AppID(), c.Cap.ID, c.Cap.Permission, c.App.ID)
			}
		}
		if got != tt.want {
			t.Errorf("Method(%q, %q) = %q, %v; want %q", tt.app, tt.method, got, ok, tt.want)
		}
	}
	c, _ := r.Method("files", "write")
	if c.App.ID.String() != "org.example.files" || c.Params == nil || c.Returns == nil || c.Cap.Risk != manifest.RiskMedium {
		t.Errorf("Method result: app %s params %v returns %v risk %q", c.App.ID, c.Params, c.Returns, c.Cap.Risk)
	}
	if err := c.Params.ValidateJSON([]byte(`{"path": 3}`), "params"); err == nil {
		t.Error("the params schema accepted a number for a string")
	}
}

func TestByPermission(t *testing.T) {
	r, _ := newRegistry(t, &trust{})
	register(t, r, filesApp(t, "1.0.0"), "")
	register(t, r, driveApp(t), "")
	tests := []struct {
		permission string
		want       []string
	}{
		{"fs.read", []string{"fs.com.other.drive.read", "fs.org.example.files.read"}},
		{"fs.delete", []string{"fs.org.example.files.delete"}},
		// The permission defaults to the capability's id ...
		{"files.org.example.files.read", []string{"files.org.example.files.read"}},
		// ... and only then: an explicit permission replaces it.
		{"fs.org.example.files.read", nil},
		{"fs.*", nil}, // a pattern is a grant, not a permission
		{"FS.read", nil},
		{"fs", nil},
	}
	for _, tt := range tests {
		if got := ids(r.ByPermission(tt.permission)); !slices.Equal(got, tt.want) && len(got)+len(tt.want) > 0 {
			t.Errorf("ByPermission(%q) = %v, want %v", tt.permission, got, tt.want)
		}
	}
}

func TestCovered(t *testing.T) {
	r, _ := newRegistry(t, &trust{})
	register(t, r, filesApp(t, "1.0.0"), "")
	register(t, r, driveApp(t), "")
	register(t, r, terminalApp(t), "")
	tests := []struct {
		grants []string
		want   []string
	}{
		{[]string{"fs.*"}, []string{"fs.com.other.drive.read", "fs.org.example.files.delete", "fs.org.example.files.read", "fs.org.example.files.write"}},
		{[]string{"fs.read"}, []string{"fs.com.other.drive.read", "fs.org.example.files.read"}},
		{[]string{"fs.read", "app.terminal.*"}, []string{"app.org.capgate.terminal.execute", "app.org.capgate.terminal.history", "fs.com.other.drive.read", "fs.org.example.files.read"}},
		{[]string{"files.org.example.files.*"}, []string{"files.org.example.files.read"}},
		{[]string{"fsx.*"}, []string{"files.org.example.files.list"}},
		{[]string{"*"}, nil},
		{[]string{"FS.*"}, nil},
		{[]string{"fs"}, nil},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := ids(r.Covered(tt.grants)); !slices.Equal(got, tt.want) && len(got)+len(tt.want) > 0 {
			t.Errorf("Covered(%q) = %v, want %v", tt.grants, got, tt.want)
		}
	}
}

func TestRiskOf(t *testing.T) {
	r, _ := newRegistry(t, &trust{})
	register(t, r, filesApp(t, "1.0.0"), "")
	register(t, r, driveApp(t), "")
	tests := []struct {
		grant string
		want  manifest.Risk
	}{
		{"fs.*", manifest.RiskHigh},   // fs.delete is destructive
		{"fs.read", manifest.RiskLow}, // read, on two apps
		{"fs.write", manifest.RiskMedium},
		{"net.share", manifest.RiskMedium}, // declared risk wins over the derived high
		{"fsx.*", manifest.RiskLow},
		{"nothing.here", ""},
		{"*", ""},
	}
	for _, tt := range tests {
		if got := r.RiskOf(tt.grant); got != tt.want {
			t.Errorf("RiskOf(%q) = %q, want %q", tt.grant, got, tt.want)
		}
	}
	// Consent to issue must hold for what a token could do once an app is enabled again.
	if err := r.SetEnabled(t.Context(), "org.example.files", false); err != nil {
		t.Fatal(err)
	}
	if got := r.RiskOf("fs.*"); got != manifest.RiskHigh {
		t.Errorf("RiskOf(fs.*) with the app disabled = %q, want high", got)
	}
}

func TestSetEnabled(t *testing.T) {
	r, s := newRegistry(t, &trust{})
	register(t, r, filesApp(t, "1.0.0"), "")
	register(t, r, driveApp(t), "")
	if err := r.SetEnabled(t.Context(), "org.example.files", false); err != nil {
		t.Fatal(err)
	}
	a, ok := r.App("files")
	if !ok || a.Enabled {
		t.Fatalf("App(files) after disabling = %v, %v; want it, disabled", a, ok)
	}
	if _, ok := r.Capability("fs.org.example.files.write"); ok {
		t.Error("Capability found on a disabled app")
	}
	if _, ok := r.Method("files", "write"); ok {
		t.Error("Method found on a disabled app")
	}
	if got := ids(r.ByPermission("fs.read")); !slices.Equal(got, []string{"fs.com.other.drive.read"}) {
		t.Errorf("ByPermission(fs.read) = %v", got)
	}
	if got := ids(r.Covered([]string{"fs.*"})); !slices.Equal(got, []string{"fs.com.other.drive.read"}) {
		t.Errorf("Covered(fs.*) = %v", got)
	}
	if rec, _ := s.GetApp(t.Context(), "org.example.files"); rec.Enabled {
		t.Error("store still says enabled")
	}
	// A new version keeps the app disabled.
	if a := register(t, r, filesApp(t, "1.1.0"), ""); a.Enabled {
		t.Error("re-registering enabled a disabled app")
	}
	if err := r.SetEnabled(t.Context(), "org.example.files", true); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Method("files", "write"); !ok {
		t.Error("Method not found after enabling again")
	}
	if err := r.SetEnabled(t.Context(), "org.example.none", true); !errors.Is(err, registry.ErrNotFound) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetEnabled on an unknown app = %v, want ErrNotFound", err)
	}
}

func TestReRegisterReplaces(t *testing.T) {
	r, s := newRegistry(t, &trust{})
	register(t, r, filesApp(t, "1.0.0"), "")
	v2 := manifestJSON(t, "org.example.files", "2.0.0",
		capability("fs.org.example.files.read", "read", "permission", "fs.read"),
		capability("fs.org.example.files.move", "write", "permission", "fs.write"),
	)
	a := register(t, r, v2, "")
	if a.Doc.Manifest().Version != "2.0.0" || a.Alias != "files" {
		t.Fatalf("App = %+v", a)
	}
	for _, gone := range []string{"fs.org.example.files.write", "fs.org.example.files.delete", "files.org.example.files.read"} {
		if _, ok := r.Capability(gone); ok {
			t.Errorf("capability %s of the old version still indexed", gone)
		}
	}
	if _, ok := r.Method("files", "read"); !ok {
		t.Error("read is no longer ambiguous in v2 but Method refuses it")
	}
	if got := ids(r.ByPermission("fs.write")); !slices.Equal(got, []string{"fs.org.example.files.move"}) {
		t.Errorf("ByPermission(fs.write) = %v", got)
	}
	if got := r.RiskOf("fs.*"); got != manifest.RiskMedium {
		t.Errorf("RiskOf(fs.*) = %q, want medium (the destructive capability is gone)", got)
	}
	if len(r.List()) != 1 {
		t.Errorf("List has %d apps", len(r.List()))
	}
	rec, _ := s.GetApp(t.Context(), "org.example.files")
	if doc, err := manifest.Parse(rec.Manifest); err != nil || doc.Manifest().Version != "2.0.0" {
		t.Errorf("store holds another version: %v", err)
	}
}

func TestRemove(t *testing.T) {
	r, s := newRegistry(t, &trust{})
	register(t, r, filesApp(t, "1.0.0"), "")
	register(t, r, driveApp(t), "")
	if err := r.Remove(t.Context(), "org.example.files"); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.App("files"); ok {
		t.Error("removed app still found")
	}
	if _, ok := r.Capability("fs.org.example.files.read"); ok {
		t.Error("removed app's capability still found")
	}
	if _, err := s.GetApp(t.Context(), "org.example.files"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("store: %v", err)
	}
	if err := r.Remove(t.Context(), "org.example.files"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Remove twice = %v, want ErrNotFound", err)
	}
	// The alias is free again.
	if a := register(t, r, manifestJSON(t, "com.x.files", "1.0.0", capability("f.com.x.files.a", "none")), ""); a.Alias != "files" {
		t.Errorf("alias = %q", a.Alias)
	}
	if got := r.List(); len(got) != 2 || got[0].ID.String() != "com.other.drive" || got[1].ID.String() != "com.x.files" {
		t.Errorf("List = %v", got)
	}
}

func TestNewReloadsFromTheStore(t *testing.T) {
	pub, priv := newKey(t)
	keys := &trust{}
	keys.set("org.example.files", pub)
	keys.set("org.capgate.terminal", pub)
	s, path := openStore(t)
	r, err := registry.New(t.Context(), s, keys)
	if err != nil {
		t.Fatal(err)
	}
	register(t, r, sign(t, filesApp(t, "1.0.0"), priv), "")
	register(t, r, sign(t, terminalApp(t), priv), "term")
	register(t, r, driveApp(t), "gdrive")
	if err := r.SetEnabled(t.Context(), "org.capgate.terminal", false); err != nil {
		t.Fatal(err)
	}
	// A record a newer or broken writer left: one that does not parse, one that breaks the
	// rules, one that names another app.
	for _, rec := range []store.App{
		{AppID: "org.example.broken", Alias: "broken", Tier: 1, Reason: "verified", Manifest: []byte(`{"app_id": `), Enabled: true},
		{AppID: "org.example.invalid", Alias: "invalid", Tier: 2, Reason: "unsigned", Enabled: true,
			Manifest: manifestJSON(t, "org.example.invalid", "1.0.0", capability("x.org.example.other.y", "none"))},
		{AppID: "org.example.liar", Alias: "liar", Tier: 2, Reason: "unsigned", Enabled: true, Manifest: driveApp(t)},
	} {
		if err := s.PutApp(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	reopen := func(t *testing.T, keys manifest.KeySource) *registry.Registry {
		t.Helper()
		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		r, err := registry.New(t.Context(), s, keys)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	t.Run("same keys", func(t *testing.T) {
		r := reopen(t, keys)
		var got []string
		for _, a := range r.List() {
			got = append(got, a.ID.String()+" "+a.Alias+" "+string(a.Reason)+map[bool]string{true: " on", false: " off"}[a.Enabled])
		}
		want := []string{
			"com.other.drive gdrive unsigned on",
			"org.capgate.terminal term verified off",
			"org.example.files files verified on",
		}
		if !slices.Equal(got, want) {
			t.Errorf("List = %q\nwant %q", got, want)
		}
		if _, ok := r.Method("term", "execute"); ok {
			t.Error("disabled app's method found after reload")
		}
		if c, ok := r.Method("files", "delete"); !ok || c.App.Tier != manifest.Tier1 {
			t.Error("Method(files, delete) after reload")
		}
		skipped := r.Skipped()
		if len(skipped) != 3 {
			t.Fatalf("Skipped = %v, want 3", skipped)
		}
		var se *manifest.SyntaxError
		var ps manifest.Problems
		if skipped[0].AppID != "org.example.broken" || !errors.As(skipped[0].Err, &se) {
			t.Errorf("Skipped[0] = %v", skipped[0])
		}
		if skipped[1].AppID != "org.example.invalid" || !errors.As(skipped[1].Err, &ps) {
			t.Errorf("Skipped[1] = %v", skipped[1])
		}
		if skipped[2].AppID != "org.example.liar" || !errors.Is(skipped[2].Err, registry.ErrStoredAppMismatch) {
			t.Errorf("Skipped[2] = %v", skipped[2])
		}
		if _, ok := r.App("broken"); ok {
			t.Error("a skipped app is indexed")
		}
		// Registering a skipped app again fixes it, and it leaves the list.
		register(t, r, manifestJSON(t, "org.example.broken", "1.0.1", capability("b.org.example.broken.x", "none")), "")
		if a, ok := r.App("broken"); !ok || a.Tier != manifest.Tier2 {
			t.Errorf("re-registered skipped app: %v, %v", a, ok)
		}
		if got := r.Skipped(); len(got) != 2 || got[0].AppID != "org.example.invalid" {
			t.Errorf("Skipped after re-registering = %v", got)
		}
	})

	t.Run("key no longer trusted", func(t *testing.T) {
		r := reopen(t, &trust{})
		a, ok := r.App("files")
		if !ok || a.Tier != manifest.Tier2 || a.Reason != manifest.ReasonNoTrustedKey || a.Detail == "" {
			t.Fatalf("App(files) = %+v, want Tier 2 no_trusted_key", a)
		}
		if c, ok := r.Capability("fs.org.example.files.write"); !ok || c.App.Tier != manifest.Tier2 {
			t.Error("a Tier 2 app's capability is not usable")
		}
	})

	t.Run("another key", func(t *testing.T) {
		other, _ := newKey(t)
		k := &trust{}
		k.set("org.example.files", other)
		if a, _ := reopen(t, k).App("files"); a.Tier != manifest.Tier2 || a.Reason != manifest.ReasonBadSignature {
			t.Errorf("App(files) = tier %d reason %q, want Tier 2 bad_signature", a.Tier, a.Reason)
		}
	})
}

func TestReloadSeesAnotherReplica(t *testing.T) {
	s, _ := openStore(t)
	r1, err := registry.New(t.Context(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := registry.New(t.Context(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	register(t, r1, filesApp(t, "1.0.0"), "shared")
	// r2 does not know the alias is taken; the store does, and the store is the truth.
	_, err = r2.Register(t.Context(), driveApp(t), "shared")
	if !errors.Is(err, registry.ErrAliasTaken) || !errors.Is(err, store.ErrExists) {
		t.Fatalf("Register on a stale replica = %v, want ErrAliasTaken", err)
	}
	if len(r2.List()) != 0 {
		t.Error("a refused store write changed the snapshot")
	}
	if err := r2.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a, ok := r2.App("shared"); !ok || a.ID.String() != "org.example.files" {
		t.Errorf("after Reload App(shared) = %v, %v", a, ok)
	}
}

func TestStoreFailureLeavesTheSnapshot(t *testing.T) {
	r, s := newRegistry(t, &trust{})
	register(t, r, filesApp(t, "1.0.0"), "")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(t.Context(), driveApp(t), ""); err == nil {
		t.Error("Register on a closed store succeeded")
	}
	if _, err := r.Register(t.Context(), filesApp(t, "2.0.0"), ""); err == nil {
		t.Error("re-Register on a closed store succeeded")
	}
	if err := r.SetEnabled(t.Context(), "org.example.files", false); err == nil || errors.Is(err, registry.ErrNotFound) {
		t.Errorf("SetEnabled on a closed store = %v, want a store error", err)
	}
	if err := r.Remove(t.Context(), "org.example.files"); err == nil {
		t.Error("Remove on a closed store succeeded")
	}
	if err := r.Reload(t.Context()); err == nil {
		t.Error("Reload on a closed store succeeded")
	}
	a, ok := r.App("files")
	if !ok || !a.Enabled || a.Doc.Manifest().Version != "1.0.0" || len(r.List()) != 1 {
		t.Fatalf("snapshot changed: %v, %v, %d apps", a, ok, len(r.List()))
	}
	if _, ok := r.Method("files", "delete"); !ok {
		t.Error("capability lost")
	}
}

// Pinned follows SetPinned for each id alone, whatever the order of the calls, repeats
// included, and from many goroutines at once: an id set false is stopped until it is set
// true, and none other is.
func TestPinned(t *testing.T) {
	r, _ := newRegistry(t, &trust{})
	const a, b = "tool.mcp.srv.a", "tool.mcp.srv.b"
	if !r.Pinned(a) || !r.Pinned(b) {
		t.Fatal("an id never set is not pinned")
	}
	r.SetPinned(a, false)
	r.SetPinned(a, false)
	if r.Pinned(a) || !r.Pinned(b) {
		t.Fatalf("after a stopped twice: a %v, b %v", r.Pinned(a), r.Pinned(b))
	}
	r.SetPinned(b, true) // never stopped: nothing to undo
	r.SetPinned(a, true)
	if !r.Pinned(a) || !r.Pinned(b) {
		t.Fatalf("after a pinned again: a %v, b %v", r.Pinned(a), r.Pinned(b))
	}
	r.SetPinned(b, false)
	if !r.Pinned(a) || r.Pinned(b) {
		t.Fatalf("after b stopped: a %v, b %v", r.Pinned(a), r.Pinned(b))
	}
	// Goroutines flip ids of their own and end on a known state; the count under Pinned's
	// fast path must come out right.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			id := fmt.Sprintf("tool.mcp.srv.g%d", g)
			for i := range 1000 {
				r.SetPinned(id, i%3 == 0)
				_ = r.Pinned(id)
			}
			r.SetPinned(id, g%2 == 0)
		})
	}
	wg.Wait()
	for g := range 8 {
		if id := fmt.Sprintf("tool.mcp.srv.g%d", g); r.Pinned(id) != (g%2 == 0) {
			t.Errorf("%s: pinned %v, want %v", id, r.Pinned(id), g%2 == 0)
		}
	}
	r.SetPinned(b, true)
	for g := range 8 {
		r.SetPinned(fmt.Sprintf("tool.mcp.srv.g%d", g), true)
	}
	if n := registry.Stopped(r); n != 0 {
		t.Fatalf("none stopped, yet the count is %d", n)
	}
}
