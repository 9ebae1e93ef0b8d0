package terminal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/capgate/capgate/internal/apps/terminal"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/sdk"
)

// started checks that the first line of a command's output is the pid its shell printed of
// what it started.
func started(t *testing.T, s string) {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(s, "\n", 2)[0]))
	if err != nil || pid <= 1 {
		t.Fatalf("no pid in %q", s)
	}
}

// At its timeout, the command's whole process group is killed, grandchildren too, and the call
// fails with TIMEOUT; what it wrote stays readable.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	app, _ := newApp(t)
	start := time.Now()
	m := sleeper()
	_, err := call(t, app, terminal.ExecuteID, `{"command":"sh -c 'sleep `+m+` & echo $!; wait'","timeout":500}`, alice)
	e := wantCode(t, err, sdk.CodeTimeout, "")
	if e.Code.GatewayCode() != "TIMEOUT" || e.CapabilityID != terminal.ExecuteID {
		t.Fatalf("timeout error: %+v", e)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("the call waited for the grandchild")
	}
	out, err := call(t, app, terminal.ReadOutputID, `{}`, alice)
	if err != nil {
		t.Fatal(err)
	}
	if out["status"] != "timeout" || out["exit_code"] != nil {
		t.Fatalf("read_output after a timeout: %v", out)
	}
	started(t, out["stdout"].(string))
	waitNoSleepers(t, m)
}

// When a command exits, whatever it left running in its group is killed, and the call does
// not wait for it.
func TestStragglersKilledOnExit(t *testing.T) {
	app, _ := newApp(t)
	start := time.Now()
	m := sleeper()
	out := run(t, app, cmd(`sh -c 'sleep `+m+` & echo $!'`))
	if time.Since(start) > 30*time.Second {
		t.Fatal("the call waited for the straggler")
	}
	if out["status"] != "success" {
		t.Fatalf("%v", out)
	}
	started(t, out["stdout"].(string))
	waitNoSleepers(t, m)
}

// A process that leaves the command's session and group (setsid, a daemon) no longer
// escapes: the command's pid namespace ends with it, and the call does not wait for it.
func TestEscapedProcessDoesNotOutliveTheCall(t *testing.T) {
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("no setsid")
	}
	app, _ := newApp(t)
	for _, c := range []string{`sh -c 'setsid sleep %s & echo $!; sleep 0.2; echo done'`, `setsid -f sleep %s`, `sh -c 'nohup setsid -f sleep %s >/dev/null 2>&1 & echo done'`} {
		m := sleeper()
		start := time.Now()
		out := run(t, app, cmd(fmt.Sprintf(c, m)))
		if d := time.Since(start); d > terminal.DrainGrace+5*time.Second {
			t.Fatalf("%s: the call took %v", c, d)
		}
		if out["status"] != "success" || out["truncated"] != false {
			t.Fatalf("%s: %v", c, out)
		}
		waitNoSleepers(t, m)
	}
}

