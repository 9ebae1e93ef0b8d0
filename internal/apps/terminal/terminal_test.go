package terminal_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/apps/terminal"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

func TestManifest(t *testing.T) {
	doc := loadDoc(t)
	m := doc.Manifest()
	if m.AppID != terminal.AppID {
		t.Fatalf("app_id = %s", m.AppID)
	}
	want := []struct {
		id, perm   string
		risk       manifest.Risk
		sideEffect manifest.SideEffect
	}{
		{terminal.ExecuteID, "app.terminal.execute", manifest.RiskHigh, manifest.SideEffectSystem},
		{terminal.GetCwdID, "app.terminal.read_output", manifest.RiskMedium, manifest.SideEffectRead},
		{terminal.ReadOutputID, "app.terminal.read_output", manifest.RiskMedium, manifest.SideEffectRead},
		{terminal.WriteInputID, "app.terminal.write_input", manifest.RiskMedium, manifest.SideEffectWrite},
		{terminal.HistoryID, "app.terminal.history", manifest.RiskLow, manifest.SideEffectRead},
	}
	if len(m.Capabilities) != len(want) {
		t.Fatalf("%d capabilities, want %d", len(m.Capabilities), len(want))
	}
	for _, w := range want {
		c := m.Capability(w.id)
		if c == nil {
			t.Fatalf("%s missing", w.id)
		}
		if c.Permission != w.perm || c.Risk != w.risk || c.SideEffects != w.sideEffect {
			t.Errorf("%s: permission %s risk %s side effects %s", w.id, c.Permission, c.Risk, c.SideEffects)
		}
		if c.AuthLevel != manifest.AuthUser {
			t.Errorf("%s: auth_level %s", w.id, c.AuthLevel)
		}
	}
	ex := m.Capability(terminal.ExecuteID)
	if ex.Reversibility != manifest.Irreversible || ex.TimeoutMS != terminal.CapabilityTimeoutMS {
		t.Errorf("execute_command: reversibility %s timeout_ms %d", ex.Reversibility, ex.TimeoutMS)
	}
	// The gateway checks commands on the param classified "format": "command", and
	// allowed_paths on the cwd it runs in ("format": "cwd") and on its words.
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(ex.Parameters, &s); err != nil {
		t.Fatal(err)
	}
	if s.Properties["cwd"]["format"] != "cwd" || s.Properties["command"]["format"] != "command" || s.Properties["stdin"]["format"] != "text" {
		t.Errorf("execute_command params: %v", s.Properties)
	}
}

