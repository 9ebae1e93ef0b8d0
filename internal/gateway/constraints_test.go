package gateway_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// Issue 15, point 2, through the real gateway, broker and terminal: with denied_commands
// ["rm"], sh fed "rm -f v1" on its input, bash -s, python3 -c, perl -e and find -delete
// deleted files, and so did write_input to a running shell; with allowed_commands ["ls",
// "cat", "find", "echo"], find -exec rm and find -fprint did. Each is refused at the
// decision: nothing runs, every file stays, and the terminal's history stays empty.
func TestIssue15CommandConstraints(t *testing.T) {
	e, mallory := sandboxEnv(t, options{}, "mallory")
	ws := e.g.Workspace()
	for _, f := range []string{"v1", "v2", "v3", "v4", "v5", "victim"} {
		writeFile(t, filepath.Join(ws, f), "precious")
	}
	outside := filepath.Join(t.TempDir(), "written")
	grants := []string{"app.terminal.execute", "app.terminal.write_input"}
	noRm := e.token(mallory, grants, map[string]any{"denied_commands": []string{"rm"}})
	lsCatFindEcho := e.token(mallory, grants, map[string]any{"allowed_commands": []string{"ls", "cat", "find", "echo"}})
	paths := e.token(mallory, grants, map[string]any{"allowed_paths": []string{ws + "/**"}})

	for _, c := range []struct {
		name, tok string
		params    map[string]any
	}{
		{"sh reads rm from its input", noRm, map[string]any{"command": "sh", "stdin": "rm -f v1\n"}},
		{"bash -s", noRm, map[string]any{"command": "bash -s", "stdin": "rm -f v2\n"}},
		{"python3 -c", noRm, map[string]any{"command": `python3 -c "import os; os.system('rm -f v3')"`}},
		{"perl -e", noRm, map[string]any{"command": `perl -e "unlink 'v3'"`}},
		{"find -delete", noRm, map[string]any{"command": "find . -name v4 -delete"}},
		{"/usr/bin/SH", noRm, map[string]any{"command": "/usr/bin/SH", "stdin": "rm -f v5\n"}},
		{"nice -n 5 sh", noRm, map[string]any{"command": "nice -n 5 sh", "stdin": "rm -f v5\n"}},
		{"timeout 1 sh -s", noRm, map[string]any{"command": "timeout 1 sh -s", "stdin": "rm -f v5\n"}},
		{"env -S", noRm, map[string]any{"command": "env -S 'sh -s'", "stdin": "rm -f v5\n"}},
		{"python3.11", noRm, map[string]any{"command": "python3.11 -c 'import os'"}},
		{"find -exec rm", lsCatFindEcho, map[string]any{"command": "find . -name victim -exec rm {} +"}},
		{"find -fprint", lsCatFindEcho, map[string]any{"command": "find / -maxdepth 0 -fprint " + outside}},
		{"find -exec sh", lsCatFindEcho, map[string]any{"command": "find . -name victim -exec sh -c 'rm victim' ';'"}},
		{"allowed_paths: an argument outside", paths, map[string]any{"command": "cat /etc/hostname"}},
		{"allowed_paths: a relative argument outside", paths, map[string]any{"command": "ls ../"}},
		{"allowed_paths: a cwd outside", paths, map[string]any{"command": "ls", "cwd": "/"}},
		{"allowed_paths: a shell", paths, map[string]any{"command": "sh", "stdin": "cat /etc/hostname\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.callApp(mallory, "terminal", "execute_command", js(c.params), c.tok)
			wantCode(t, c.name, r, "CAPABILITY_DENIED")
			if strings.Contains(r.Body.ErrorMessage, "rm -f") || strings.Contains(r.Body.ErrorMessage, "/etc") {
				t.Errorf("the refusal echoes the command: %q", r.Body.ErrorMessage)
			}
		})
	}
	for _, f := range []string{"v1", "v2", "v3", "v4", "v5", "victim"} {
		if got := fileText(filepath.Join(ws, f)); got != "precious" {
			t.Errorf("%s holds %q: a refused command ran", f, got)
		}
	}
	if exists(outside) {
		t.Error("find -fprint wrote outside the workspace")
	}
	hist := e.token(mallory, []string{"app.terminal.history"}, nil)
	if h := fields(t, "history", e.query(mallory, "terminal", "history", `{}`, hist), "total"); h["total"] != 0.0 {
		t.Fatalf("the terminal ran %v commands", h["total"])
	}

	// write_input: a program started under a token without command constraints is fed by
	// one with them. Input is refused (it may be a shell reading it); closing is not.
	free := e.token(mallory, grants, nil)
	bg := fields(t, "background cat", e.callApp(mallory, "terminal", "execute_command", `{"command":"cat","background":true,"timeout":10000}`, free), "id")
	for _, tok := range []string{noRm, lsCatFindEcho, paths} {
		wantCode(t, "write_input under constraints", e.callApp(mallory, "terminal", "write_input", js(map[string]any{"id": bg["id"], "input": "rm -f v1\n"}), tok), "CAPABILITY_DENIED")
	}
	fields(t, "close under constraints", e.callApp(mallory, "terminal", "write_input", js(map[string]any{"id": bg["id"], "close": true}), noRm), "closed")

	// What the constraints allow still runs.
	if v := fields(t, "ls", e.callApp(mallory, "terminal", "execute_command", `{"command":"ls"}`, lsCatFindEcho), "stdout"); !strings.Contains(v["stdout"].(string), "victim") {
		t.Errorf("ls: %v", v)
	}
	if v := fields(t, "find -exec cat", e.callApp(mallory, "terminal", "execute_command", `{"command":"find . -name victim -exec cat {} ';'"}`, lsCatFindEcho), "stdout"); v["stdout"] != "precious" {
		t.Errorf("find -exec cat: %v", v)
	}
	if v := fields(t, "cat under allowed_paths", e.callApp(mallory, "terminal", "execute_command", `{"command":"cat v1"}`, paths), "stdout"); v["stdout"] != "precious" {
		t.Errorf("cat v1: %v", v)
	}
}

