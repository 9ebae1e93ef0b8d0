package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The CLI is tested as a person uses it: the real binary in a child process.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "capgate-cli-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "capgate")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic("build capgate: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// capgate runs the binary with a clean HOME and configuration, env added.
func capgate(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	r, err := runClean(t, cmd, env)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runClean runs cmd to its end with a clean HOME and configuration, env added, and returns
// its exit code and output; err is a failure to run it at all.
func runClean(t *testing.T, cmd *exec.Cmd, env []string) (result, error) {
	home := t.TempDir()
	cmd.Env = append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH")}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code, err = ee.ExitCode(), nil
	}
	return result{code, out.String(), errb.String()}, err
}

// child is a capgate child process of a test that runs until the test stops it, such as
// serve or audit witness.
type child struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer // its standard error when kept rather than the test's own; read it only once it has exited
	rest   chan string   // the rest of its standard output, once it exits
	killed bool          // stopped already, or stopped by the test itself
}

// startChild starts the binary with args and env (nil: the test's own environment), its
// standard error the test's own when live, else kept in stderr. It reads the child's
// standard output a line at a time, giving each to see, until see returns true or the
// output ends, and the rest in the background.
func startChild(args, env []string, live bool, see func(line string) bool) (*child, error) {
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, rest: make(chan string, 1)}
	if live {
		cmd.Stderr = os.Stderr
	} else {
		c.stderr = &bytes.Buffer{}
		cmd.Stderr = c.stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() && !see(lines.Text()) {
	}
	go func() { b, _ := io.ReadAll(out); c.rest <- string(b) }()
	return c, nil
}

// kill stops the child with SIGKILL, at once.
func (c *child) kill() {
	c.killed = true
	c.cmd.Process.Kill()
	<-c.rest
	c.cmd.Wait()
}

// replica is one `capgate serve` child process of a test: one of several replicas on a
// shared store, or a test's only gateway.
type replica struct {
	*child
	url   string        // http://127.0.0.1:PORT
	login string        // the one-time login link to its approval page
	grace time.Duration // how long stop waits for it to stop after SIGTERM
}

// serveOptions are how a test runs `capgate serve --data DATA --listen 127.0.0.1:0`.
type serveOptions struct {
	args  []string      // more arguments
	env   []string      // added to the test's environment and HOME
	home  string        // HOME: "" for the data folder
	live  bool          // its standard error the test's own, rather than kept to show if it does not start
	grace time.Duration // how long it may take to stop on SIGTERM: 0 for 30 s
}

// launchServe starts `capgate serve` on data and reads its banner, up to the line that
// says how to add an agent.
func launchServe(data string, o serveOptions) (*replica, error) {
	home := o.home
	if home == "" {
		home = data
	}
	r := &replica{grace: o.grace}
	if r.grace == 0 {
		r.grace = 30 * time.Second
	}
	var err error
	r.child, err = startChild(append([]string{"serve", "--data", data, "--listen", "127.0.0.1:0"}, o.args...),
		append(append(os.Environ(), "HOME="+home), o.env...), o.live, func(line string) bool {
			if u, ok := strings.CutPrefix(line, "capgate serving on http://"); ok {
				r.url = "http://" + u
			}
			if u, ok := strings.CutPrefix(line, "approve requests at "); ok {
				r.login = u
			}
			return strings.HasPrefix(line, "add an agent with:")
		})
	if err != nil {
		return nil, err
	}
	if r.url == "" {
		r.kill()
		if r.stderr == nil {
			return nil, errors.New("serve did not say where it listens")
		}
		return nil, fmt.Errorf("serve did not say where it listens; stderr:\n%s", r.stderr.String())
	}
	return r, nil
}

// serveChild starts `capgate serve` on data (launchServe); it is stopped with SIGTERM at the
// end of the test, which must be graceful unless the test has killed it.
func serveChild(t *testing.T, data string, o serveOptions) *replica {
	t.Helper()
	r, err := launchServe(data, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

// startServe runs `capgate serve` as a real child process on a free loopback port, with a
// fresh HOME and its standard error the test's own, and returns its URL; the server is
// stopped with SIGTERM at the end of the test, which must be graceful within 20 s.
func startServe(t *testing.T, data string, args ...string) string {
	t.Helper()
	return serveChild(t, data, serveOptions{args: args, home: t.TempDir(), live: true, grace: 20 * time.Second}).url
}

// serveWith starts `capgate serve` on data with extra arguments, HOME the data folder and
// its standard error kept.
func serveWith(t *testing.T, data string, args ...string) *replica {
	t.Helper()
	return serveEnv(t, data, nil, args...)
}

// serveEnv is serveWith with env added to the child's environment.
func serveEnv(t *testing.T, data string, env []string, args ...string) *replica {
	t.Helper()
	return serveChild(t, data, serveOptions{args: args, env: env})
}

// stop stops the replica with SIGTERM and checks that it stopped gracefully. Standard output
// is read to its end before Wait, which closes the pipe: waiting first could lose the last
// lines.
func (r *replica) stop(t *testing.T) {
	if r.killed {
		return
	}
	r.killed = true
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case s := <-r.rest:
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("serve exited with %v", err)
		}
		if !strings.Contains(s, "capgate stopped") {
			t.Errorf("serve did not stop gracefully: %q", s)
		}
	case <-time.After(r.grace):
		r.cmd.Process.Kill()
		r.cmd.Wait()
		t.Error("serve did not stop on SIGTERM")
	}
}