func TestNew(t *testing.T) {
	doc := loadDoc(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := terminal.Options{Sandbox: sandboxtest.Open(t)}
	for name, root := range map[string]string{"empty": "", "missing": filepath.Join(dir, "nope"), "file": file} {
		if _, err := terminal.New(doc, root, o); err == nil {
			t.Errorf("New with a %s root succeeded", name)
		}
	}
	if _, err := terminal.New(nil, dir, o); err == nil {
		t.Error("New without a manifest succeeded")
	}
	if _, err := terminal.New(doc, dir, terminal.Options{}); err == nil {
		t.Error("New without a sandbox succeeded")
	}
}

func TestUnknownCapability(t *testing.T) {
	app, _ := newApp(t)
	_, err := app.Invoke(context.Background(), "terminal.org.capgate.terminal.nope", nil, sdk.InvocationContext{})
	wantCode(t, err, sdk.CodeNotFound, "")
}

func TestGetCwd(t *testing.T) {
	app, root := newApp(t)
	out, err := call(t, app, terminal.GetCwdID, `{}`, alice)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(root)
	if out["cwd"] != real {
		t.Fatalf("cwd = %v, want %s", out["cwd"], real)
	}
	// The default folder is the one commands run in.
	if got := run(t, app, cmd("pwd"))["stdout"]; got != real+"\n" {
		t.Fatalf("pwd = %q", got)
	}
	_, err = invoke(t, context.Background(), app, terminal.GetCwdID, `{"path":"/"}`, alice)
	wantCode(t, err, sdk.CodeInvalidParams, "")
}

// Each rule of the params, through the gateway's schema check and, for a caller that skips
// it, through the app's own.
func TestParamsRules(t *testing.T) {
	app, _ := newApp(t)
	long := strings.Repeat("a", terminal.MaxCommandBytes+1)
	tests := []struct {
		name, id, params, path string
	}{
		{"command missing", terminal.ExecuteID, `{}`, "command"},
		{"command empty", terminal.ExecuteID, `{"command":""}`, "command"},
		{"command not a string", terminal.ExecuteID, `{"command":["ls"]}`, "-"},
		{"command too long", terminal.ExecuteID, `{"command":"` + long + `"}`, "command"},
		{"timeout zero", terminal.ExecuteID, `{"command":"true","timeout":0}`, "timeout"},
		{"timeout too long", terminal.ExecuteID, `{"command":"true","timeout":300001}`, "timeout"},
		{"timeout fraction", terminal.ExecuteID, `{"command":"true","timeout":1.5}`, "timeout"},
		{"timeout string", terminal.ExecuteID, `{"command":"true","timeout":"5"}`, "-"},
		{"cwd empty", terminal.ExecuteID, `{"command":"true","cwd":""}`, "cwd"},
		{"cwd too long", terminal.ExecuteID, `{"command":"true","cwd":"` + strings.Repeat("d", 4097) + `"}`, "cwd"},
		{"stdin too long", terminal.ExecuteID, `{"command":"true","stdin":"` + strings.Repeat("i", terminal.MaxStdinBytes+1) + `"}`, "stdin"},
		{"unknown member", terminal.ExecuteID, `{"command":"true","shell":true}`, "-"},
		{"env member", terminal.ExecuteID, `{"command":"true","env":{"LD_PRELOAD":"x"}}`, "-"},
		{"not an object", terminal.ExecuteID, `["true"]`, "-"},
		{"id zero", terminal.ReadOutputID, `{"id":0}`, "id"},
		{"id negative", terminal.ReadOutputID, `{"id":-1}`, "id"},
		{"id too large", terminal.ReadOutputID, `{"id":9007199254740992}`, "id"},
		{"write id missing", terminal.WriteInputID, `{"input":"x"}`, "id"},
		{"write input too long", terminal.WriteInputID, `{"id":1,"input":"` + strings.Repeat("i", terminal.MaxStdinBytes+1) + `"}`, "input"},
		{"count zero", terminal.HistoryID, `{"count":0}`, "count"},
		{"count too many", terminal.HistoryID, `{"count":101}`, "count"},
		{"offset too far", terminal.HistoryID, `{"offset":101}`, "offset"},
		{"get_cwd member", terminal.GetCwdID, `{"x":1}`, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sdk.DefaultValidateParams(app.Manifest(), tt.id, json.RawMessage(tt.params))
			wantCode(t, err, sdk.CodeInvalidParams, "-")
			_, err = invoke(t, context.Background(), app, tt.id, tt.params, alice)
			wantCode(t, err, sdk.CodeInvalidParams, tt.path)
		})
	}
	if out, _ := call(t, app, terminal.HistoryID, `{}`, alice); num(t, out["total"]) != 0 {
		t.Fatalf("a refused call ran: %v", out)
	}
}

func TestArgvReachesTheChildExactly(t *testing.T) {
	app, _ := newApp(t)
	tests := []struct {
		command string
		want    []string
	}{
		{`printf '[%s]\n' 'a b' "c  d" e\ f '' "it's" 'x"y' "back\\slash" é`, []string{"a b", "c  d", "e f", "", "it's", `x"y`, `back\slash`, "é"}},
		// No globbing, no tilde, no braces, no expansion of what a shell would: the words as
		// written.
		{`printf '[%s]\n' * ~ {a,b} '$HOME' "#x" =y`, []string{"*", "~", "{a,b}", "$HOME", "#x", "=y"}},
		{"printf '[%s]\\n' \"tab\there\"", []string{"tab\there"}},
	}
	for _, tt := range tests {
		out := run(t, app, cmd(tt.command))
		var want strings.Builder
		for _, w := range tt.want {
			want.WriteString("[" + w + "]\n")
		}
		if out["stdout"] != want.String() || out["status"] != "success" || num(t, out["exit_code"]) != 0 {
			t.Errorf("%s:\n got %q (%v)\nwant %q", tt.command, out["stdout"], out["status"], want.String())
		}
	}
}