func TestContextEndsTheCommand(t *testing.T) {
	app, _ := newApp(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	m := sleeper()
	_, err := callCtx(t, ctx, app, terminal.ExecuteID, cmd(`sh -c 'sleep `+m+` & echo $!; wait'`), alice)
	e := wantCode(t, err, sdk.CodeExecutionFailed, "")
	if !e.Recoverable {
		t.Errorf("a cancelled call is not recoverable: %+v", e)
	}
	out, _ := call(t, app, terminal.ReadOutputID, `{}`, alice)
	if out["status"] != "cancelled" {
		t.Fatalf("read_output after cancel: %v", out)
	}
	started(t, out["stdout"].(string))
	waitNoSleepers(t, m)

	ctx, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	_, err = callCtx(t, ctx, app, terminal.ExecuteID, cmd("sleep 60"), alice)
	wantCode(t, err, sdk.CodeTimeout, "")

	// A context already done runs nothing.
	_, err = callCtx(t, ctx, app, terminal.ExecuteID, cmd("sleep 60"), alice)
	wantCode(t, err, sdk.CodeTimeout, "")
}

func TestOutputCapped(t *testing.T) {
	app, _ := newApp(t)
	for _, tt := range []struct{ command, stream, other string }{
		{"head -c 3000000 /dev/zero", "stdout", "stderr"},
		{"sh -c 'head -c 3000000 /dev/zero >&2'", "stderr", "stdout"},
	} {
		out := run(t, app, cmd(tt.command))
		if n := len(out[tt.stream].(string)); n != terminal.MaxOutputBytes || out["truncated"] != true || out[tt.other] != "" || out["status"] != "success" {
			t.Fatalf("%s: %d bytes of %s, %v", tt.command, n, tt.stream, out["truncated"])
		}
	}
	if out := run(t, app, cmd("head -c 1000 /dev/zero")); out["truncated"] != false || len(out["stdout"].(string)) != 1000 {
		t.Fatalf("small output: truncated %v", out["truncated"])
	}
}

func TestOutputMadeValidUTF8(t *testing.T) {
	app, _ := newApp(t)
	out := run(t, app, cmd(`printf '\377\376ok\303'`))
	s := out["stdout"].(string)
	if !utf8.ValidString(s) || !strings.Contains(s, "ok") || !strings.Contains(s, "\uFFFD") {
		t.Fatalf("stdout %q", s)
	}
}

func TestCwd(t *testing.T) {
	app, root := newApp(t)
	real, _ := filepath.EvalSymlinks(root)
	outside := t.TempDir()
	for _, d := range []string{"sub/deep", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"out": outside, "up": "..", "etc": "/etc", "in": filepath.Join(root, "other"), "rel": "sub/deep"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	ok := map[string]string{
		"sub":                              real + "/sub",
		"sub/deep":                         real + "/sub/deep",
		"./sub/../sub/deep/..":             real + "/sub",
		real + "/sub/deep":                 real + "/sub/deep",
		root + "/sub":                      real + "/sub",
		".":                                real,
		"in":                               real + "/other",
		"rel":                              real + "/sub/deep",
		"sub/../../" + filepath.Base(root): real, // leaves and comes back: it resolves inside
	}
	for cwd, want := range ok {
		out := run(t, app, `{"command":"pwd","cwd":"`+cwd+`"}`)
		if out["stdout"] != want+"\n" {
			t.Errorf("cwd %s: pwd %q, want %s", cwd, out["stdout"], want)
		}
	}
	for cwd, rule := range map[string]string{
		"..":               "inside",
		"../..":            "inside",
		"sub/../..":        "inside",
		"/":                "inside",
		"/etc":             "inside",
		outside:            "inside",
		"/nonexistent/xyz": "inside", // nothing is asked of the filesystem outside the root
		"out":              "inside",
		"up":               "inside",
		"etc":              "inside",
		"out/x/..":         "inside",
		"missing":          "existing",
		"file":             "existing",
		"sub/\x00":         "NUL",
	} {
		_, err := invoke(t, context.Background(), app, terminal.ExecuteID, `{"command":"touch MARK","cwd":`+quote(cwd)+`}`, alice)
		e := wantCode(t, err, sdk.CodeInvalidParams, "cwd")
		if !strings.Contains(e.Problems[0].Rule, rule) {
			t.Errorf("cwd %q: rule %q, want it to say %s", cwd, e.Problems[0].Rule, rule)
		}
		if strings.Contains(e.Error(), outside) || strings.Contains(e.Error(), real) {
			t.Errorf("cwd %q: the error names a folder: %v", cwd, e)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "MARK")); !os.IsNotExist(err) {
		t.Fatal("a command ran outside the root")
	}
}

// A root given through a symbolic link: the link's path and the resolved path both work.
func TestRootThroughLink(t *testing.T) {
	dir := t.TempDir()
	realRoot := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(realRoot, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(realRoot, link); err != nil {
		t.Fatal(err)
	}
	app, err := terminal.New(loadDoc(t), link, terminal.Options{Sandbox: sandboxtest.Open(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	want, _ := filepath.EvalSymlinks(realRoot)
	for _, cwd := range []string{link + "/sub", want + "/sub", "sub"} {
		if out := run(t, app, `{"command":"pwd","cwd":`+quote(cwd)+`}`); out["stdout"] != want+"/sub\n" {
			t.Errorf("cwd %s: %v", cwd, out["stdout"])
		}
	}
}

func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20:
			b = append(b, []byte(`\u00`+strconv.FormatInt(int64(r)>>4, 16)+strconv.FormatInt(int64(r)&15, 16))...)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return string(append(b, '"'))
}