func mustCode(t *testing.T, r result, want int) {
	t.Helper()
	if r.code != want {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, want, r.stdout, r.stderr)
	}
}

const notes = "../../manifest/testdata/notes.json"

func TestLint(t *testing.T) {
	r := capgate(t, "", nil, "manifest", "lint", notes)
	mustCode(t, r, 0)

	r = capgate(t, "", nil, "manifest", "lint", "--json", notes)
	mustCode(t, r, 0)
	var out struct {
		Valid    bool              `json:"valid"`
		Problems []json.RawMessage `json:"problems"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !out.Valid || out.Problems == nil || len(out.Problems) != 0 {
		t.Fatalf("lint --json of a valid manifest: %s (%v)", r.stdout, err)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	writeFile(t, bad, `{"app_id":"org.example.x","version":"1","manifest_version":"1.0","capabilities":[{"id":"a.b","name":"n","description":"d","category":"NOPE","parameters":{},"returns":{}}]}`)
	r = capgate(t, "", nil, "manifest", "lint", "--json", bad)
	mustCode(t, r, 1)
	var bo struct {
		Valid    bool `json:"valid"`
		Problems []struct{ Path, Rule string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &bo); err != nil || bo.Valid || len(bo.Problems) != 3 {
		t.Fatalf("lint --json of an invalid manifest: %s", r.stdout)
	}
	paths := []string{bo.Problems[0].Path, bo.Problems[1].Path, bo.Problems[2].Path}
	for _, want := range []string{"version", "capabilities[0].category", "capabilities[0].id"} {
		if !strings.Contains(strings.Join(paths, " "), want) {
			t.Errorf("no problem at %s: %v", want, paths)
		}
	}

	dup := filepath.Join(t.TempDir(), "dup.json")
	writeFile(t, dup, `{"app_id":"org.example.x","app_id":"org.example.y"}`)
	r = capgate(t, "", nil, "manifest", "lint", dup)
	mustCode(t, r, 1)
	if !strings.Contains(r.stdout, "duplicate") || strings.Contains(r.stdout, "org.example.y") {
		t.Fatalf("duplicate key report: %s", r.stdout)
	}

	mustCode(t, capgate(t, "", nil, "manifest", "lint"), 2)
	mustCode(t, capgate(t, "", nil, "manifest", "lint", "a", "b"), 2)
	mustCode(t, capgate(t, "", nil, "manifest", "lint", "--nope", notes), 2)
	mustCode(t, capgate(t, "", nil, "manifest", "lint", filepath.Join(t.TempDir(), "missing.json")), 2)
	mustCode(t, capgate(t, "", nil, "frobnicate"), 2)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestKeygenSignVerify(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "keys", "ed25519.key")
	trusted := filepath.Join(dir, "trusted")
	if err := os.Mkdir(trusted, 0o755); err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(trusted, "org.example.notes.pub")
	r := capgate(t, "", nil, "keygen", "--app-id", "org.example.notes", "--out", key, "--pub", pub)
	mustCode(t, r, 0)
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Fatalf("private key: %v %v", st, err)
	}
	if st, err := os.Stat(filepath.Dir(key)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("key folder: %v %v", st, err)
	}
	if st, err := os.Stat(pub); err != nil || st.Size() != 32 {
		t.Fatalf("public key: %v %v", st, err)
	}
	before, _ := os.ReadFile(key)
	mustCode(t, capgate(t, "", nil, "keygen", "--app-id", "org.example.notes", "--out", key, "--pub", pub), 1)
	if after, _ := os.ReadFile(key); !bytes.Equal(before, after) {
		t.Fatal("keygen replaced a key without --force")
	}
	mustCode(t, capgate(t, "", nil, "keygen", "--app-id", "Not An Id"), 2)

	signed := filepath.Join(dir, "signed.json")
	r = capgate(t, "", nil, "manifest", "sign", "--key", key, "-o", signed, "../../manifest/testdata/notes.yaml")
	mustCode(t, r, 0)

	r = capgate(t, "", nil, "manifest", "verify", "--trusted-dir", trusted, "--json", signed)
	mustCode(t, r, 0)
	var v struct {
		AppID  string `json:"app_id"`
		Tier   int    `json:"tier"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Tier != 1 || v.AppID != "org.example.notes" {
		t.Fatalf("verify --json: %s", r.stdout)
	}

	// The trusted folder from the environment, and from the configuration file.
	mustCode(t, capgate(t, "", []string{"CAPGATE_TRUSTED_DIR=" + trusted}, "manifest", "verify", signed), 0)
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "trusted_dir: "+trusted+"\n")
	mustCode(t, capgate(t, "", nil, "--config", cfg, "manifest", "verify", signed), 0)
	mustCode(t, capgate(t, "", []string{"CAPGATE_CONFIG=" + cfg}, "manifest", "verify", signed), 0)
	// The flag wins over the environment, which wins over the file.
	empty := t.TempDir()
	mustCode(t, capgate(t, "", []string{"CAPGATE_TRUSTED_DIR=" + trusted}, "manifest", "verify", "--trusted-dir", empty, signed), 1)
	mustCode(t, capgate(t, "", []string{"CAPGATE_TRUSTED_DIR=" + empty}, "--config", cfg, "manifest", "verify", signed), 1)
	writeFile(t, cfg, "trusted_dirr: x\n")
	mustCode(t, capgate(t, "", nil, "--config", cfg, "manifest", "verify", signed), 2)

	// Tier 2 with the reason, exit 1.
	r = capgate(t, "", nil, "manifest", "verify", "--trusted-dir", trusted, "--json", notes)
	mustCode(t, r, 1)
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Tier != 2 || v.Reason != "unsigned" {
		t.Fatalf("verify unsigned: %s", r.stdout)
	}

	// A private key readable by others is refused.
	if err := os.Chmod(key, 0o640); err != nil {
		t.Fatal(err)
	}
	r = capgate(t, "", nil, "manifest", "sign", "--key", key, notes)
	mustCode(t, r, 1)
	if !strings.Contains(r.stderr, key) {
		t.Fatalf("insecure key error does not name the file: %s", r.stderr)
	}
}

