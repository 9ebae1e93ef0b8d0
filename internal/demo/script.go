package demo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/internal/gateway"
)

// The script: ten steps, each a method, in the order a person follows them.

// The workspace's files before the agent starts.
const (
	notesText = "Buy milk.\nAsk Ada to review the gateway.\n"
	draftText = "An old draft, no longer needed.\n"
	helloStar = "print(\"Hello from a script file!\")\n"
)

// play runs the script until a step fails, and reports whether none did.
func (s *session) play() bool {
	script := []struct {
		title string
		run   func() error
	}{
		{"Start a fresh gateway", s.start},
		{"Add the agent", s.addAgent},
		{"A read-only token: no one is asked", s.readToken},
		{"List the workspace and read a file", s.listAndRead},
		{"A write needs the person's consent, and can be undone", s.writeAndUndo},
		{"A terminal command refused by the token's constraints", s.terminal},
		{"A delete that waits for the person", s.deleteWithConsent},
		{"A calculation", s.calculate},
		{"A Python script", s.python},
		{"Stop the gateway and verify the audit log", s.verifyAudit},
	}
	for _, st := range script {
		if !s.step(st.title, st.run) {
			return false
		}
	}
	return true
}

func (s *session) start() error {
	ws := gateway.DefaultWorkspace(s.data)
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return failf("cannot make the workspace: %v", err)
	}
	for name, text := range map[string]string{"notes.txt": notesText, "draft.txt": draftText, "hello.star": helloStar} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o600); err != nil {
			return failf("cannot seed the workspace: %v", err)
		}
	}
	s.say("A new data folder, DATA below, is %s. Its workspace beside it, DATA-workspace, holds notes.txt, draft.txt and hello.star. The gateway starts on it as a child process, on a free loopback port:", s.data)
	if err := s.startServe(ws); err != nil {
		return err
	}
	s.say("It listens on %s. Its files, terminal and python apps work in %s, and no path they take leaves it.", s.server, s.ws)
	return nil
}

func (s *session) addAgent() error {
	s.line("$ capgate client add demo-agent --data DATA")
	out, _, err := s.capgate("client", "add", "demo-agent", "--data", s.data)
	if err != nil {
		return err
	}
	s.key = strings.TrimSpace(out)
	if !strings.HasPrefix(s.key, "cgk_") || strings.ContainsAny(s.key, " \n") {
		return failf("capgate client add did not print a client key")
	}
	// The agent's client: the gateway's URL and the key, each request bounded.
	if s.cl, err = client.New(&client.Options{Server: s.server, Key: s.key, Timeout: requestTimeout}); err != nil {
		return failf("the agent's client: %v", err)
	}
	s.say("capgate printed the agent's key (cgk_…), once: it keeps only its hash. The agent sends the key with every request as \"Authorization: Bearer KEY\".")
	return nil
}

// inWorkspace is the allowed_paths constraint that keeps a token to the workspace.
func (s *session) inWorkspace() *client.Constraints {
	return &client.Constraints{AllowedPaths: []string{s.ws + "/**"}}
}

func (s *session) readToken() error {
	s.say("The agent asks for fs.read for 10 minutes and 20 uses, constrained to paths under the workspace. Reading is low risk, so capgate issues the token at once.")
	return s.requestToken("read", []string{"fs.read"}, 20, "look at the notes", s.inWorkspace(), false)
}

