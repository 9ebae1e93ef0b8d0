package broker

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gatewaytest"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/token"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// fsManifest is an app whose capabilities carry paths in every shape a schema can give
// them: the published filesystem MCP server's move_file as it declares itself (source and
// destination, unclassified) and as classified, a path under a name that is not "path", one
// nested in an object, arrays of them, one behind a $ref, one in anyOf branches, and a
// command with its cwd beside a write to a running program's input.
const fsManifest = `{"app_id":"org.example.fs","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"fs.org.example.fs.move_file","name":"Move","description":"Moves a file.","category":"FILE_OPERATION",
  "parameters":{"type":"object","required":["source","destination"],"additionalProperties":false,
   "properties":{"source":{"type":"string"},"destination":{"type":"string"}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.fs.move"},
 {"id":"fs.org.example.fs.move","name":"Move","description":"Moves a file.","category":"FILE_OPERATION",
  "parameters":{"type":"object","required":["source","destination"],"additionalProperties":false,
   "properties":{"source":{"type":"string","format":"path"},"destination":{"type":"string","format":"path"}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.fs.move"},
 {"id":"fs.org.example.fs.read","name":"Read","description":"Reads a file.","category":"FILE_OPERATION",
  "parameters":{"type":"object","required":["file"],"additionalProperties":false,"properties":{"file":{"type":"string","format":"path"}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.read_open","name":"Read","description":"Reads a file.","category":"FILE_OPERATION",
  "parameters":{"type":"object","properties":{"path":{"type":"string","format":"path"}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.nested","name":"Nested","description":"Reads with options.","category":"FILE_OPERATION",
  "parameters":{"type":"object","additionalProperties":false,"properties":{"opts":{"type":"object","additionalProperties":false,
   "properties":{"path":{"type":"string","format":"path"},"mode":{"enum":["a","b"]}}}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.many","name":"Many","description":"Reads files.","category":"FILE_OPERATION",
  "parameters":{"type":"object","additionalProperties":false,"properties":{"paths":{"type":"array","items":{"type":"string","format":"path"}}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.ref","name":"Ref","description":"Reads a file.","category":"FILE_OPERATION",
  "parameters":{"type":"object","additionalProperties":false,"properties":{"target":{"$ref":"#/definitions/p"}},"definitions":{"p":{"type":"string","format":"path"}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.either","name":"Either","description":"Reads one file or several.","category":"FILE_OPERATION",
  "parameters":{"type":"object","additionalProperties":false,"properties":{"p":{"anyOf":[{"type":"string","format":"path"},
   {"type":"array","items":{"type":"string","format":"path"}}]}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.run","name":"Run","description":"Runs a command.","category":"SYSTEM",
  "parameters":{"type":"object","required":["command"],"additionalProperties":false,"properties":{
   "command":{"type":"string","format":"command"},"cwd":{"type":"string","format":"cwd"},"stdin":{"type":"string","format":"text"}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.fs.run"},
 {"id":"fs.org.example.fs.write_input","name":"Input","description":"Writes to a running command.","category":"TEXT_INPUT",
  "parameters":{"type":"object","required":["id"],"additionalProperties":false,"properties":{
   "id":{"type":"integer"},"input":{"type":"string","format":"command-input"},"close":{"type":"boolean"}}},
  "returns":{"type":"object"},"side_effects":"read","permission":"app.fs.run"}
]}`

// recorder is an app that records the params it was given.
type recorder struct {
	doc *manifest.Document
	mu  sync.Mutex
	got []string
}

func (r *recorder) Manifest() *manifest.Document { return r.doc }

func (r *recorder) Invoke(_ context.Context, _ string, params json.RawMessage, _ sdk.InvocationContext) (sdk.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, string(params))
	return sdk.Result{Success: true, Data: json.RawMessage(`{}`)}, nil
}

func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

type fsEnv struct {
	b   *Broker
	st  store.Store
	app *recorder
	key ed25519.PrivateKey
	ws  string // the folder relative paths resolve against
}

