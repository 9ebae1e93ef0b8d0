package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// Every command that groups others refuses a subcommand it does not have as a usage error
// (exit 2), naming the nearest one, instead of printing its help and exiting 0 as though
// capgate audit verfy had verified; alone it prints its help.
func TestUnknownSubcommandIsAUsageError(t *testing.T) {
	var groups [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.HasSubCommands() {
			groups = append(groups, path)
		}
		for _, sub := range c.Commands() {
			if sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub, append(append([]string(nil), path...), sub.Name()))
			}
		}
	}
	walk(newRoot(), nil)
	if len(groups) < 5 {
		t.Fatalf("only %d command groups found", len(groups))
	}
	for _, g := range groups {
		var out, errb bytes.Buffer
		if code := run(append(append([]string(nil), g...), "bogus-subcommand"), strings.NewReader(""), &out, &errb); code != exitUsage {
			t.Errorf("capgate %s bogus-subcommand: exit %d, want %d (%s)", strings.Join(g, " "), code, exitUsage, out.String())
		}
		if len(g) == 0 {
			continue
		}
		out.Reset()
		if code := run(g, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("capgate %s alone: exit %d, %q", strings.Join(g, " "), code, out.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"audit", "verfy"}, strings.NewReader(""), &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "did you mean verify?") {
		t.Errorf("capgate audit verfy: exit %d, %q", code, errb.String())
	}
}

// bearerRT adds a client key to every request.
type bearerRT string

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// SIGTERM with nothing in flight stops at once and cleanly, even while an MCP client holds
// its session's stream open: the drain waits for calls, not for idle streams, and says
// nothing of a deadline.
func TestSIGTERMWithAnIdleMCPStream(t *testing.T) {
	data := t.TempDir()
	r := capgate(t, "", nil, "client", "add", "agent", "--data", data)
	mustCode(t, r, 0)
	key := strings.TrimSpace(r.stdout)
	srv := serveChild(t, data, serveOptions{args: []string{"--log-level", "warn"}, home: t.TempDir()})
	url := srv.url
	ctx := context.Background()
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "idle-agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearerRT(key)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the client's stream is open
	start := time.Now()
	srv.killed = true // stopped here, and checked otherwise than at the end of the test
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { <-srv.rest; done <- srv.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v: %s", err, srv.stderr.String())
		}
	case <-time.After(15 * time.Second):
		srv.cmd.Process.Kill()
		t.Fatalf("serve did not stop within 15 s of SIGTERM with only an idle stream open")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the stop took %v", d)
	}
	if strings.Contains(srv.stderr.String(), "deadline") {
		t.Errorf("stderr: %s", srv.stderr.String())
	}
}

// One serve at a time on a SQLite data folder, from its start to the end of its drain: a
// second one refuses and says why, on any port; once the first has stopped, it starts.
func TestSecondServeOnASQLiteFolderRefused(t *testing.T) {
	data := t.TempDir()
	startServe(t, data)
	r := capgate(t, "", nil, "serve", "--data", data, "--listen", "127.0.0.1:0", "--socket", "-")
	if r.code != exitNo || !strings.Contains(r.stderr, "another capgate serve holds this SQLite store") {
		t.Fatalf("a second serve on the folder: exit %d\n%s", r.code, r.stderr)
	}
}

// capgate ui link prints a fresh login link, for the person at the machine, that works once
// on the running gateway's page, however long ago serve printed its own.
func TestUILink(t *testing.T) {
	data := t.TempDir()
	url := startServe(t, data)
	r := capgate(t, "", nil, "ui", "link", "--data", data, "--server", url)
	mustCode(t, r, 0)
	link := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(link, url+"/ui/login?t=") {
		t.Fatalf("link %q", link)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func() *http.Response {
		t.Helper()
		resp, err := noRedirect.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get(); resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
		t.Fatalf("the link: HTTP %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	if resp := get(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the link a second time: HTTP %d", resp.StatusCode)
	}
	mustCode(t, capgate(t, "", nil, "ui", "link", "--data", t.TempDir()), 1) // no store there
}
