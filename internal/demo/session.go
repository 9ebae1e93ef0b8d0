package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/capgate/capgate/client"
)

// session is one run of the demo: the gateway it started, the agent's key and tokens, and
// the report being written. Its methods run on one goroutine, except the request a consent
// waits on, which runs beside it and only returns its answer.
type session struct {
	ctx  context.Context
	o    Options
	data string
	rep  *Report
	cur  *Step

	serve     *exec.Cmd
	serveRest chan string       // the rest of serve's stdout, once it exits
	serveLog  *tail             // serve's stderr: its structured log, shown when a step fails
	server    string            // http://ADDR
	ws        string            // the workspace, as serve resolved it
	key       string            // the agent's client key
	cl        *client.Client    // the agent's client of the gateway, once it has a key
	tokens    map[string]string // by the demo's label for each
}

// failure is a step that did not go as scripted; its text is the step's Error.
type failure struct{ why string }

func (f *failure) Error() string { return f.why }

func failf(format string, a ...any) error { return &failure{fmt.Sprintf(format, a...)} }

// step runs one step: its title, then body's narration, then ok or the reason it failed.
func (s *session) step(title string, body func() error) bool {
	s.rep.Steps = append(s.rep.Steps, Step{N: len(s.rep.Steps) + 1, Title: title})
	s.cur = &s.rep.Steps[len(s.rep.Steps)-1]
	fmt.Fprintf(s.o.Out, "%d. %s\n", s.cur.N, title)
	err := body()
	if s.ctx.Err() != nil {
		err = failf("interrupted")
	}
	if err != nil {
		s.cur.Error = err.Error()
		s.line("FAILED: " + s.cur.Error)
		if s.serveLog != nil && s.serveLog.String() != "" {
			s.line("the gateway's log ends with:")
			for _, l := range strings.Split(strings.TrimSpace(s.serveLog.String()), "\n") {
				s.line("  " + l)
			}
		}
	} else {
		s.cur.OK = true
	}
	fmt.Fprintln(s.o.Out)
	return err == nil
}

// line prints one line of the current step, indented, and keeps it in the report.
func (s *session) line(text string) {
	s.cur.Said = append(s.cur.Said, text)
	fmt.Fprintf(s.o.Out, "   %s\n", text)
}

// say prints prose, wrapped.
func (s *session) say(format string, a ...any) {
	for _, l := range wrap(fmt.Sprintf(format, a...), 94) {
		s.line(l)
	}
}

