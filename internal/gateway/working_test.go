package gateway_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/apps/files"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/ipc"
)

// bearer sends a client key with every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// Issue 16: Working was hard-coded true, so a built-in app whose handler could not start was
// listed to agents and its calls went all the way to "registered but not running". It is not
// working right now: its calls are refused at step 1 (METHOD_NOT_FOUND, saying so), and
// neither GET /v1/capabilities nor MCP's tools/list shows it; the other apps run.
func TestBuiltinThatCannotStartIsNotWorking(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{before: func(data string) {
		// The files app keeps its undo area in DATA/apps/files: a file in the way of that
		// folder is a state folder it cannot open.
		if err := os.WriteFile(filepath.Join(data, gateway.AppsStateDir), []byte("not a folder"), 0o600); err != nil {
			t.Fatal(err)
		}
	}})
	alice := e.addClient("alice", "user")
	for _, method := range []string{"read_file", "write_file"} {
		r := e.callApp(alice, "files", method, `{"path":"a.txt","content":"x"}`, "")
		wantCode(t, method, r, "METHOD_NOT_FOUND")
		if !strings.Contains(r.Body.ErrorMessage, "not working right now") {
			t.Errorf("%s: %q does not say the app is not working", method, r.Body.ErrorMessage)
		}
	}
	if cs, _ := e.g.Store.ListConsents(e.ctx, ""); len(cs) != 0 {
		t.Errorf("the person was asked %d times about an app that cannot run", len(cs))
	}
	wantOK(t, "calc", e.callApp(alice, "calc", "compute", `{"expression":"1+2"}`, ""))

	status, raw := e.do(alice, "GET", "/v1/capabilities", nil)
	var l struct{ Capabilities []ipc.Tool }
	if status != http.StatusOK || json.Unmarshal(raw, &l) != nil {
		t.Fatalf("capabilities: HTTP %d", status)
	}
	apps := map[string]bool{}
	for _, c := range l.Capabilities {
		apps[c.App] = true
	}
	if apps["files"] || apps[files.AppID] || !apps["calc"] || !apps["notes"] {
		t.Errorf("GET /v1/capabilities lists the apps %v", apps)
	}

	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := c.Connect(e.ctx, &mcpsdk.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{alice.Key}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(e.ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	all := strings.Join(names, " ")
	if strings.Contains(all, "files") || strings.Contains(all, "read_file") || !strings.Contains(all, "compute") {
		t.Errorf("tools/list: %s", all)
	}
}
