package python_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/python"
	"github.com/capgate/capgate/internal/sandbox/sandboxtest"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

type result struct {
	Status     string  `json:"status"`
	Output     string  `json:"output"`
	Truncated  bool    `json:"truncated"`
	Error      *string `json:"error"`
	DurationMS int64   `json:"duration_ms"`
	Steps      uint64  `json:"steps"`
}

func (r result) err() string {
	if r.Error == nil {
		return ""
	}
	return *r.Error
}

func loadDoc(t testing.TB) *manifest.Document {
	t.Helper()
	doc, err := manifest.Load([]byte(python.Manifest))
	if err != nil {
		t.Fatalf("manifest.Load: %v", err)
	}
	return doc
}

func newApp(t testing.TB, dir string) *python.App {
	t.Helper()
	app, err := python.New(loadDoc(t), dir, python.Options{Sandbox: sandboxtest.Open(t)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { app.Close() })
	return app
}

// call validates params as the gateway does, invokes, and checks a result against the
// capability's returns schema.
func callAs(ctx context.Context, t testing.TB, app *python.App, client, id string, params any) (result, error) {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if err := sdk.DefaultValidateParams(app.Manifest(), id, raw); err != nil {
		return result{}, err
	}
	res, err := app.Invoke(ctx, id, raw, sdk.InvocationContext{Source: sdk.SourceAgent, AppID: python.AppID, ClientID: client, Timestamp: time.Now()})
	if err != nil {
		return result{}, err
	}
	if !res.Success {
		t.Fatalf("%s: Success false without an error", id)
	}
	if err := app.Manifest().ReturnsSchema(id).ValidateJSON(res.Data, ""); err != nil {
		t.Fatalf("%s: result breaks the returns schema: %v\n%s", id, err, res.Data)
	}
	var r result
	if err := json.Unmarshal(res.Data, &r); err != nil {
		t.Fatal(err)
	}
	return r, nil
}

func call(t testing.TB, app *python.App, id string, params any) (result, error) {
	t.Helper()
	return callAs(context.Background(), t, app, "agent-1", id, params)
}

func run(t testing.TB, app *python.App, code string) result {
	t.Helper()
	r, err := call(t, app, python.ExecuteScriptID, map[string]any{"code": code, "timeout": 30000})
	if err != nil {
		t.Fatalf("execute_script: %v", err)
	}
	return r
}

func code(err error) sdk.Code {
	var e *sdk.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestManifest(t *testing.T) {
	doc := loadDoc(t)
	m := doc.Manifest()
	if m.AppID != python.AppID {
		t.Errorf("app_id %q", m.AppID)
	}
	want := map[string]struct {
		perm, risk, effects string
	}{
		python.ExecuteScriptID: {"app.python.execute", "high", "none"},
		python.ExecuteFileID:   {"app.python.execute", "high", "read"},
		python.ReadOutputID:    {"app.python.read_output", "medium", "read"},
	}
	if len(m.Capabilities) != len(want) {
		t.Fatalf("%d capabilities, want %d", len(m.Capabilities), len(want))
	}
	for id, w := range want {
		c := m.Capability(id)
		if c == nil {
			t.Fatalf("no capability %s", id)
		}
		if c.Permission != w.perm || string(c.Risk) != w.risk || string(c.SideEffects) != w.effects {
			t.Errorf("%s: permission %s risk %s side effects %s, want %+v", id, c.Permission, c.Risk, c.SideEffects, w)
		}
		if c.AuthLevel != "user" || c.Idempotency != "natural" || c.TimeoutMS == 0 {
			t.Errorf("%s: auth level %s, idempotency %s, timeout_ms %d", id, c.AuthLevel, c.Idempotency, c.TimeoutMS)
		}
	}
	// Agents address calls by alias and method name: the action is the document's method.
	for id, method := range map[string]string{python.ExecuteScriptID: "execute_script", python.ExecuteFileID: "execute_file", python.ReadOutputID: "read_output"} {
		if id != "python."+python.AppID+"."+method {
			t.Errorf("%s is not python.%s.%s", id, python.AppID, method)
		}
	}
	// The timeout the gateway gives a call covers the longest script and the sandbox's start.
	if ms := m.Capability(python.ExecuteScriptID).TimeoutMS; ms <= python.MaxTimeout.Milliseconds() {
		t.Errorf("timeout_ms %d does not cover the longest timeout param", ms)
	}
}

func TestHelloWorld(t *testing.T) {
	app := newApp(t, "")
	// The document's example, in Starlark: no f-strings, so % formatting.
	r, err := call(t, app, python.ExecuteScriptID, map[string]any{
		"code":    "print(\"Hello from Python!\")\nresult = 2 + 2\nprint(\"Result: %d\" % result)",
		"timeout": 5000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "success" || r.Output != "Hello from Python!\nResult: 4\n" || r.Error != nil || r.Steps == 0 || r.Truncated {
		t.Fatalf("got %+v", r)
	}
	// The default timeout applies when none is given.
	r, err = call(t, app, python.ExecuteScriptID, map[string]any{"code": "print(1)"})
	if err != nil || r.Status != "success" || r.Output != "1\n" {
		t.Fatalf("without timeout: %+v, %v", r, err)
	}
}

func TestPythonLikeFeatures(t *testing.T) {
	app := newApp(t, "")
	r := run(t, app, `
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

total = 0
i = 0
while i < 10:
    total += i
    i += 1
for w in ["a", "b"]:
    total += len(w)
s = set([1, 2, 2, 3])
print(fib(15), total, len(s), math.sqrt(16.0), json.encode({"k": [1, 2]}), json.decode("[1, {\"a\": null}]"))
print("%s and %r" % ("x", "y"), "{} {}".format(1, 2), sorted([3, 1, 2]), [x * x for x in range(4)])
`)
	want := "610 47 3 4.0 {\"k\":[1,2]} [1, {\"a\": None}]\nx and \"y\" 1 2 [1, 2, 3] [0, 1, 4, 9]\n"
	if r.Status != "success" || r.Output != want {
		t.Fatalf("got %+v\nwant output %q", r, want)
	}
}

func TestStepLimit(t *testing.T) {
	app := newApp(t, "")
	for name, src := range map[string]string{
		"while":     "x = 0\nwhile True:\n    x += 1\n",
		"for range": "for i in range(1 << 62):\n    pass\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, app, src)
			if r.Status != "error" || !strings.Contains(r.err(), "step limit reached") || !strings.HasPrefix(r.err(), "<script>:") {
				t.Fatalf("got %+v", r)
			}
			if r.Steps < python.MaxSteps {
				t.Errorf("stopped after %d steps", r.Steps)
			}
		})
	}
}

// slowLoop spends time in built-ins, few steps each, so the timeout comes before the step
// limit.
const slowLoop = "l = list(range(10000))\nprint(\"started\")\nwhile True:\n    sorted(l, reverse=True)\n"

func TestTimeout(t *testing.T) {
	app := newApp(t, "")
	t.Run("timeout param", func(t *testing.T) {
		_, err := call(t, app, python.ExecuteScriptID, map[string]any{"code": slowLoop, "timeout": 300})
		var e *sdk.Error
		if !errors.As(err, &e) || e.Code != sdk.CodeTimeout || e.CapabilityID != python.ExecuteScriptID || e.ElapsedMS < 300 {
			t.Fatalf("got %#v", err)
		}
		r, err := call(t, app, python.ReadOutputID, map[string]any{})
		if err != nil || r.Status != "timeout" || r.Output != "started\n" || r.Error == nil {
			t.Fatalf("read_output after a timeout: %+v, %v", r, err)
		}
	})
	t.Run("stuck in a built-in", func(t *testing.T) {
		// str() of a list nested 100000 deep is quadratic: one built-in call of seconds,
		// where the interpreter never sees its cancellation. The process is killed.
		src := "x = []\nfor i in range(100000):\n    x = [x]\nprint(\"built\")\ns = str(x)\n"
		_, err := call(t, app, python.ExecuteScriptID, map[string]any{"code": src, "timeout": 400})
		if code(err) != sdk.CodeTimeout {
			t.Fatalf("got %v", err)
		}
		r, _ := call(t, app, python.ReadOutputID, map[string]any{})
		if r.Status != "timeout" {
			t.Fatalf("read_output: %+v", r)
		}
	})
	t.Run("call deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := callAs(ctx, t, app, "agent-1", python.ExecuteScriptID, map[string]any{"code": slowLoop, "timeout": 60000})
		if code(err) != sdk.CodeTimeout {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		_, err := callAs(ctx, t, app, "agent-1", python.ExecuteScriptID, map[string]any{"code": slowLoop, "timeout": 60000})
		if code(err) != sdk.CodeExecutionFailed {
			t.Fatalf("got %v", err)
		}
		r, _ := call(t, app, python.ReadOutputID, map[string]any{})
		if r.Status != "cancelled" {
			t.Fatalf("read_output after a cancel: %+v", r)
		}
	})
	t.Run("already done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := callAs(ctx, t, app, "agent-1", python.ExecuteScriptID, map[string]any{"code": "print(1)"})
		if code(err) != sdk.CodeExecutionFailed {
			t.Fatalf("got %v", err)
		}
	})
}

func TestRecursion(t *testing.T) {
	app := newApp(t, "")
	r := run(t, app, "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nprint(f(500))\n")
	if r.Status != "success" || r.Output != "500\n" {
		t.Fatalf("recursion 500 deep: %+v", r)
	}
	for name, src := range map[string]string{
		"unbounded":          "def f(n):\n    return f(n + 1)\nf(0)\n",
		"mutual":             "def a(n):\n    return b(n)\ndef b(n):\n    return a(n + 1)\na(0)\n",
		"through a built-in": "def k(x):\n    return sorted([1, 2], key=k)\nk(0)\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, app, src)
			if r.Status != "error" || !strings.Contains(r.err(), "maximum call depth exceeded") {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func TestOutputBounded(t *testing.T) {
	app := newApp(t, "")
	for name, src := range map[string]string{
		"many prints": "for i in range(100000):\n    print(\"x\" * 99)\nprint(\"end\")\n",
		"one print":   "print(\"y\" * (3 << 20))\n",
		"multibyte":   "print(\"é\" * (1 << 20))\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, app, src)
			if r.Status != "success" || !r.Truncated || len(r.Output) > python.MaxOutputBytes || len(r.Output) < python.MaxOutputBytes-1 {
				t.Fatalf("status %s truncated %v output %d bytes", r.Status, r.Truncated, len(r.Output))
			}
			if strings.Contains(r.Output, "end") || strings.ContainsRune(r.Output, '\uFFFD') {
				t.Fatal("output past the limit, or cut inside a character")
			}
		})
	}
}

func TestNoLoad(t *testing.T) {
	app := newApp(t, "")
	for _, src := range []string{`load("os.star", "x")`, `load("//tools:x.bzl", "y")`, `load("json", "encode")`} {
		r := run(t, app, src)
		if r.Status != "error" || !strings.Contains(r.err(), "load() is not available") {
			t.Errorf("%s: %+v", src, r)
		}
	}
}

// TestNothingReachesTheHost: there is nothing to call that touches files, the environment,
// the network or the clock; the escapes Python offers are undefined or harmless.
func TestNothingReachesTheHost(t *testing.T) {
	app := newApp(t, "")
	undefined := []string{
		`open("/etc/passwd")`, `exec("x = 1")`, `eval("1")`, `__import__("os")`, `compile("1", "f", "eval")`,
		`input()`, `globals()`, `locals()`, `vars()`, `breakpoint()`, `os.getenv("HOME")`, `sys.exit(1)`,
		`time.now()`, `http.get("http://127.0.0.1")`, `socket`, `subprocess`, `environ`, `__builtins__`,
		`struct`, `module`, `proto`, `__file__`, `__name__`,
	}
	for _, src := range undefined {
		r := run(t, app, src)
		if r.Status != "error" || !strings.Contains(r.err(), "undefined") {
			t.Errorf("%s: %+v", src, r)
		}
	}
	for _, src := range []string{
		`import os`, `from os import system`, `with open("x") as f: pass`, `try:
    pass
except:
    pass`,
		`class A: pass`, `x = 2 ** 10`, `raise ValueError("x")`,
	} {
		r := run(t, app, src)
		if r.Status != "error" || !regexp.MustCompile(`^<script>:\d+:\d+: `).MatchString(r.err()) {
			t.Errorf("%q: %+v", src, r)
		}
	}
	for _, src := range []string{
		`getattr(print, "__globals__")`, `getattr(json, "__dict__")`, `getattr(math, "os")`,
		`getattr("", "__class__")`, `type(print).__subclasses__()`, `print.__code__`,
		`json.decode.__self__`, `getattr(json.encode, "__closure__")`,
	} {
		r := run(t, app, src)
		if r.Status != "error" {
			t.Errorf("%s: %+v", src, r)
		}
	}
	r := run(t, app, "print(dir(json))\nprint(type(math), type(json))\n")
	if r.Status != "success" || r.Output != "[\"decode\", \"encode\", \"encode_indent\", \"indent\"]\nmodule module\n" {
		t.Errorf("modules: %+v", r)
	}
}

func TestErrorsHavePositions(t *testing.T) {
	app := newApp(t, "")
	for _, tc := range []struct{ src, want string }{
		{"x = = 1", `^<script>:1:5: got '=', want primary`},
		{"print(1)\nif True\n    pass", `^<script>:3:1: got newline, want ':'`},
		{"x = 1\ny = 1 // 0", `^<script>:2:7: floored division by zero`},
		{"def f():\n    fail(\"boom %d\" % 7)\nf()", `^<script>:2:9: fail: boom 7$`},
		{"undefined_name + 1\nother + 2", "^<script>:1:1: undefined: undefined_name\n<script>:2:1: undefined: other$"},
		{"d = {}\nd[\"k\"]", `^<script>:2:2: key "k" not in dict`},
		{"fail(\"x\" * 100000)", `^<script>:1:5: fail: x+ \[\.\.\.\]$`},
	} {
		r := run(t, app, tc.src)
		if r.Status != "error" || !regexp.MustCompile(tc.want).MatchString(r.err()) {
			t.Errorf("%q: error %q, want %s", tc.src, r.err(), tc.want)
		}
		if len(r.err()) > python.MaxErrorBytes {
			t.Errorf("%q: error of %d bytes", tc.src, len(r.err()))
		}
	}
}

// TestSandboxLimits runs what would end the gateway were scripts run in its own process:
// each ends the sandbox process only.
func TestSandboxLimits(t *testing.T) {
	app := newApp(t, "")
	nest := "x"
	for range 40 {
		nest = "(" + nest + ",)"
	}
	for _, tc := range []struct{ name, src, want string }{
		// A tuple 6.8 million levels deep, built in under 10 million steps, overflows the Go
		// stack when it is hashed.
		{"deep value", "x = ()\nfor i in range(170000):\n    x = " + nest + "\n{x: 1}\n", "stack limit reached"},
		// One step asks for 1.5 GiB: the process's own limit ends it.
		{"memory at once", "s = \"x\" * (1 << 29)\nt = s + s + s\nprint(len(t))\n", "memory limit"},
		// Memory held little by little: the watch stops the script where it is.
		{"memory by steps", "l = []\nfor i in range(1 << 30):\n    l.append(\"%d\" % i * 10000)\n", "memory limit reached: the script held more than 512 MiB"},
		{"json depth", "json.decode(\"[\" * 1000000)", "JSON nested more than"},
		{"json encode depth", "x = []\nfor i in range(2000):\n    x = [x]\njson.encode(x)", "nested more than"},
		{"json cycle", "x = []\nx.append(x)\njson.encode(x)", "nested more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, app, tc.src)
			if r.Status != "error" {
				t.Fatalf("got %+v: %s", r, r.err())
			}
			// The race detector's shadow memory changes which process limit comes first.
			if !raceEnabled && !strings.Contains(r.err(), tc.want) {
				t.Fatalf("got %+v: %s", r, r.err())
			}
		})
	}
	// The app still runs scripts after its sandboxes died.
	if r := run(t, app, "print(\"alive\")"); r.Output != "alive\n" {
		t.Fatalf("after: %+v", r)
	}
}

func TestParams(t *testing.T) {
	app := newApp(t, t.TempDir())
	for _, tc := range []struct {
		name   string
		id     string
		params string
		field  string
	}{
		{"no code", python.ExecuteScriptID, `{}`, "code"},
		{"code not a string", python.ExecuteScriptID, `{"code": 1}`, "code"},
		{"code too long", python.ExecuteScriptID, fmt.Sprintf(`{"code": %q}`, strings.Repeat("#", python.MaxSourceBytes+1)), "code"},
		{"timeout zero", python.ExecuteScriptID, `{"code": "", "timeout": 0}`, "timeout"},
		{"timeout too long", python.ExecuteScriptID, `{"code": "", "timeout": 60001}`, "timeout"},
		{"timeout fractional", python.ExecuteScriptID, `{"code": "", "timeout": 1.5}`, "timeout"},
		{"timeout a string", python.ExecuteScriptID, `{"code": "", "timeout": "5000"}`, "timeout"},
		{"unknown param", python.ExecuteScriptID, `{"code": "", "Code": "x"}`, ""},
		{"no path", python.ExecuteFileID, `{}`, "path"},
		{"empty path", python.ExecuteFileID, `{"path": ""}`, "path"},
		{"path too long", python.ExecuteFileID, fmt.Sprintf(`{"path": %q}`, strings.Repeat("a", 4097)), "path"},
		{"read_output with params", python.ReadOutputID, `{"client": "other"}`, ""},
		{"params not an object", python.ExecuteScriptID, `[]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sdk.DefaultValidateParams(app.Manifest(), tc.id, json.RawMessage(tc.params))
			var e *sdk.Error
			if !errors.As(err, &e) || e.Code != sdk.CodeInvalidParams {
				t.Fatalf("got %v", err)
			}
			if tc.field != "" && !strings.Contains(e.Error(), tc.field) {
				t.Errorf("problems %v do not name %s", e.Problems, tc.field)
			}
		})
	}
	// What the schema cannot say, Invoke checks itself.
	for _, tc := range []struct{ name, id, params, field string }{
		{"code over 256 KiB in bytes", python.ExecuteScriptID, fmt.Sprintf(`{"code": %q}`, strings.Repeat("😀", python.MaxSourceBytes/4+1)), "code"},
		{"no code", python.ExecuteScriptID, `{}`, "code"},
		{"timeout zero", python.ExecuteScriptID, `{"code": "", "timeout": 0}`, "timeout"},
		{"timeout too long", python.ExecuteFileID, `{"path": "a.star", "timeout": 60001}`, "timeout"},
		{"no path", python.ExecuteFileID, `{}`, "path"},
		{"not an object", python.ExecuteScriptID, `"x"`, ""},
	} {
		t.Run("invoke "+tc.name, func(t *testing.T) {
			_, err := app.Invoke(context.Background(), tc.id, json.RawMessage(tc.params), sdk.InvocationContext{})
			var e *sdk.Error
			if !errors.As(err, &e) || e.Code != sdk.CodeInvalidParams || (tc.field != "" && !strings.Contains(e.Error(), tc.field)) {
				t.Fatalf("got %v", err)
			}
		})
	}
	if _, err := app.Invoke(context.Background(), "python.org.capgate.python.execute_command", json.RawMessage(`{}`), sdk.InvocationContext{}); code(err) != sdk.CodeNotFound {
		t.Fatalf("unknown capability: %v", err)
	}
}

func TestReadOutput(t *testing.T) {
	app := newApp(t, "")
	r, err := callAs(context.Background(), t, app, "a", python.ReadOutputID, map[string]any{})
	if err != nil || r.Status != "none" || r.Output != "" {
		t.Fatalf("before any run: %+v, %v", r, err)
	}
	if _, err := callAs(context.Background(), t, app, "a", python.ExecuteScriptID, map[string]any{"code": "print(\"mine\")\nfail(\"late\")"}); err != nil {
		t.Fatal(err)
	}
	r, _ = callAs(context.Background(), t, app, "a", python.ReadOutputID, map[string]any{})
	if r.Status != "error" || r.Output != "mine\n" || !strings.Contains(r.err(), "late") {
		t.Fatalf("after a run: %+v", r)
	}
	// Another client sees none of it.
	r, _ = callAs(context.Background(), t, app, "b", python.ReadOutputID, map[string]any{})
	if r.Status != "none" || r.Output != "" {
		t.Fatalf("another client: %+v", r)
	}
	// Only so many clients are remembered, the oldest forgotten first.
	for i := range python.MaxKeptOutputs {
		if _, err := callAs(context.Background(), t, app, fmt.Sprint("c", i), python.ExecuteScriptID, map[string]any{"code": ""}); err != nil {
			t.Fatal(err)
		}
	}
	r, _ = callAs(context.Background(), t, app, "a", python.ReadOutputID, map[string]any{})
	if r.Status != "none" {
		t.Fatalf("the oldest client is still kept: %+v", r)
	}
}

func TestConcurrent(t *testing.T) {
	app := newApp(t, "")
	const n = 3 * python.MaxConcurrent
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			client := fmt.Sprint("agent-", i)
			src := fmt.Sprintf("total = 0\nfor k in range(%d):\n    total += k\nprint(%d, total)\n", 1000*i, i)
			r, err := callAs(context.Background(), t, app, client, python.ExecuteScriptID, map[string]any{"code": src, "timeout": 60000})
			if err != nil {
				errs <- err
				return
			}
			want := fmt.Sprintf("%d %d\n", i, (1000*i)*(1000*i-1)/2)
			if r.Output != want {
				errs <- fmt.Errorf("client %d: output %q, want %q", i, r.Output, want)
				return
			}
			kept, _ := callAs(context.Background(), t, app, client, python.ReadOutputID, map[string]any{})
			if kept.Output != want {
				errs <- fmt.Errorf("client %d: read_output %q, want %q", i, kept.Output, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestExecuteFile(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "scripts")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{dir, outside, filepath.Join(dir, "sub"), filepath.Join(dir, "dir.star")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "hello.star"), "print(\"hello from a file\")\n")
	write(filepath.Join(dir, "hello.py"), "print(\"py\")\n")
	write(filepath.Join(dir, "sub", "err.star"), "x = 1\nx()\n")
	write(filepath.Join(dir, "notes.txt"), "print(1)\n")
	write(filepath.Join(dir, "big.star"), strings.Repeat("#", python.MaxSourceBytes+1))
	write(filepath.Join(dir, "latin1.star"), "print(\"caf\xe9\")\n")
	write(filepath.Join(dir, "loop.star"), "while True:\n    pass\n")
	write(filepath.Join(outside, "secret.star"), "print(\"secret\")\n")
	write(filepath.Join(base, "sibling.star"), "print(\"sibling\")\n")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(outside, "secret.star"), filepath.Join(dir, "link.star")))
	must(os.Symlink(outside, filepath.Join(dir, "linkdir")))
	must(os.Symlink("hello.star", filepath.Join(dir, "inside.star")))
	must(os.Symlink("../../outside/secret.star", filepath.Join(dir, "sub", "rel.star")))
	must(mkfifo(filepath.Join(dir, "fifo.star")))

	app := newApp(t, dir)
	ok := []struct{ path, output string }{
		{"hello.star", "hello from a file\n"},
		{"hello.py", "py\n"},
		{"./hello.star", "hello from a file\n"},
		{"sub/../hello.star", "hello from a file\n"},
		{filepath.Join(dir, "hello.star"), "hello from a file\n"},
		{dir + "//sub/../hello.star", "hello from a file\n"},
		{"inside.star", "hello from a file\n"},
	}
	for _, tc := range ok {
		r, err := call(t, app, python.ExecuteFileID, map[string]any{"path": tc.path})
		if err != nil || r.Status != "success" || r.Output != tc.output {
			t.Errorf("%s: %+v, %v", tc.path, r, err)
		}
	}
	r, err := call(t, app, python.ExecuteFileID, map[string]any{"path": "sub/err.star"})
	if err != nil || r.Status != "error" || !strings.HasPrefix(r.err(), "sub/err.star:2:2: ") {
		t.Errorf("error in a file: %+v, %v", r, err)
	}
	r, err = call(t, app, python.ExecuteFileID, map[string]any{"path": "loop.star", "timeout": 60000})
	if err != nil || !strings.Contains(r.err(), "step limit reached") {
		t.Errorf("loop in a file: %+v, %v", r, err)
	}

	refused := []struct {
		path string
		code sdk.Code
	}{
		{"../outside/secret.star", sdk.CodePermissionDenied},
		{"../sibling.star", sdk.CodePermissionDenied},
		{"sub/../../sibling.star", sdk.CodePermissionDenied},
		{"../scripts/../outside/secret.star", sdk.CodePermissionDenied},
		{filepath.Join(outside, "secret.star"), sdk.CodePermissionDenied},
		{filepath.Join(base, "sibling.star"), sdk.CodePermissionDenied},
		{dir + "/../sibling.star", sdk.CodePermissionDenied},
		{dir + "x/hello.star", sdk.CodePermissionDenied}, // a sibling folder sharing a prefix
		{"/etc/passwd.py", sdk.CodePermissionDenied},
		{"link.star", sdk.CodePermissionDenied},
		{"linkdir/secret.star", sdk.CodePermissionDenied},
		{"sub/rel.star", sdk.CodePermissionDenied},
		{"missing.star", sdk.CodeInvalidParams},
		{"%2e%2e/sibling.star", sdk.CodeInvalidParams},
		{"\u2024\u2024/sibling.star", sdk.CodeInvalidParams},
		{"notes.txt", sdk.CodeInvalidParams},
		{"hello.star.txt", sdk.CodeInvalidParams},
		{"hello.STAR", sdk.CodeInvalidParams},
		{"hello.star\x00.txt", sdk.CodeInvalidParams},
		{"hello.star\x00", sdk.CodeInvalidParams},
		{"..\\sibling.star", sdk.CodeInvalidParams},
		{"big.star", sdk.CodeInvalidParams},
		{"latin1.star", sdk.CodeInvalidParams},
		{"dir.star", sdk.CodeInvalidParams},
		{"fifo.star", sdk.CodeInvalidParams}, // refused, not waited on
		{".star", sdk.CodeInvalidParams},
	}
	for _, tc := range refused {
		_, err := call(t, app, python.ExecuteFileID, map[string]any{"path": tc.path})
		if code(err) != tc.code {
			t.Errorf("%q: got %v, want %s", tc.path, err, tc.code)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error echoes the path: %v", tc.path, err)
		}
	}

	// No scripts folder: every execute_file is refused.
	none := newApp(t, "")
	if _, err := call(t, none, python.ExecuteFileID, map[string]any{"path": "hello.star"}); code(err) != sdk.CodePermissionDenied {
		t.Errorf("without a folder: %v", err)
	}
	// A folder that does not exist is an error of New.
	if _, err := python.New(loadDoc(t), filepath.Join(base, "missing"), python.Options{Sandbox: sandboxtest.Open(t)}); err == nil {
		t.Error("New with a missing folder succeeded")
	}
	if _, err := python.New(loadDoc(t), base, python.Options{}); err == nil {
		t.Error("New without a sandbox succeeded")
	}
}

// TestExecuteFileRace swaps a script for a symbolic link out of the folder while it is
// being run: each run either reads the script or is refused, never reads the secret.
func TestExecuteFileRace(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "scripts")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(base, "secret.star")
	if err := os.WriteFile(secret, []byte("print(\"secret\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	app := newApp(t, dir)
	target := filepath.Join(dir, "swap.star")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := filepath.Join(dir, fmt.Sprint("tmp", i))
			if i%2 == 0 {
				_ = os.WriteFile(tmp, []byte("print(\"ok\")\n"), 0o644)
			} else {
				_ = os.Symlink(secret, tmp)
			}
			_ = os.Rename(tmp, target)
		}
	}()
	ran, refused := 0, 0
	// Bounded by time, not a count: a refusal takes microseconds, and on a loaded machine
	// the swapping goroutine may not run for thousands of them.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && (ran < 5 || refused < 5); {
		runtime.Gosched()
		r, err := call(t, app, python.ExecuteFileID, map[string]any{"path": "swap.star"})
		if strings.Contains(r.Output, "secret") {
			t.Fatal("read a script through a link out of the folder")
		}
		switch {
		case err == nil && r.Output == "ok\n":
			ran++
		case code(err) == sdk.CodePermissionDenied:
			refused++
		case code(err) == sdk.CodeInvalidParams: // between the writes, no file yet
		default:
			t.Fatalf("unexpected %+v, %v", r, err)
		}
	}
	close(stop)
	<-done
	if ran == 0 || refused == 0 {
		t.Fatalf("ran %d, refused %d: the race was not exercised", ran, refused)
	}
}