func wrap(text string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		if cur != "" && len(cur)+1+len(w) > width {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	return append(lines, cur)
}

// compact is v as compact JSON, with <, > and & as they are.
func compact(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// clip shortens s to n runes for display.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// baseArgs are the arguments every child starts with.
func (s *session) baseArgs() []string {
	if s.o.Config != "" {
		return []string{"--config", s.o.Config}
	}
	return nil
}

// capgate runs a capgate command as the person would, shows it, and returns its stdout and
// exit code; stderr is returned as part of the error of a failed start only.
func (s *session) capgate(args ...string) (string, int, error) {
	cmd := exec.CommandContext(s.ctx, s.o.Exe, append(s.baseArgs(), args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		return "", -1, failf("capgate %s could not run: %v", args[0], err)
	}
	s.cur.Commands = append(s.cur.Commands, Command{Args: append([]string{"capgate"}, args...), ExitCode: code})
	if code != 0 && errb.Len() > 0 {
		return out.String(), code, &failure{fmt.Sprintf("capgate %s exited %d: %s", strings.Join(args[:min(2, len(args))], " "), code, strings.TrimSpace(errb.String()))}
	}
	return out.String(), code, nil
}

// startServe starts `capgate serve` on the data folder, on a free loopback port and no
// socket, and reads where it listens and where its apps work from its first lines.
func (s *session) startServe(ws string) error {
	args := append(s.baseArgs(), "serve", "--data", s.data, "--listen", "127.0.0.1:0", "--socket", "-", "--workspace", ws, "--log-level", "warn")
	s.line("$ capgate " + strings.Join(args, " "))
	// Its stdout is a pipe of our own rather than cmd.StdoutPipe, which Wait closes: the
	// last line, "capgate stopped", is read to the end whenever Wait runs.
	out, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(s.o.Exe, args...)
	s.serveLog = &tail{max: 4096}
	cmd.Stdout, cmd.Stderr = w, s.serveLog
	err = cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		return failf("capgate serve could not start: %v", err)
	}
	s.serve = cmd
	s.cur.Commands = append(s.cur.Commands, Command{Args: append([]string{"capgate"}, args...)})
	type where struct{ server, ws string }
	got := make(chan where, 1)
	s.serveRest = make(chan string, 1)
	go func() {
		var w where
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			if u, ok := strings.CutPrefix(l, "capgate serving on http://"); ok {
				w.server = "http://" + u
			}
			if d, ok := strings.CutPrefix(l, "apps work in "); ok {
				w.ws = d
			}
			if strings.HasPrefix(l, "add an agent with:") {
				break
			}
		}
		got <- w
		b, _ := io.ReadAll(out)
		out.Close()
		s.serveRest <- string(b)
	}()
	select {
	case w := <-got:
		if w.server == "" || w.ws == "" {
			return failf("capgate serve did not say where it listens and where its apps work")
		}
		s.server, s.ws = w.server, w.ws
		s.rep.Server, s.rep.Workspace = w.server, w.ws
		return nil
	case <-time.After(serveStartWait):
		return failf("capgate serve did not start within %s", serveStartWait)
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// stopServe stops the gateway gracefully with SIGTERM and waits for it; past serveStopWait
// it is killed. It reports whether the stop was graceful. Stopping a stopped gateway does
// nothing.
func (s *session) stopServe() (bool, error) {
	if s.serve == nil {
		return true, nil
	}
	cmd := s.serve
	s.serve = nil
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = cmd.Process.Kill()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		rest := ""
		select {
		case rest = <-s.serveRest:
		case <-time.After(time.Second):
		}
		if err != nil {
			return false, failf("capgate serve exited with %v", err)
		}
		return strings.Contains(rest, "capgate stopped"), nil
	case <-time.After(serveStopWait):
		_ = cmd.Process.Kill()
		<-done
		return false, failf("capgate serve did not stop within %s of SIGTERM, and was killed", serveStopWait)
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// send runs do, one request of the agent's through the client, on the session's context,
// and returns how long it took and its error (nil, a *client.Error, or one that says the
// gateway did not answer). With person set, the demo plays the person meanwhile (withPerson);
// err is then where that went wrong.
func (s *session) send(person bool, do func(ctx context.Context) error) (took time.Duration, callErr, err error) {
	ask := func() (time.Duration, error) {
		start := time.Now()
		err := do(s.ctx)
		return time.Since(start), err
	}
	if !person {
		took, callErr = ask()
		return took, callErr, nil
	}
	return s.withPerson(ask)
}

// outcome is what an agent's request got, in an HTTP status and words, for a failure's
// reason: never the answer's body, which may hold a token.
func outcome(err error) (int, string) {
	var ce *client.Error
	switch {
	case err == nil:
		return http.StatusOK, "success"
	case errors.As(err, &ce):
		return ce.HTTPStatus, ce.Error()
	}
	return 0, err.Error()
}

// unanswered is the step's failure for a request that got no answer of the gateway's.
func unanswered(err error) error {
	var pe *client.ProtocolError
	if errors.As(err, &pe) {
		return failf("the gateway's answer (HTTP %d) is not what its API defines", pe.HTTPStatus)
	}
	return failf("the gateway did not answer: %v", err)
}

// withPerson runs ask, a request that waits for the person's answer, and meanwhile plays the
// person: it waits for the consent request ask makes, shows it as `capgate approvals list`
// does, and approves it with `capgate approvals approve`. It returns what ask returned.
func (s *session) withPerson(ask func() (time.Duration, error)) (time.Duration, error, error) {
	type asked struct {
		took time.Duration
		err  error
	}
	got := make(chan asked, 1)
	go func() {
		took, err := ask()
		got <- asked{took, err}
	}()
	ended := func() (bool, error) {
		select {
		case a := <-got:
			got <- a
			return true, a.err
		default:
			return false, nil
		}
	}
	id, err := s.awaitPending(ended)
	if err != nil {
		return 0, nil, err
	}
	list, _, err := s.capgate("approvals", "list", "--data", s.data)
	if err != nil {
		return 0, nil, err
	}
	s.line("capgate holds the request and asks the person; `capgate approvals list` shows:")
	for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
		s.line("  " + l)
	}
	out, _, err := s.capgate("approvals", "approve", id, "--data", s.data)
	if err != nil {
		return 0, nil, err
	}
	if !strings.HasSuffix(strings.TrimSpace(out), ": approved") {
		return 0, nil, failf("capgate approvals approve said %q", strings.TrimSpace(out))
	}
	s.line("The person approved it: $ capgate approvals approve " + id + " --data DATA")
	select {
	case a := <-got:
		return a.took, a.err, nil
	case <-s.ctx.Done():
		return 0, nil, s.ctx.Err()
	}
}

// awaitPending polls `capgate approvals list --json` until a request is pending and returns
// its id. It gives up when the agent's request ends first (ended): then none was made.
func (s *session) awaitPending(ended func() (bool, error)) (string, error) {
	deadline := time.Now().Add(pendingWait)
	for {
		out, _, err := s.capgate("approvals", "list", "--json", "--data", s.data)
		if err != nil {
			return "", err
		}
		s.cur.Commands = s.cur.Commands[:len(s.cur.Commands)-1] // polls are not the person's commands
		var pending []struct{ ID string }
		if err := json.Unmarshal([]byte(out), &pending); err != nil {
			return "", failf("capgate approvals list --json printed something that is not a list")
		}
		if len(pending) > 0 {
			return pending[0].ID, nil
		}
		if done, err := ended(); done {
			status, what := outcome(err)
			return "", failf("capgate answered at once (HTTP %d) where it should have asked the person: %s", status, clip(what, 200))
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-s.ctx.Done():
			return "", s.ctx.Err()
		}
		if time.Now().After(deadline) {
			return "", failf("no consent request appeared within %s", pendingWait)
		}
	}
}

// noFile reports whether path does not exist.
func noFile(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, os.ErrNotExist)
}