func (s *session) listAndRead() error {
	r, err := s.call("files", "list_directory", map[string]any{"path": "."}, "read", false)
	if err != nil {
		return err
	}
	var list struct {
		Entries []struct{ Name string }
	}
	if err := result(r, &list); err != nil {
		return err
	}
	var names []string
	for _, e := range list.Entries {
		names = append(names, e.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "notes.txt") {
		return failf("the listing lacks notes.txt")
	}
	s.say("The agent sees %s.", strings.Join(names, ", "))
	r, err = s.call("files", "read_file", map[string]any{"path": "notes.txt"}, "read", false)
	if err != nil {
		return err
	}
	if err := s.readsAsSeeded(r); err != nil {
		return err
	}
	s.say("notes.txt reads %q.", notesText)
	s.say("The same token cannot reach the gateway's own key beside the workspace: allowed_paths refuses the path before the app sees it.")
	r, err = s.call("files", "read_file", map[string]any{"path": filepath.Join(s.data, "capgate.key")}, "read", false)
	if err != nil {
		return err
	}
	return wantCode(r, "CAPABILITY_DENIED")
}

// readsAsSeeded checks that a read_file answer holds notes.txt as the demo wrote it.
func (s *session) readsAsSeeded(r reply) error {
	var f struct{ Content string }
	if err := result(r, &f); err != nil {
		return err
	}
	if f.Content != notesText {
		return failf("notes.txt reads %q, not %q", clip(f.Content, 60), notesText)
	}
	return nil
}

// undoWindow says how long r's undo token is good for.
func undoWindow(r reply) string {
	until := time.UnixMilli(r.UndoUntil)
	return fmt.Sprintf("for %d minutes (until %s)", int(time.Until(until).Round(time.Minute).Minutes()), until.Format("15:04:05"))
}

func wantCode(r reply, code string) error {
	if r.Status == "success" || r.ErrorCode != code {
		return failf("the call got %s %s where %s was scripted", r.Status, r.ErrorCode, code)
	}
	return nil
}

func (s *session) writeAndUndo() error {
	s.say("Writing is high risk: capgate issues an fs.write token only with the person's consent, so the token request waits for the answer.")
	if err := s.requestToken("write", []string{"fs.write"}, 1, "rewrite the notes", s.inWorkspace(), true); err != nil {
		return err
	}
	r, err := s.call("files", "write_file", map[string]any{"path": "notes.txt", "content": "(the agent replaced everything)\n"}, "write", false)
	if err != nil {
		return err
	}
	var w struct{ BytesWritten int64 }
	if err := result(r, &w); err != nil {
		return err
	}
	now, _ := os.ReadFile(filepath.Join(s.ws, "notes.txt"))
	if r.UndoToken == "" {
		return failf("the write's answer carries no undo token")
	}
	s.say("notes.txt now reads %q. The answer carries an undo token, good %s; the agent uses it:", string(now), undoWindow(r))
	if r, err = s.undo(r.UndoToken); err != nil {
		return err
	}
	if r.Status != "success" {
		return failf("the undo failed: %s", r.ErrorCode)
	}
	if r, err = s.call("files", "read_file", map[string]any{"path": "notes.txt"}, "read", false); err != nil {
		return err
	}
	if err := s.readsAsSeeded(r); err != nil {
		return err
	}
	s.say("notes.txt is back as it was.")
	return nil
}

func (s *session) terminal() error {
	s.say("Running commands needs the person's consent. The agent asks for app.terminal.execute limited to ls and echo, with rm -rf denied outright.")
	cons := &client.Constraints{DeniedCommands: []string{"rm -rf"}, AllowedCommands: []string{"ls", "echo"}}
	if err := s.requestToken("terminal", []string{"app.terminal.execute"}, 5, "look around", cons, true); err != nil {
		return err
	}
	r, err := s.call("terminal", "execute_command", map[string]any{"command": "echo hello"}, "terminal", false)
	if err != nil {
		return err
	}
	var out struct{ Stdout string }
	if err := result(r, &out); err != nil {
		return err
	}
	if strings.TrimSpace(out.Stdout) != "hello" {
		return failf("echo hello printed %q", clip(out.Stdout, 60))
	}
	took := time.Duration(s.cur.Requests[len(s.cur.Requests)-1].TookMS) * time.Millisecond
	s.say("It printed %q, after %s: a command cannot be undone, so capgate holds it for a short delayed-commit window first, in which the person can still cancel it (capgate approvals cancel ID).", strings.TrimSpace(out.Stdout), took.Round(100*time.Millisecond))
	rm := map[string]any{"command": "rm -fr notes.txt"}
	s.say("Now the agent tries to delete notes.txt. -fr holds the flags of -rf, so the denied entry matches:")
	if r, err = s.call("terminal", "execute_command", rm, "terminal", false); err != nil {
		return err
	}
	if err := wantCode(r, "CAPABILITY_DENIED"); err != nil {
		return err
	}
	s.say("Why, as capgate explain shows it:")
	if err := s.explain("terminal", "execute_command", rm, "terminal"); err != nil {
		return err
	}
	if now, err := os.ReadFile(filepath.Join(s.ws, "notes.txt")); err != nil || string(now) != notesText {
		return failf("notes.txt is not as it was")
	}
	s.say("notes.txt is intact: the command never ran.")
	return nil
}

func (s *session) deleteWithConsent() error {
	s.say("The agent holds no token for fs.delete. Rather than refuse, capgate asks the person about this one call, and the call waits for the answer.")
	r, err := s.call("files", "delete_file", map[string]any{"path": "draft.txt"}, "", true)
	if err != nil {
		return err
	}
	var d struct{ Deleted bool }
	if err := result(r, &d); err != nil {
		return err
	}
	if !d.Deleted || !noFile(filepath.Join(s.ws, "draft.txt")) {
		return failf("draft.txt is still there")
	}
	if r.UndoToken == "" {
		return failf("the delete's answer carries no undo token")
	}
	s.say("draft.txt is gone. Deleting is destructive but reversible: what was deleted is kept, and the answer's undo token puts it back %s. Only irreversible calls wait out a delayed-commit window, so this one ran as soon as the person approved it.", undoWindow(r))
	return nil
}

func (s *session) calculate() error {
	s.say("The calculator's compute is low risk, but for user clients (auth_level user), not public ones: without a token the person would be asked about the call, as for the delete. So the agent asks for app.calc.compute, issued at once since it is low risk.")
	if err := s.requestToken("calc", []string{"app.calc.compute"}, 5, "do a sum", nil, false); err != nil {
		return err
	}
	r, err := s.call("calc", "compute", map[string]any{"expression": "123 + 456 * 2"}, "calc", false)
	if err != nil {
		return err
	}
	var c struct{ Result json.Number }
	if err := result(r, &c); err != nil {
		return err
	}
	if c.Result != "1035" {
		return failf("123 + 456 * 2 came to %s", c.Result)
	}
	s.say("123 + 456 * 2 = %s: multiplication first, computed exactly.", c.Result)
	return nil
}

func (s *session) python() error {
	s.say("Scripts run in Starlark, a small Python dialect, in a sandboxed child process with no files, network or clock. Running code always needs the person's consent.")
	if err := s.requestToken("python", []string{"app.python.execute"}, 3, "say hello", nil, true); err != nil {
		return err
	}
	r, err := s.call("python", "execute_script", map[string]any{"code": `print("Hello from Python!")`}, "python", false)
	if err != nil {
		return err
	}
	var p struct{ Status, Output string }
	if err := result(r, &p); err != nil {
		return err
	}
	if p.Status != "success" || strings.TrimSpace(p.Output) != "Hello from Python!" {
		return failf("the script ended %s with output %q", p.Status, clip(p.Output, 60))
	}
	s.say("The script printed: %s", strings.TrimSpace(p.Output))
	return nil
}

func (s *session) verifyAudit() error {
	s.say("On SIGTERM the gateway lets calls in flight finish and signs a final audit checkpoint. Then the person checks the log:")
	graceful, err := s.stopServe()
	if err != nil {
		return err
	}
	if !graceful {
		return failf("capgate serve did not say it stopped")
	}
	s.line("$ capgate audit verify --data DATA")
	out, code, err := s.capgate("audit", "verify", "--data", s.data)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		s.line("  " + l)
	}
	if err != nil {
		return err
	}
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "intact") {
		return failf("the audit log is not intact")
	}
	s.say("Every decision and outcome above is a record in a hash chain, with checkpoints signed by the gateway's key, and params kept only as a hash.")
	return nil
}
