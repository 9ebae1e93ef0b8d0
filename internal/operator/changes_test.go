package operator_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/plugin"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
)

// The operator's changes: registering an app and adding a client widen what agents may do,
// so they are recorded before they are made and not made unrecorded; a client that breaks
// its rules is refused before anything is recorded; a removal is made unrecorded; a change the
// Service was not given what it needs for is ErrUnavailable.
func TestOperatorChanges(t *testing.T) {
	st, w := open(t)
	ctx := context.Background()
	reg, err := registry.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := &toolserver.Env{Store: st, Registry: reg, DataDir: t.TempDir(), Version: "test", Sandbox: sandboxtest.Open(t)}
	var warned []string
	s := &operator.Service{Audit: w, Clients: st, Registry: reg, ToolServers: env,
		Warn: func(action string, err error) { warned = append(warned, action) }}
	by := operator.Actor{ID: "cli:test", Who: "the operator", Where: "in the test"}
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "notes", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}

	app, err := s.RegisterApp(ctx, by, raw, "")
	if err != nil || app.ID.String() != "org.example.notes" || app.Alias != "notes" {
		t.Fatalf("register: %+v %v", app, err)
	}
	key, c, err := s.AddClient(ctx, by, operator.NewClient{Name: "agent", Trust: "user", RequireToken: true})
	if err != nil || !strings.HasPrefix(key, "cgk_") || c.KeyHash != operator.KeyHash(key) || !c.RequireToken {
		t.Fatalf("add client: %q %+v %v", key, c, err)
	}
	if _, _, err := s.AddClient(ctx, by, operator.NewClient{Name: "agent", Trust: "user"}); !errors.Is(err, store.ErrExists) {
		t.Errorf("the same name again: %v", err)
	}
	uid := -1
	for name, n := range map[string]operator.NewClient{
		"empty name":   {Trust: "user"},
		"look-alike":   {Name: "аgent", Trust: "user"},
		"trust":        {Name: "x", Trust: "system"},
		"trust case":   {Name: "x", Trust: "User"},
		"negative uid": {Name: "x", Trust: "user", UnixUID: &uid},
	} {
		if _, _, err := s.AddClient(ctx, by, n); !errors.Is(err, operator.ErrInvalidClient) {
			t.Errorf("%s: %v, want ErrInvalidClient", name, err)
		}
	}
	if _, err := s.ChangeClient(ctx, by, "agent", operator.ClientDisable); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChangeClient(ctx, by, "agent", "delete"); !errors.Is(err, operator.ErrInvalidClient) {
		t.Errorf("an unknown change: %v", err)
	}
	if err := s.RemoveToolServer(ctx, by, "Bad_Name"); !errors.Is(err, toolserver.ErrNotToolServer) {
		t.Errorf("a bad tool server name: %v", err)
	}
	var got []string
	for _, r := range records(t, st) {
		got = append(got, summary(r))
	}
	want := []string{
		"app.register|decision|register requested||cli:test|", "app.register|outcome|success||cli:test|",
		"client.add|decision|add requested||cli:test|", "client.add|outcome|success||cli:test|",
		"client.add|decision|add requested||cli:test|", "client.add|outcome|error|INVALID_REQUEST|cli:test|",
		"client.disable|decision|disable requested||cli:test|", "client.disable|outcome|success||cli:test|",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Unrecordable: the widenings are not made, the removal is (and is said to be unrecorded).
	u := &operator.Service{Audit: failing{}, Clients: st, Registry: reg, ToolServers: env,
		Warn: func(action string, err error) { warned = append(warned, action) }}
	other := strings.ReplaceAll(string(raw), "org.example.notes", "org.example.other")
	if _, err := u.RegisterApp(ctx, by, []byte(other), ""); !errors.Is(err, operator.ErrNotRecorded) {
		t.Errorf("register unrecorded: %v", err)
	}
	if _, ok := reg.App("org.example.other"); ok {
		t.Error("an app was registered unrecorded")
	}
	if _, _, err := u.AddClient(ctx, by, operator.NewClient{Name: "quiet", Trust: "user"}); !errors.Is(err, operator.ErrNotRecorded) {
		t.Errorf("add client unrecorded: %v", err)
	}
	if _, err := st.ClientByName(ctx, "quiet"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a client was added unrecorded: %v", err)
	}
	if err := u.RemoveToolServer(ctx, by, "nosuch"); !errors.Is(err, toolserver.ErrNotToolServer) {
		t.Errorf("remove unrecorded: %v", err)
	}
	if len(warned) == 0 || warned[len(warned)-1] != operator.ActionToolRemove {
		t.Errorf("the unrecorded removal was not told: %q", warned)
	}

	// What the Service lacks.
	none := &operator.Service{Audit: w}
	if _, err := none.RegisterApp(ctx, by, raw, ""); !errors.Is(err, operator.ErrUnavailable) {
		t.Errorf("register without a registry: %v", err)
	}
	if _, err := none.ApprovePlugin(ctx, by, "org.example.notes", ""); !errors.Is(err, operator.ErrUnavailable) {
		t.Errorf("approve without plugins: %v", err)
	}
	if _, err := none.AcceptTools(ctx, by, "x", nil, false); !errors.Is(err, operator.ErrUnavailable) {
		t.Errorf("accept without tool servers: %v", err)
	}
}

// A plugin change names the app in its outcome; one whose app id is not one is refused before
// anything is recorded; with no audit log at all (a data folder no gateway has run on) it is
// made as it is.
func TestPluginChanges(t *testing.T) {
	st, w := open(t)
	ctx := context.Background()
	h := &plugin.Host{DataDir: t.TempDir()}
	s := &operator.Service{Audit: w, Plugins: h}
	by := operator.Actor{ID: "cli:test", Who: "the operator", Where: "in the test"}
	if _, err := s.ApprovePlugin(ctx, by, "org.example.notes", ""); !errors.Is(err, plugin.ErrNoPending) {
		t.Errorf("approve with nothing pending: %v", err)
	}
	for _, bad := range []string{"", "Org.Example", "org..x", strings.Repeat("a.", 200) + "a"} {
		if _, err := s.ApprovePlugin(ctx, by, bad, ""); !errors.Is(err, plugin.ErrNoPending) {
			t.Errorf("approve %q: %v", bad, err)
		}
		if err := s.RemovePlugin(ctx, by, bad); !errors.Is(err, plugin.ErrNotInstalled) {
			t.Errorf("remove %q: %v", bad, err)
		}
	}
	if err := s.RemovePlugin(ctx, by, "org.example.notes"); !errors.Is(err, plugin.ErrNotInstalled) {
		t.Errorf("remove what is not installed: %v", err)
	}
	var got []string
	for _, r := range records(t, st) {
		got = append(got, summary(r)+"|"+r.App)
	}
	want := "plugin.approve|decision|approve requested||cli:test||org.example.notes\n" +
		"plugin.approve|outcome|error|INVALID_REQUEST|cli:test||org.example.notes\n" +
		"plugin.remove|decision|remove requested||cli:test||org.example.notes\n" +
		"plugin.remove|outcome|error|INVALID_REQUEST|cli:test||org.example.notes"
	if strings.Join(got, "\n") != want {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	n := &operator.Service{Plugins: h, NoAuditLog: true}
	if err := n.RemovePlugin(ctx, by, "org.example.notes"); !errors.Is(err, plugin.ErrNotInstalled) {
		t.Errorf("remove with no log: %v", err)
	}
}
