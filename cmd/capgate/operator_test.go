package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/store/sqlite"
)

// starts counts the times the tool server's wrapper has been started.
func starts(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "start\n")
}

// Operator commands open only what they need: registering an app or adding a client starts
// no tool server (the old register opened the whole gateway, starting every one), and adding
// a tool server starts only that one, to list its tools. With a gateway serving the folder
// they go through it (its operator socket), so that it serves the change before the command
// returns: a client added can call at once, a tool server added is connected at once, one
// removed is gone at once.
func TestOperatorCommandsOpenOnlyWhatTheyNeed(t *testing.T) {
	// The server, its wrapper and the log of its starts in one folder, bound read-write into
	// the server's sandbox.
	dir := t.TempDir()
	server := filepath.Join(dir, "testserver")
	if out, err := exec.Command("go", "build", "-o", server, "github.com/capgate/capgate/internal/toolserver/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("build the test MCP server: %v\n%s", err, out)
	}
	log := filepath.Join(dir, "starts")
	wrapper := filepath.Join(dir, "wrapper")
	script := "#!/bin/sh\necho start >> '" + log + "'\nexec '" + server + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	env := []string{"CAPGATE_DATA_DIR=" + data}
	mustCode(t, capgate(t, "", env, "client", "add", "alice"), 0)
	mustCode(t, capgate(t, "", env, "toolserver", "add", "srv", "--bind", dir+":rw", "--", wrapper), 0)
	if n := starts(t, log); n != 1 {
		t.Fatalf("toolserver add started the server %d times, want once", n)
	}
	r := capgate(t, "", env, "app", "register", "../../examples/notes/manifest.json", "--trusted-dir", "../../examples/trusted")
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "Tier 1") {
		t.Errorf("register on the store: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", env, "client", "add", "bob"), 0)
	mustCode(t, capgate(t, "", env, "client", "disable", "bob"), 0)
	if n := starts(t, log); n != 1 {
		t.Fatalf("registering an app and changing clients started the tool server %d more times", n-1)
	}

	rep := serveWith(t, data)
	before := starts(t, log) // the gateway connects srv
	key := strings.TrimSpace(capgate(t, "", env, "client", "add", "carol").stdout)
	req, _ := http.NewRequest("GET", rep.url+"/v1/capabilities", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the client added through the gateway: HTTP %d", resp.StatusCode)
	}
	r = capgate(t, "", env, "toolserver", "add", "two", "--bind", dir+":rw", "--", wrapper)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "the running gateway has started the server") {
		t.Errorf("toolserver add beside a gateway printed:\n%s", r.stdout)
	}
	// Once to list its tools, once for the gateway's connection, before the command returned.
	if n := starts(t, log) - before; n != 2 {
		t.Errorf("adding a tool server through the gateway started it %d times, want 2", n)
	}
	capabilities := func() string {
		t.Helper()
		req, _ := http.NewRequest("GET", rep.url+"/v1/capabilities", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if caps := capabilities(); !strings.Contains(caps, "tool.mcp.two.echo") {
		t.Errorf("the tool server added is not served at once:\n%s", caps)
	}
	r = capgate(t, "", env, "toolserver", "remove", "two")
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, "the running gateway has stopped it") {
		t.Errorf("toolserver remove beside a gateway printed:\n%s", r.stdout)
	}
	if caps := capabilities(); strings.Contains(caps, "tool.mcp.two.") {
		t.Errorf("the tool server removed is still served:\n%s", caps)
	}
	// The operator's records name the operator, whichever way the change went.
	var adds []string
	for _, rec := range auditRecords(t, data) {
		if rec.Action == "client.add" {
			adds = append(adds, rec.Kind+"|"+rec.Result+"|"+rec.ClientID)
		}
	}
	if len(adds) != 6 || adds[4] != "decision|add requested|"+approver() || adds[5] != "outcome|success|"+approver() {
		t.Errorf("client.add records: %q", adds)
	}
	rep.stop(t)
}

// app register works on the store --store names, as every other operator command does (it
// used to open the data folder's own SQLite file whatever --store said).
func TestAppRegisterHonoursStore(t *testing.T) {
	data := t.TempDir()
	db := filepath.Join(t.TempDir(), "elsewhere.db")
	r := capgate(t, "", nil, "--store", "sqlite:"+db, "app", "register", "../../examples/notes/manifest.json", "--data", data,
		"--trusted-dir", "../../examples/trusted")
	mustCode(t, r, 0)
	if _, err := os.Stat(filepath.Join(data, "capgate.db")); !os.IsNotExist(err) {
		t.Errorf("the data folder's own store was made: %v", err)
	}
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if a, err := st.GetApp(context.Background(), "org.example.notes"); err != nil || a.Alias != "notes" {
		t.Errorf("the app in %s: %+v %v", db, a, err)
	}
}