func TestCanon(t *testing.T) {
	r := capgate(t, `{"b": [1, 2.50, "\u00e9"], "a": 9007199254740993, "c": 1e21}`, nil, "canon")
	mustCode(t, r, 0)
	if want := `{"a":9007199254740992,"b":[1,2.5,"é"],"c":1e+21}`; r.stdout != want {
		t.Fatalf("canon = %q, want %q", r.stdout, want)
	}
	r = capgate(t, `{"a":1,"a":2}`, nil, "canon", "-")
	mustCode(t, r, 1)
	if !strings.Contains(r.stderr, "duplicate") {
		t.Fatalf("duplicate key error: %q", r.stderr)
	}
	for _, in := range []string{`"\ud800"`, "\"\xff\"", `1e400`, `NaN`, `{"a":}`, ``} {
		if r := capgate(t, in, nil, "canon"); r.code != 1 || r.stdout != "" {
			t.Errorf("canon %q: exit %d, stdout %q", in, r.code, r.stdout)
		}
	}
	mustCode(t, capgate(t, "", nil, "canon", "a", "b"), 2)
}

func TestBenchManifest(t *testing.T) {
	r := capgate(t, "", nil, "bench", "manifest", "--caps", "5", "--iterations", "3", "--json")
	mustCode(t, r, 0)
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out["caps"] != float64(5) {
		t.Fatalf("bench --json: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", nil, "bench", "manifest", "--caps", "0"), 2)
}

// capgate bench provider starts capgate itself as its provider, as the gateway starts one,
// and the floor's child too: no compiler, no program besides capgate.
func TestBenchProvider(t *testing.T) {
	r := capgate(t, "", nil, "bench", "provider", "--calls", "20", "--unconfined", "--json")
	mustCode(t, r, 0)
	var out struct {
		Calls      int             `json:"calls"`
		Exchange   map[string]any  `json:"exchange"`
		Unconfined *map[string]any `json:"unconfined"`
		Goal       float64         `json:"goal_added_p50_us"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Calls != 20 || out.Unconfined == nil ||
		out.Exchange["p50_us"] == nil || out.Goal != 100 {
		t.Fatalf("bench provider --json: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", nil, "bench", "provider", "--calls", "0"), 2)
	mustCode(t, capgate(t, "", nil, "bench", "provider", "--pause", "-1ms"), 2)
	mustCode(t, capgate(t, "", nil, "bench", "provider", "--pause", "2s"), 2)
	// The provider it starts is internal: run by hand, it says it is not for that and exits.
	r = capgate(t, "", nil, "bench", "provider-serve")
	if r.code == 0 || !strings.Contains(r.stderr, "plugin") {
		t.Errorf("provider-serve by hand: exit %d, stderr %q", r.code, r.stderr)
	}
	if help := capgate(t, "", nil, "bench", "--help"); strings.Contains(help.stdout, "provider-serve") {
		t.Errorf("the internal provider-serve is listed: %s", help.stdout)
	}
}

// TestReadmeMainCommand runs the README's manifest example: verifying the bundled example.
func TestReadmeMainCommand(t *testing.T) {
	r := capgate(t, "", nil, "manifest", "verify", "--trusted-dir", "../../examples/trusted", "../../examples/notes/manifest.json")
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "Tier 1") {
		t.Fatalf("stdout: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", nil, "manifest", "lint", "../../examples/notes/manifest.yaml"), 0)
}
