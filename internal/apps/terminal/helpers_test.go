package terminal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/terminal"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

func loadDoc(t testing.TB) *manifest.Document {
	t.Helper()
	doc, err := manifest.Load([]byte(terminal.Manifest))
	if err != nil {
		t.Fatalf("Load(Manifest) = %v", err)
	}
	return doc
}

// newApp returns a terminal rooted in a fresh temporary folder, closed at the test's end.
func newApp(t testing.TB) (*terminal.App, string) {
	t.Helper()
	root := t.TempDir()
	app, err := terminal.New(loadDoc(t), root, terminal.Options{Sandbox: sandboxtest.Open(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	return app, root
}

const alice = "client-alice"

// call validates params as the gateway does, then invokes the capability as client, with a
// generous deadline.
func call(t testing.TB, app *terminal.App, id, params, client string) (map[string]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return callCtx(t, ctx, app, id, params, client)
}

func callCtx(t testing.TB, ctx context.Context, app *terminal.App, id, params, client string) (map[string]any, error) {
	t.Helper()
	if err := sdk.DefaultValidateParams(app.Manifest(), id, json.RawMessage(params)); err != nil {
		return nil, err
	}
	return invoke(t, ctx, app, id, params, client)
}

// invoke calls the capability without the gateway's schema check, as a caller that skips
// the gateway would, and checks a success against the declared returns schema.
func invoke(t testing.TB, ctx context.Context, app *terminal.App, id, params, client string) (map[string]any, error) {
	t.Helper()
	ic := sdk.InvocationContext{Source: sdk.SourceAgent, Timestamp: time.Now(), AppID: terminal.AppID, ClientID: client}
	res, err := app.Invoke(ctx, id, json.RawMessage(params), ic)
	if err != nil {
		return nil, err
	}
	if !res.Success {
		t.Errorf("Invoke(%s) without error but not successful", id)
		return nil, errors.New("not successful")
	}
	if s := app.Manifest().ReturnsSchema(id); s != nil {
		if err := s.ValidateJSON(res.Data, "result"); err != nil {
			// Errorf, not Fatalf: invoke runs on other goroutines too.
			t.Errorf("the result of %s breaks its returns schema: %v\n%.500s", id, err, res.Data)
			return nil, err
		}
	}
	var out map[string]any
	if err := json.Unmarshal(res.Data, &out); err != nil {
		t.Errorf("the result of %s is not a JSON object: %v", id, err)
		return nil, err
	}
	return out, nil
}

// run runs command as alice and fails the test on error.
func run(t testing.TB, app *terminal.App, params string) map[string]any {
	t.Helper()
	out, err := call(t, app, terminal.ExecuteID, params, alice)
	if err != nil {
		t.Fatalf("execute_command %s = %v", params, err)
	}
	return out
}

// cmd returns execute_command params for command.
func cmd(command string) string {
	b, _ := json.Marshal(map[string]any{"command": command})
	return string(b)
}

// wantCode checks that err is an *sdk.Error with code, and, for invalid params, a problem at
// path. It returns the error.
func wantCode(t testing.TB, err error, code sdk.Code, path string) *sdk.Error {
	t.Helper()
	var e *sdk.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	if code == sdk.CodeInvalidParams && path != "-" {
		found := false
		for _, p := range e.Problems {
			if p.Path == path {
				found = true
			}
		}
		if !found {
			t.Fatalf("problems = %v, want one at %q", e.Problems, path)
		}
	}
	return e
}

func num(t testing.TB, v any) int64 {
	t.Helper()
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%v is not a number", v)
	}
	return int64(f)
}

// gone reports whether the process pid has ended: it does not exist, or is a zombie waiting
// for a reaper that is not the test.
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

var sleeperN atomic.Int64

// sleeper returns a duration for sleep that names the test's process among the host's: the
// commands run in a pid namespace of their own, so the pids they print are not the host's.
func sleeper() string {
	return fmt.Sprintf("60.%d%05d", os.Getpid()%1000, sleeperN.Add(1))
}

// sleepers returns the host pids of the live processes running sleep with marker.
func sleepers(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		argv := strings.Split(string(b), "\x00")
		// The sandbox runs a program by its path: argv[0] is /usr/bin/sleep or sleep.
		if err == nil && len(argv) == 3 && filepath.Base(argv[0]) == "sleep" && argv[1] == marker && !gone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitSleepers waits up to 10 s for n processes sleeping with marker to run.
func waitSleepers(t testing.TB, marker string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if len(sleepers(marker)) >= n {
			return
		}
	}
	t.Fatalf("%d processes sleep with %s, want %d", len(sleepers(marker)), marker, n)
}

// waitNoSleepers waits up to 10 s for every process sleeping with marker to end.
func waitNoSleepers(t testing.TB, marker string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if len(sleepers(marker)) == 0 {
			return
		}
	}
	for _, pid := range sleepers(marker) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Fatalf("processes sleeping with %s still run", marker)
}

// eventually polls read_output of id until cond holds, for up to 10 s.
func eventually(t testing.TB, app *terminal.App, id int64, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	var out map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		out, err = call(t, app, terminal.ReadOutputID, `{"id":`+strconv.FormatInt(id, 10)+`}`, alice)
		if err != nil {
			t.Fatal(err)
		}
		if cond(out) {
			return out
		}
	}
	t.Fatalf("read_output never met the condition: %v", out)
	return nil
}