// fsManifest declares paths as the issue found them: the published filesystem MCP server's
// move_file (source and destination, no class), a path under a name that is not "path", one
// nested in an object, an array of them, one behind a $ref and one in anyOf branches. The
// app has no handler: what the constraints let through answers APP_NOT_FOUND.
const fsManifest = `{"app_id":"org.example.fs","version":"1.0.0","manifest_version":"1.0","capabilities":[
 {"id":"fs.org.example.fs.move_file","name":"Move","description":"Moves a file.","category":"FILE_OPERATION",
  "parameters":{"type":"object","required":["source","destination"],"additionalProperties":false,
   "properties":{"source":{"type":"string"},"destination":{"type":"string"}}},
  "returns":{"type":"object"},"side_effects":"read","risk":"low","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.move","name":"Move","description":"Moves a file.","category":"FILE_OPERATION",
  "parameters":{"type":"object","required":["source","destination"],"additionalProperties":false,
   "properties":{"source":{"type":"string","format":"path"},"destination":{"type":"string","format":"path"}}},
  "returns":{"type":"object"},"side_effects":"read","risk":"low","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.read","name":"Read","description":"Reads a file.","category":"FILE_OPERATION",
  "parameters":{"type":"object","required":["file"],"properties":{"file":{"type":"string"}}},
  "returns":{"type":"object"},"side_effects":"read","risk":"low","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.nested","name":"Nested","description":"Reads with options.","category":"FILE_OPERATION",
  "parameters":{"type":"object","additionalProperties":false,"properties":{"opts":{"type":"object","additionalProperties":false,
   "properties":{"path":{"type":"string","format":"path"}}}}},
  "returns":{"type":"object"},"side_effects":"read","risk":"low","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.many","name":"Many","description":"Reads files.","category":"FILE_OPERATION",
  "parameters":{"type":"object","additionalProperties":false,"properties":{"paths":{"type":"array","items":{"type":"string","format":"path"}}}},
  "returns":{"type":"object"},"side_effects":"read","risk":"low","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.ref","name":"Ref","description":"Reads a file.","category":"FILE_OPERATION",
  "parameters":{"type":"object","additionalProperties":false,"properties":{"target":{"$ref":"#/definitions/p"}},"definitions":{"p":{"type":"string","format":"path"}}},
  "returns":{"type":"object"},"side_effects":"read","risk":"low","permission":"app.fs.read"},
 {"id":"fs.org.example.fs.either","name":"Either","description":"Reads one file or several.","category":"FILE_OPERATION",
  "parameters":{"type":"object","additionalProperties":false,"properties":{"p":{"anyOf":[{"type":"string","format":"path"},
   {"type":"array","items":{"type":"string","format":"path"}}]}}},
  "returns":{"type":"object"},"side_effects":"read","risk":"low","permission":"app.fs.read"}
]}`

// Issue 15, point 3: with allowed_paths ["WS/**"], {"file": "/etc/passwd"}, {"source":
// "/etc/passwd"} (move_file) and {"opts": {"path": "/etc/passwd"}} all passed the token.
// Every one is refused now: a path is checked wherever the schema puts it, and a capability
// whose params are not all classified is refused by such a token.
func TestIssue15EveryPath(t *testing.T) {
	e, alice := sandboxEnv(t, options{}, "alice")
	e.register("org.example.fs", fsManifest, "fs")
	ws := e.g.Workspace()
	tok := e.token(alice, []string{"app.fs.read"}, map[string]any{"allowed_paths": []string{ws + "/**"}})
	for _, c := range []struct{ method, params string }{
		{"read", `{"file":"/etc/passwd"}`},
		{"read", `{"file":"x"}`},
		{"move_file", `{"source":"/etc/passwd","destination":"x"}`},
		{"move_file", `{"source":"x","destination":"/etc/passwd"}`},
		{"move", `{"source":"/etc/passwd","destination":"x"}`},
		{"move", `{"source":"x","destination":"../../../../etc/passwd"}`},
		{"nested", `{"opts":{"path":"/etc/passwd"}}`},
		{"many", `{"paths":["x","/etc/passwd"]}`},
		{"ref", `{"target":"/etc/passwd"}`},
		{"either", `{"p":"/etc/passwd"}`},
		{"either", `{"p":["x","/etc/passwd"]}`},
	} {
		r := e.callApp(alice, "fs", c.method, c.params, tok)
		wantCode(t, c.method+" "+c.params, r, "CAPABILITY_DENIED")
		if strings.Contains(r.Body.ErrorMessage, "passwd") {
			t.Errorf("the refusal echoes the path: %q", r.Body.ErrorMessage)
		}
	}
	// What the token allows gets past the constraints (to an app that is not running).
	wantCode(t, "move inside", e.callApp(alice, "fs", "move", `{"source":"a","destination":"`+ws+`/b"}`, tok), "APP_NOT_FOUND")
	// A token without path or command constraints is not refused an unclassified capability.
	free := e.token(alice, []string{"app.fs.read"}, nil)
	wantCode(t, "move_file, unconstrained", e.callApp(alice, "fs", "move_file", `{"source":"a","destination":"b"}`, free), "APP_NOT_FOUND")
}