func newFSEnv(t *testing.T) *fsEnv {
	t.Helper()
	st := gatewaytest.Store(t)
	reg, app, _ := gatewaytest.Registry(t, st, fsManifest, "fs")
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ws/sub", "secret"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(ws, "secret"), filepath.Join(ws, "ws", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(ws, "ws", "in")); err != nil {
		t.Fatal(err)
	}
	pub, key, _ := ed25519.GenerateKey(nil)
	w := audit.NewWriter(st, &audit.Options{CheckpointKey: key, CheckpointEvery: 16})
	t.Cleanup(func() { w.Close() })
	cs := consent.New(st, &consent.Options{Surface: true, TTL: time.Minute, Poll: 10 * time.Millisecond})
	rec := &recorder{doc: app.Doc}
	b, err := New(Options{Store: st, Registry: reg, Tokens: token.NewVerifier(pub, 64), Audit: w, Consent: cs,
		Handlers: map[string]sdk.Handler{"org.example.fs": rec}, DelayedCommit: -1, ConsentWait: time.Second,
		PathDir: filepath.Join(ws, "ws")})
	if err != nil {
		t.Fatal(err)
	}
	return &fsEnv{b: b, st: st, app: rec, key: key, ws: filepath.Join(ws, "ws")}
}

func (e *fsEnv) token(t *testing.T, c token.Constraints) string {
	t.Helper()
	now := time.Now()
	tok := token.Token{ID: token.NewID(), IssuedAt: now.Unix() - 60, ExpiresAt: now.Add(time.Hour).Unix(),
		Capabilities: []string{"app.fs.*"}, Constraints: c, ClientID: alice.ClientID}
	return gatewaytest.Mint(t, e.st, tok, e.key, now, now.Add(time.Hour))
}

func (e *fsEnv) call(method, params, tok string) Result {
	return e.b.Call(context.Background(), alice, Request{RequestID: "r", Action: "execute", App: "fs", Method: method,
		Params: json.RawMessage(params), Token: tok})
}

// Issue 15, point 3: with allowed_paths ["WS/**"], {"file": "/etc/passwd"}, the filesystem
// server's {"source": "/etc/passwd"} and {"opts": {"path": "/etc/passwd"}} all passed. Every
// path the schema declares is checked wherever it sits; a capability whose params are not
// all classified is refused; and nothing reaches the provider.
func TestAllowedPathsEveryPath(t *testing.T) {
	e := newFSEnv(t)
	paths := e.token(t, token.Constraints{AllowedPaths: []string{e.ws + "/**"}})
	cmds := e.token(t, token.Constraints{DeniedCommands: []string{"rm"}})
	refused := []struct {
		method, params, tok, rule string
	}{
		{"move_file", `{"source":"/etc/passwd","destination":"x"}`, paths, token.RuleUnclassified},
		{"move_file", `{"source":"a","destination":"b"}`, paths, token.RuleUnclassified},
		{"move_file", `{"source":"a","destination":"b"}`, cmds, token.RuleUnclassified},
		{"move", `{"source":"/etc/passwd","destination":"x"}`, paths, token.RuleAllowedPaths},
		{"move", `{"source":"x","destination":"/etc/passwd"}`, paths, token.RuleAllowedPaths},
		{"move", `{"source":"../secret/x","destination":"x"}`, paths, token.RuleAllowedPaths},
		{"move", `{"source":"out/x","destination":"x"}`, paths, token.RuleAllowedPaths},
		{"read", `{"file":"/etc/passwd"}`, paths, token.RuleAllowedPaths},
		{"read_open", `{"path":"x","file":"/etc/passwd"}`, paths, token.RuleUnclassified},
		{"read_open", `{"path":"x"}`, paths, token.RuleUnclassified},
		{"nested", `{"opts":{"path":"/etc/passwd"}}`, paths, token.RuleAllowedPaths},
		{"many", `{"paths":["x","/etc/passwd"]}`, paths, token.RuleAllowedPaths},
		{"ref", `{"target":"/etc/passwd"}`, paths, token.RuleAllowedPaths},
		{"either", `{"p":"/etc/passwd"}`, paths, token.RuleAllowedPaths},
		{"either", `{"p":["x","/etc/passwd"]}`, paths, token.RuleAllowedPaths},
		{"run", `{"command":"cat /etc/passwd"}`, paths, token.RuleAllowedPaths},
		{"run", `{"command":"ls","cwd":"/etc"}`, paths, token.RuleAllowedPaths},
		{"run", `{"command":"cat ../../secret/x","cwd":"sub"}`, paths, token.RuleAllowedPaths},
		{"run", `{"command":"sh","stdin":"rm -f v1"}`, cmds, token.RuleInterpreter},
		{"run", `{"command":"sh","stdin":"cat /etc/passwd"}`, paths, token.RuleInterpreter},
		{"write_input", `{"id":1,"input":"rm -f v1\n"}`, cmds, token.RuleCommandInput},
		{"write_input", `{"id":1,"input":"cat /etc/passwd\n"}`, paths, token.RuleCommandInput},
	}
	for _, c := range refused {
		r := e.call(c.method, c.params, c.tok)
		if r.OK() || r.Code != policy.CodeCapabilityDenied || !strings.Contains(r.Message, c.rule) {
			t.Errorf("%s %s: %s %q", c.method, c.params, r.Code, r.Message)
		}
		if strings.Contains(r.Message, "/etc/passwd") {
			t.Errorf("%s: the refusal echoes a path: %q", c.method, r.Message)
		}
	}
	if got := e.app.calls(); len(got) != 0 {
		t.Fatalf("refused calls reached the provider: %q", got)
	}

	// Without path or command constraints the unclassified capability runs as before.
	if r := e.call("move_file", `{"source":"/etc/passwd","destination":"x"}`, e.token(t, token.Constraints{MaxUses: 5})); !r.OK() {
		t.Fatalf("unconstrained: %+v", r)
	}
	// Closing a running program's input carries no input, and runs.
	if r := e.call("write_input", `{"id":1,"close":true}`, cmds); !r.OK() {
		t.Fatalf("close: %+v", r)
	}
}

