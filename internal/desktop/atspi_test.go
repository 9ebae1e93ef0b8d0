package desktop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/desktop"
	"github.com/capgate/capgate/internal/desktop/desktoptest"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// session is a desktop of the test's own (desktoptest.Start).
type session struct {
	t   *testing.T
	ctx context.Context
	bus *desktop.Bus
	app desktop.App
}

func startSession(t *testing.T) *session {
	d := desktoptest.Start(t, "../..")
	return &session{t: t, ctx: context.Background(), bus: d.Bus, app: d.App}
}

// derive walks the session's app and derives its manifest.
func (s *session) derive() (*desktop.Derived, *manifest.Document) {
	s.t.Helper()
	tree, err := s.bus.Walk(s.ctx, s.app)
	if err != nil {
		s.t.Fatal(err)
	}
	d, err := desktop.Derive(tree)
	if err != nil {
		s.t.Fatal(err)
	}
	doc, err := manifest.Parse(d.Manifest)
	if err != nil {
		s.t.Fatal(err)
	}
	return d, doc
}

// The counter app's tree becomes Tier 2 capabilities: its buttons pressed, its check box
// toggled, its text field set and read, its label read, a list of its elements; names the
// app gives are labelled untrusted, and the password field and the delete button are high
// risk (and the password never read).
func TestDeriveCounter(t *testing.T) {
	s := startSession(t)
	d, doc := s.derive()
	if d.AppID != "desktop.org.example.counter" || !strings.HasPrefix(d.Shape, "sha256:") {
		t.Fatalf("app id %q, shape %q", d.AppID, d.Shape)
	}
	caps := map[string]*manifest.Capability{}
	for i := range doc.Manifest().Capabilities {
		c := &doc.Manifest().Capabilities[i]
		caps[strings.TrimPrefix(c.ID, "ui."+d.AppID+".")] = c
	}
	want := map[string]struct {
		cat  manifest.Category
		risk manifest.Risk
		se   manifest.SideEffect
	}{
		"press_increment":      {manifest.CategoryElementInteraction, manifest.RiskMedium, manifest.SideEffectWrite},
		"press_delete_all":     {manifest.CategoryElementInteraction, manifest.RiskHigh, manifest.SideEffectWrite},
		"toggle_enabled":       {manifest.CategoryElementInteraction, manifest.RiskMedium, manifest.SideEffectWrite},
		"set_text_note":        {manifest.CategoryTextInput, manifest.RiskMedium, manifest.SideEffectWrite},
		"insert_text_note":     {manifest.CategoryTextInput, manifest.RiskMedium, manifest.SideEffectWrite},
		"get_text_note":        {manifest.CategoryTextQuery, manifest.RiskLow, manifest.SideEffectRead},
		"get_text_count":       {manifest.CategoryTextQuery, manifest.RiskLow, manifest.SideEffectRead},
		"set_text_password":    {manifest.CategoryTextInput, manifest.RiskHigh, manifest.SideEffectWrite},
		"insert_text_password": {manifest.CategoryTextInput, manifest.RiskHigh, manifest.SideEffectWrite},
		"list_elements":        {manifest.CategoryStateQuery, manifest.RiskLow, manifest.SideEffectRead},
	}
	for name, w := range want {
		c := caps[name]
		if c == nil {
			t.Errorf("no capability %s (have %v)", name, keys(caps))
			continue
		}
		if c.Category != w.cat || c.Risk != w.risk || c.SideEffects != w.se {
			t.Errorf("%s: %s %s %s, want %s %s %s", name, c.Category, c.Risk, c.SideEffects, w.cat, w.risk, w.se)
		}
		if name != "list_elements" && !strings.Contains(c.Description, "untrusted") {
			t.Errorf("%s: the description does not say the name is untrusted: %q", name, c.Description)
		}
	}
	if caps["get_text_password"] != nil {
		t.Error("the password field's text is offered for reading")
	}
	if len(caps) != len(want) {
		t.Errorf("capabilities %v, want %d", keys(caps), len(want))
	}
	// The same tree derives the same shape.
	if again, _ := s.derive(); again.Shape != d.Shape {
		t.Error("one tree walked twice derives two shapes")
	}
}