// A command a shell would read as more than one command, or with expansions, is refused
// before anything runs.
func TestShellSyntaxRefusedBeforeRunning(t *testing.T) {
	app, root := newApp(t)
	for _, c := range []string{
		"touch MARK; rm x", "touch MARK && true", "touch MARK || true", "touch MARK | cat",
		"touch MARK > f", "touch MARK < f", "touch MARK >> f", "touch MARK &", "echo $(touch MARK)",
		"echo `touch MARK`", `echo "$(touch MARK)"`, `echo "${PATH}"`, "echo $HOME", "touch MARK\nls",
		"touch MARK\rls", "(touch MARK)", "touch MARK 2>&1", "touch 'MARK", `touch MARK\`,
		"touch MARK \x00",
	} {
		_, err := invoke(t, context.Background(), app, terminal.ExecuteID, cmd(c), alice)
		if err == nil {
			t.Fatalf("%q ran", c)
		}
		e := wantCode(t, err, sdk.CodeInvalidParams, "command")
		if strings.Contains(e.Error(), "MARK") {
			t.Errorf("the error echoes the command: %v", e)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "MARK")); !os.IsNotExist(err) {
		t.Fatal("a refused command ran")
	}
	if out, _ := call(t, app, terminal.HistoryID, `{}`, alice); num(t, out["total"]) != 0 {
		t.Fatalf("refused commands are in the history: %v", out)
	}
}

func TestEnvironmentScrubbed(t *testing.T) {
	app, root := newApp(t)
	t.Setenv("CAPGATE_SECRET", "hunter2")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hunter3")
	t.Setenv("LD_PRELOAD", "/tmp/evil.so")
	// capgate's own PATH is never searched: a fake env first on it is not run.
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "env"), []byte("#!/bin/sh\necho FAKE\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+":"+os.Getenv("PATH"))
	real, _ := filepath.EvalSymlinks(root)
	for _, c := range []string{"env", "/usr/bin/env"} {
		out := run(t, app, cmd(c))
		got := strings.Split(strings.TrimSpace(out["stdout"].(string)), "\n")
		sort.Strings(got)
		// PWD is the working folder, which the sandbox sets.
		want := []string{"HOME=" + real, "LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin", "PWD=" + real, "TERM=dumb"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: environment\n%s\nwant\n%s", c, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestProgramLookup(t *testing.T) {
	app, root := newApp(t)
	if err := os.WriteFile(filepath.Join(root, "tool"), []byte("#!/bin/sh\necho local\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "plain"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A bare name is looked up on the terminal's PATH only, never in the working folder.
	for _, c := range []string{"tool", "no-such-program-xyz", "plain", "./plain", "..", ".", "/", "/etc", "''"} {
		_, err := call(t, app, terminal.ExecuteID, cmd(c), alice)
		wantCode(t, err, sdk.CodeInvalidParams, "command")
	}
	// A path names the program itself, relative to the working folder.
	if out := run(t, app, cmd("./tool")); out["stdout"] != "local\n" {
		t.Fatalf("./tool: %v", out)
	}
	if out := run(t, app, cmd(filepath.Join(root, "tool"))); out["stdout"] != "local\n" {
		t.Fatalf("absolute tool: %v", out)
	}
}

func TestExitStatus(t *testing.T) {
	app, _ := newApp(t)
	out := run(t, app, cmd(`sh -c 'echo out; echo err >&2; exit 3'`))
	if out["status"] != "error" || num(t, out["exit_code"]) != 3 || out["stdout"] != "out\n" || out["stderr"] != "err\n" || out["truncated"] != false {
		t.Fatalf("exit 3: %v", out)
	}
	out = run(t, app, cmd(`sh -c 'kill -9 $$'`))
	if out["status"] != "error" || num(t, out["exit_code"]) != 128+9 {
		t.Fatalf("killed by SIGKILL: %v", out)
	}
	if out := run(t, app, cmd("true")); out["status"] != "success" || num(t, out["exit_code"]) != 0 || num(t, out["duration_ms"]) < 0 || num(t, out["id"]) < 1 {
		t.Fatalf("true: %v", out)
	}
}

func TestStdinAndCapture(t *testing.T) {
	app, _ := newApp(t)
	out := run(t, app, `{"command":"cat","stdin":"hello\nworld"}`)
	if out["stdout"] != "hello\nworld" {
		t.Fatalf("cat: %v", out)
	}
	big := strings.Repeat("x", terminal.MaxStdinBytes)
	out = run(t, app, `{"command":"wc -c","stdin":"`+big+`"}`)
	if strings.TrimSpace(out["stdout"].(string)) != "65536" {
		t.Fatalf("wc -c: %v", out)
	}
	// A command that never reads its input does not hang the call, even with more input than
	// a pipe holds.
	if out := run(t, app, `{"command":"true","stdin":"`+big+`"}`); out["status"] != "success" {
		t.Fatalf("true: %v", out)
	}
	out = run(t, app, `{"command":"sh -c 'echo out; echo err >&2'","capture_output":false}`)
	if out["stdout"] != "" || out["stderr"] != "" || out["status"] != "success" {
		t.Fatalf("capture_output false: %v", out)
	}
	read, err := call(t, app, terminal.ReadOutputID, `{}`, alice)
	if err != nil || read["output_kept"] != false || read["stdout"] != "" {
		t.Fatalf("read_output of an uncaptured command: %v, %v", read, err)
	}
}