// What was checked is what is opened: the provider gets each checked path resolved
// (absolute, through its links), numbers and other params as they were, and the audit log
// keeps the hash of the params the agent sent.
func TestAllowedPathsResolvedReachProvider(t *testing.T) {
	e := newFSEnv(t)
	tok := e.token(t, token.Constraints{AllowedPaths: []string{e.ws + "/**"}})
	cases := []struct{ method, params, want string }{
		{"move", `{"source":"in/a","destination":"` + e.ws + `//sub/../b"}`,
			`{"destination":"` + e.ws + `/b","source":"` + e.ws + `/sub/a"}`},
		{"nested", `{"opts":{"mode":"a","path":"in"}}`, `{"opts":{"mode":"a","path":"` + e.ws + `/sub"}}`},
		{"many", `{"paths":["a","in/b"]}`, `{"paths":["` + e.ws + `/a","` + e.ws + `/sub/b"]}`},
		{"either", `{"p":"in/<&>"}`, `{"p":"` + e.ws + `/sub/<&>"}`},
		{"run", `{"command":"ls -l","cwd":"in","stdin":"x"}`, `{"command":"ls -l","cwd":"` + e.ws + `/sub","stdin":"x"}`},
	}
	for _, c := range cases {
		r := e.call(c.method, c.params, tok)
		if !r.OK() {
			t.Fatalf("%s %s: %+v", c.method, c.params, r)
		}
	}
	got := e.app.calls()
	for i, c := range cases {
		if i >= len(got) || got[i] != c.want {
			t.Errorf("%s: the provider got %q, want %q", c.method, got[i], c.want)
		}
	}
	// The audit records hash what the agent sent.
	sent, _ := audit.ParamsHash([]byte(cases[0].params))
	found := false
	for _, rec := range gatewaytest.AuditRecords(t, e.st) {
		if rec.Method == "move" {
			found = true
			if rec.ParamsHash != sent {
				t.Errorf("the audit record hashes %s, the agent sent %s", rec.ParamsHash, sent)
			}
		}
	}
	if !found {
		t.Fatal("no audit record of the move")
	}

	// A token without allowed_paths passes the params as they were sent.
	plain := e.token(t, token.Constraints{DeniedCommands: []string{"rm"}})
	if r := e.call("move", `{"source":"in/a","destination":"b"}`, plain); !r.OK() {
		t.Fatal(r)
	}
	if got := e.app.calls(); got[len(got)-1] != `{"source":"in/a","destination":"b"}` {
		t.Errorf("without allowed_paths the provider got %q", got[len(got)-1])
	}
}

func TestWithResolved(t *testing.T) {
	got, err := withResolved(json.RawMessage(`{"a~/b":["x",{"p":"y"}],"n":9007199254740993,"h":"<b>"}`),
		[]token.Value{{Pointer: "/a~0~1b/1/p", Text: "/r"}, {Pointer: "/a~0~1b/0", Text: "/q"}})
	if err != nil || string(got) != `{"a~/b":["/q",{"p":"/r"}],"h":"<b>","n":9007199254740993}` {
		t.Fatalf("%s %v", got, err)
	}
	for _, ptr := range []string{"/missing", "/n", "/a~0~1b/2", "/a~0~1b/01", "x", "/a~0~1b"} {
		if _, err := withResolved(json.RawMessage(`{"a~/b":["x",{"p":"y"}],"n":1}`), []token.Value{{Pointer: ptr, Text: "/r"}}); err == nil {
			t.Errorf("%s: no error", ptr)
		}
	}
}