func keys(m map[string]*manifest.Capability) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Calls go through the accessibility interfaces: a press changes the app's label, a text set
// is read back, inserted text lands where it was put, and a call to an element that is gone
// answers not found with why.
func TestInvoke(t *testing.T) {
	s := startSession(t)
	d, doc := s.derive()
	h := desktop.NewHandler(s.bus, s.app.Name, doc, d)
	call := func(action, params string) (sdk.Result, error) {
		return h.Invoke(s.ctx, "ui."+d.AppID+"."+action, json.RawMessage(params), sdk.InvocationContext{})
	}
	text := func(action string) string {
		t.Helper()
		r, err := call(action, `{}`)
		if err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		var out struct {
			Text      string `json:"text"`
			Untrusted bool   `json:"untrusted_output"`
		}
		if err := json.Unmarshal(r.Data, &out); err != nil || !out.Untrusted {
			t.Fatalf("%s answered %s", action, r.Data)
		}
		return out.Text
	}
	if got := text("get_text_count"); got != "count: 0" {
		t.Fatalf("the label before a press: %q", got)
	}
	for range 2 {
		if _, err := call("press_increment", `{}`); err != nil {
			t.Fatal(err)
		}
	}
	if got := text("get_text_count"); got != "count: 2" {
		t.Fatalf("the label after two presses: %q", got)
	}
	if _, err := call("set_text_note", `{"text":"hello desktop"}`); err != nil {
		t.Fatal(err)
	}
	if got := text("get_text_note"); got != "hello desktop" {
		t.Fatalf("the text read back: %q", got)
	}
	if _, err := call("insert_text_note", `{"text":"dear ","position":6}`); err != nil {
		t.Fatal(err)
	}
	if got := text("get_text_note"); got != "hello dear desktop" {
		t.Fatalf("after the insert: %q", got)
	}
	r, err := call("list_elements", `{}`)
	if err != nil || !strings.Contains(string(r.Data), `"Increment"`) {
		t.Fatalf("list_elements: %s %v", r.Data, err)
	}

	// An element moved: the path no longer leads to it.
	d.Elements["ui."+d.AppID+".press_increment"] = desktop.Element{Kind: desktop.KindPress, Role: "push button", Action: "Click",
		Path: []desktop.Step{{Role: "frame", Name: "Counter"}, {Role: "filler"}, {Role: "push button", Name: "Increment", Index: 1}}}
	h = desktop.NewHandler(s.bus, s.app.Name, doc, d)
	_, err = call("press_increment", `{}`)
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != sdk.CodeNotFound || !strings.Contains(se.Reason, "not where it was") {
		t.Fatalf("a press of an element that moved: %v", err)
	}
	if got := text("get_text_count"); got != "count: 2" {
		t.Fatalf("the label after the refused press: %q", got)
	}
}

// A tree whose shape changed (a button shown) derives another shape, and its new button a
// capability of its own.
func TestShapeChanges(t *testing.T) {
	s := startSession(t)
	before, doc := s.derive()
	h := desktop.NewHandler(s.bus, s.app.Name, doc, before)
	if _, err := h.Invoke(s.ctx, "ui."+before.AppID+".toggle_enabled", json.RawMessage(`{}`), sdk.InvocationContext{}); err != nil {
		t.Fatal(err)
	}
	after, _ := s.derive()
	if after.Shape == before.Shape {
		t.Fatal("a button shown did not change the shape")
	}
	if _, ok := after.Elements["ui."+after.AppID+".press_extra"]; !ok {
		t.Fatalf("the new button has no capability: %v", after.Elements)
	}
}
