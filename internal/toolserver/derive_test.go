package toolserver

import (
	"encoding/json"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/manifest"
)

func pinOf(t *testing.T, tool *mcpsdk.Tool, action string) Pin {
	t.Helper()
	c, err := DefinitionOf(tool).Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return Pin{Tool: tool.Name, Action: action, Hash: Hash(c), Definition: c}
}

// A derived manifest: worst-case side effects unless the overlay classifies a tool (a
// readOnlyHint never does), descriptions labelled, a schema that does not compile left out.
func TestDerive(t *testing.T) {
	obj := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	read := &mcpsdk.Tool{Name: "Search-Docs", Description: "Finds docs.\u202e evil", InputSchema: obj,
		Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true}}
	hinted := &mcpsdk.Tool{Name: "wipe", Description: "Says it only reads.", InputSchema: obj,
		Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true}}
	broken := &mcpsdk.Tool{Name: "broken", InputSchema: json.RawMessage(`{"type":12}`)}
	pins := []Pin{pinOf(t, read, "search_docs"), pinOf(t, hinted, "wipe"), pinOf(t, broken, "broken")}
	doc, left, err := Derive("docs", pins, Overlay{"Search-Docs": {SideEffects: manifest.SideEffectRead}})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Tool != "broken" {
		t.Errorf("left out %v, want the tool whose schema does not compile", left)
	}
	d, err := manifest.Load(doc)
	if err != nil {
		t.Fatal(err)
	}
	m := d.Manifest()
	if m.AppID != "mcp.docs" || len(m.Capabilities) != 2 {
		t.Fatalf("manifest %s", doc)
	}
	s := m.Capability("tool.mcp.docs.search_docs")
	w := m.Capability("tool.mcp.docs.wipe")
	if s == nil || w == nil {
		t.Fatalf("capabilities of %s", doc)
	}
	if s.SideEffects != manifest.SideEffectRead || s.Risk != manifest.RiskLow || s.Permission != "mcp.docs.search_docs" {
		t.Errorf("classified tool: %+v", s)
	}
	if w.SideEffects != manifest.SideEffectSystem || w.Risk != manifest.RiskHigh || w.Reversibility != manifest.Irreversible {
		t.Errorf("a readOnlyHint lowered the worst case: %+v", w)
	}
	if !strings.HasPrefix(s.Description, "Untrusted description") || !strings.Contains(s.Description, "<tool-description>") ||
		strings.ContainsRune(s.Description, '\u202e') {
		t.Errorf("description not labelled or not cleaned: %q", s.Description)
	}
}

func TestActionFor(t *testing.T) {
	taken := map[string]bool{}
	for _, c := range []struct{ tool, want string }{
		{"get-weather", "get_weather"}, {"Get.Weather", "get_weather_2"}, {"9lives", "t_9lives"}, {"", "t_"},
	} {
		got := actionFor(c.tool, taken)
		taken[got] = true
		if got != c.want {
			t.Errorf("actionFor(%q) = %q, want %q", c.tool, got, c.want)
		}
	}
}

// The pin covers the description: the same tool hashes the same, a changed description
// does not, and the difference names the field.
func TestHashAndDiff(t *testing.T) {
	a := &mcpsdk.Tool{Name: "t", Description: "one", InputSchema: map[string]any{"type": "object"}}
	b := &mcpsdk.Tool{Name: "t", Description: "two", InputSchema: map[string]any{"type": "object"}}
	ca, _ := DefinitionOf(a).Canonical()
	ca2, _ := DefinitionOf(&mcpsdk.Tool{Name: "t", Description: "one", InputSchema: map[string]any{"type": "object"}}).Canonical()
	cb, _ := DefinitionOf(b).Canonical()
	if Hash(ca) != Hash(ca2) || Hash(ca) == Hash(cb) {
		t.Fatal("the hash does not follow the definition")
	}
	got := strings.Join(Diff(ca, cb), "\n")
	if got != "- /description: \"one\"\n+ /description: \"two\"" {
		t.Errorf("diff:\n%s", got)
	}
}

func TestConfigEnviron(t *testing.T) {
	c := Config{Name: "x", Command: "x", Env: []string{"KEEP", "CAPGATE_SECRET", "HOME"}}
	if err := c.Validate(); err == nil {
		t.Error("a CAPGATE_ variable was allowed")
	}
	env := c.Environ(func(k string) (string, bool) { return "v", true })
	// No home folder of the host's, even when asked: HOME is the sandbox's private /tmp.
	if strings.Join(env, " ") != "HOME=/tmp PATH=v LANG=v KEEP=v" {
		t.Errorf("environment %v", env)
	}
	for _, tc := range []struct {
		in   string
		want Bind
		ok   bool
	}{
		{"/srv/data", Bind{Path: "/srv/data"}, true},
		{"/srv/data:ro", Bind{Path: "/srv/data"}, true},
		{"/srv/data:rw", Bind{Path: "/srv/data", RW: true}, true},
		{"/srv/data:RW", Bind{}, false},
		{"srv/data", Bind{}, false},
		{"/srv/../etc", Bind{}, false},
		{"/srv/data/", Bind{}, false},
		{"/", Bind{}, false},
		{"/:rw", Bind{}, false},
		{"/a:rw:rw", Bind{}, false},
		{"/a\x00b", Bind{}, false},
	} {
		got, err := ParseBind(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseBind(%q) = %+v, %v", tc.in, got, err)
		}
	}
	for _, n := range []string{"a", "srv-1", "a1"} {
		if CheckName(n) != nil {
			t.Errorf("%q refused", n)
		}
	}
	for _, n := range []string{"", "1a", "a-", "A", "a_b", strings.Repeat("a", 33)} {
		if CheckName(n) == nil {
			t.Errorf("%q accepted", n)
		}
	}
}

// A difference is the JSON as written, for a person to read: markup and ampersands as they
// are (never HTML-escaped as \u003c), and what could hide or reorder text, in values and in
// member names alike, escaped.
func TestDiffShowsJSONAsWritten(t *testing.T) {
	old := []byte(`{"description":"plain"}`)
	new := []byte(`{"description":"<b>bold</b> & co\u200b","x\u202ey":1}`)
	got := Diff(old, new)
	want := []string{`- /description: "plain"`, `+ /description: "<b>bold</b> & co\u200b"`, `+ /x\u202ey: 1`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got {
		if strings.ContainsAny(l, "\u200b\u202e") || strings.Contains(l, `\u003c`) || strings.Contains(l, `\u0026`) {
			t.Errorf("line %q", l)
		}
	}
}
