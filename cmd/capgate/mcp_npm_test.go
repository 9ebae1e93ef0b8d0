package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Parts nobody here wrote (issue 6, item 4): a published MCP server from the npm registry
// behind capgate as a tool server, and the MCP Inspector's command-line mode as an MCP client
// of capgate. Both come from testdata/npm, whose package-lock.json pins them; .ci/run installs
// them with `npm ci --ignore-scripts --prefix testdata/npm`.

// npmDir is the folder of the npm parts, from this package's folder.
const npmDir = "../../testdata/npm"

// npmPart returns the absolute path of rel under testdata/npm/node_modules and the node
// binary. Without them the test is skipped, saying how to install them, except under CI=true,
// where a missing part fails: CI must run these tests.
func npmPart(t *testing.T, rel string) (path, node string) {
	t.Helper()
	miss := func(what string) {
		t.Helper()
		msg := what + ": install the npm test parts with `npm ci --ignore-scripts --prefix testdata/npm` (Node and npm needed)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		miss("no node on PATH")
	}
	path, err = filepath.Abs(filepath.Join(npmDir, "node_modules", rel))
	if err != nil {
		t.Fatal(err)
	}
	// A part of testdata/npm itself ("../mcp2026/client.mjs") needs the packages too.
	if _, err := os.Stat(filepath.Join(npmDir, "node_modules")); err != nil {
		miss("testdata/npm/node_modules is absent")
	}
	if _, err := os.Stat(path); err != nil {
		miss("testdata/npm/node_modules/" + rel + " is absent")
	}
	return path, node
}

// waitPendingKind returns the id of the first pending consent request of the kind ("token",
// "call", ...).
func waitPendingKind(t *testing.T, data, kind string) string {
	t.Helper()
	return waitPendingKindEnv(t, nil, kind, "--data", data)
}

// answered runs the command in the background, answers (approve or deny) the consent request
// of the kind it opens, and returns its result.
func answered(t *testing.T, data, kind, answer string, run func() result) result {
	t.Helper()
	got := make(chan result, 1)
	go func() { got <- run() }()
	mustCode(t, capgate(t, "", nil, "approvals", answer, waitPendingKind(t, data, kind), "--data", data), 0)
	select {
	case r := <-got:
		return r
	case <-time.After(90 * time.Second):
		t.Fatalf("the command did not finish after the %s request was answered", kind)
		return result{}
	}
}

// @modelcontextprotocol/server-everything, the MCP project's reference server, added with
// `capgate toolserver add` as a stdio tool server of a real `capgate serve`: its tools become
// Tier 2 capabilities described as untrusted, a token for its echo tool needs the person's
// consent and so does each call (its side effects count as the worst case until classified),
// the echo comes back labelled untrusted, and capgate's client key never reaches the server's
// environment.
func TestEverythingServerBehindGateway(t *testing.T) {
	entry, node := npmPart(t, "@modelcontextprotocol/server-everything/dist/index.js")
	data := t.TempDir()
	// The client exists before the gateway starts, so that its key can be in the gateway's
	// environment, where a leak to the tool server would show.
	key := strings.TrimSpace(capgate(t, "", nil, "client", "add", "agent", "--data", data).stdout)
	if !strings.HasPrefix(key, "cgk_") {
		t.Fatalf("client add printed %q", key)
	}
	t.Setenv("CAPGATE_CLIENT_KEY", key)
	url := startServe(t, data)
	env := []string{"CAPGATE_SERVER=" + url, "CAPGATE_CLIENT_KEY=" + key}

	modules, _ := filepath.Abs(filepath.Join(npmDir, "node_modules"))
	r := capgate(t, "", nil, "toolserver", "add", "everything", "--data", data, "--bind", modules, "--", node, entry, "stdio")
	mustCode(t, r, 0)
	for _, want := range []string{"tool.mcp.everything.echo", "tool.mcp.everything.get_env", "side effects count as system"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("toolserver add does not mention %q:\n%s", want, r.stdout)
		}
	}

	// The running gateway starts the server and lists its tools to the agent, the server's
	// words delimited and labelled as data.
	type capability struct {
		ID, Description string
		SideEffects     string `json:"side_effects"`
	}
	var echo capability
	for i := 0; i < 100 && echo.ID == ""; i++ {
		req, _ := http.NewRequest("GET", url+"/v1/capabilities", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var caps struct{ Capabilities []capability }
		json.NewDecoder(resp.Body).Decode(&caps)
		resp.Body.Close()
		if i := slices.IndexFunc(caps.Capabilities, func(c capability) bool { return c.ID == "tool.mcp.everything.echo" }); i >= 0 {
			echo = caps.Capabilities[i]
		} else {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if echo.ID == "" {
		t.Fatal("the gateway does not list the everything server's echo tool")
	}
	if !strings.HasPrefix(echo.Description, `Untrusted description from the MCP tool server "everything", tool "echo"`) ||
		!strings.Contains(echo.Description, "<tool-description>\nEchoes back the input string\n</tool-description>") {
		t.Errorf("echo's description is not labelled and delimited as untrusted: %q", echo.Description)
	}
	if echo.SideEffects != "system" {
		t.Errorf("echo's side effects are %q: an unclassified tool counts as system, whatever its readOnlyHint", echo.SideEffects)
	}

	// A token for the echo tool waits for the person, who approves it.
	r = answered(t, data, "token", "approve", func() result {
		return capgate(t, "", env, "token", "request", "--capabilities", "mcp.everything.echo", "--max-uses", "2", "--duration", "10m", "--reason", "echo through capgate")
	})
	mustCode(t, r, 0)
	tok := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(tok, "cgt1.") {
		t.Fatalf("token request printed %q", r.stdout)
	}

	type labelled struct {
		Untrusted bool   `json:"untrusted_output"`
		Server    string `json:"server"`
		Tool      string `json:"tool"`
		Content   []struct {
			Type, Text string
		} `json:"content"`
	}
	callJSON := func(r result) (status, code string, out labelled) {
		t.Helper()
		var resp struct {
			Body struct {
				Status    string          `json:"status"`
				ErrorCode string          `json:"error_code"`
				Result    json.RawMessage `json:"result"`
			} `json:"body"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &resp); err != nil {
			t.Fatalf("call --json printed %q (stderr %q): %v", r.stdout, r.stderr, err)
		}
		if len(resp.Body.Result) > 0 {
			if err := json.Unmarshal(resp.Body.Result, &out); err != nil {
				t.Fatalf("result %s: %v", resp.Body.Result, err)
			}
		}
		return resp.Body.Status, resp.Body.ErrorCode, out
	}

	// The call still asks the person: a Tier 2 tool whose side effects go above read asks on
	// every call, token or not. Approved, the echo comes back labelled untrusted.
	const msg = "hello from capgate's npm test"
	r = answered(t, data, "call", "approve", func() result {
		return capgate(t, "", env, "call", "everything", "echo", "--params", `{"message":"`+msg+`"}`, "--token", tok, "--json")
	})
	mustCode(t, r, 0)
	status, code, out := callJSON(r)
	if status != "success" || !out.Untrusted || out.Server != "everything" || out.Tool != "echo" ||
		len(out.Content) != 1 || out.Content[0].Type != "text" || out.Content[0].Text != "Echo: "+msg {
		t.Fatalf("echo: %s %s %+v, want %q labelled untrusted", status, code, out, "Echo: "+msg)
	}

	// Declined, the call is refused and the server is not called.
	r = answered(t, data, "call", "deny", func() result {
		return capgate(t, "", env, "call", "everything", "echo", "--params", `{"message":"no"}`, "--token", tok, "--json")
	})
	mustCode(t, r, 1)
	if status, code, _ := callJSON(r); status != "error" || code != "CONSENT_DENIED" {
		t.Fatalf("declined echo: %s %s\n%s", status, code, r.stdout)
	}

	// The token covers echo only.
	r = capgate(t, "", env, "call", "everything", "get_env", "--params", `{}`, "--token", tok, "--json")
	if status, code, _ := callJSON(r); r.code != 1 || status != "error" || code != "CAPABILITY_DENIED" {
		t.Fatalf("get-env under echo's token: exit %d %s %s\n%s", r.code, status, code, r.stdout)
	}

	// The server's environment holds none of capgate's variables or secrets, though the
	// gateway's own environment holds the client key.
	r = answered(t, data, "call", "approve", func() result {
		return capgate(t, "", env, "call", "everything", "get_env", "--params", `{}`, "--json")
	})
	mustCode(t, r, 0)
	_, _, out = callJSON(r)
	if !out.Untrusted || len(out.Content) != 1 || !strings.Contains(out.Content[0].Text, `"PATH"`) {
		t.Fatalf("get_env: %+v", out)
	}
	for what, secret := range map[string]string{"the client key": key, "a CAPGATE_ variable": "CAPGATE_", "a capability token": "cgt1."} {
		if strings.Contains(out.Content[0].Text, secret) {
			t.Errorf("the tool server's environment holds %s", what) // never the secret itself
		}
	}
	mustCode(t, capgate(t, "", nil, "audit", "verify", "--data", data), 0)
}

// inspector runs the MCP Inspector's command-line mode (mcp-inspector --cli) with args and
// --format json, in a clean HOME, with a bound on its time. It reports a failure to run with
// t.Errorf (exit code -1), never t.Fatal, since tests run it from goroutines.
func inspector(t *testing.T, node, launcher string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := runClean(t, exec.CommandContext(ctx, node, append([]string{launcher, "--cli", "--format", "json"}, args...)...), nil)
	if err != nil {
		t.Errorf("the inspector did not run: %v", err)
		r.code = -1
	}
	if ctx.Err() != nil {
		t.Errorf("the inspector did not finish in time; stderr: %s", r.stderr)
		r.code = -1
	}
	return r
}

// The MCP Inspector's command-line mode, @modelcontextprotocol/inspector, as the MCP client
// of capgate on both transports: `capgate mcp` launched over stdio and /mcp on `capgate serve`
// with the client key as bearer. It lists the tools, and calls calc__compute: with no token,
// a client that requires tokens waits for the person, and comes back with the result when
// approved, or as an isError tool result with CONSENT_DENIED (never a protocol error) when
// declined; any other client's call, a low-risk read, runs at once.
func TestInspectorCLIThroughGateway(t *testing.T) {
	launcher, node := npmPart(t, "@modelcontextprotocol/inspector/clients/launcher/build/index.js")
	data := t.TempDir()
	url := startServe(t, data)
	key := strings.TrimSpace(capgate(t, "", nil, "client", "add", "agent", "--require-token", "--data", data).stdout)
	plain := strings.TrimSpace(capgate(t, "", nil, "client", "add", "plain", "--data", data).stdout)
	if !strings.HasPrefix(key, "cgk_") || !strings.HasPrefix(plain, "cgk_") {
		t.Fatalf("client add printed %q, %q", key, plain)
	}

	// The arguments naming capgate go before and after the method's: after "--" everything
	// is the server's command, and a variadic option (--tool-arg, --header) takes every
	// argument up to the next option, so neither may come right before the URL.
	type target struct {
		name      string
		pre, post []string
	}
	targetsOf := func(key string) []target {
		return []target{
			{"stdio", []string{"-e", "CAPGATE_SERVER=" + url, "-e", "CAPGATE_CLIENT_KEY=" + key}, []string{"--", binary, "mcp"}},
			{"http", []string{url + "/mcp", "--transport", "http", "--header", "Authorization: Bearer " + key}, nil},
		}
	}
	for _, tc := range targetsOf(plain) {
		t.Run(tc.name+"/without a token", func(t *testing.T) {
			r := inspector(t, node, launcher, slices.Concat(tc.pre, []string{"--method", "tools/call", "--tool-name", "calc__compute", "--tool-arg", "expression=6*7"}, tc.post)...)
			if r.code != 0 || !strings.Contains(r.stdout, `"result":42`) || strings.Contains(r.stdout, `"isError":true`) {
				t.Fatalf("calc__compute without a token: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
		})
	}
	for _, tc := range targetsOf(key) {
		run := func(t *testing.T, args ...string) result {
			t.Helper()
			return inspector(t, node, launcher, slices.Concat(tc.pre, args, tc.post)...)
		}
		type callResult struct {
			Result struct {
				IsError           bool `json:"isError"`
				Content           []struct{ Type, Text string }
				StructuredContent map[string]any `json:"structuredContent"`
			}
		}
		// call calls calc__compute with no token, answers the consent request it opens, and
		// returns the tool result.
		call := func(t *testing.T, answer string) callResult {
			t.Helper()
			got := make(chan result, 1)
			go func() {
				got <- run(t, "--method", "tools/call", "--tool-name", "calc__compute", "--tool-arg", "expression=123 + 456 * 2")
			}()
			mustCode(t, capgate(t, "", nil, "approvals", answer, waitPendingKind(t, data, "call"), "--data", data), 0)
			r := <-got
			var res callResult
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("tools/call (%s): exit %d, printed %q (stderr %q): %v", answer, r.code, r.stdout, r.stderr, err)
			}
			if strings.Contains(r.stdout, key) || strings.Contains(r.stdout, "cgt1.") {
				t.Errorf("a token or the client key in the result: %s", r.stdout)
			}
			return res
		}

		t.Run(tc.name+"/list", func(t *testing.T) {
			r := run(t, "--method", "tools/list")
			if r.code != 0 {
				t.Fatalf("tools/list: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			var list struct {
				Result struct {
					Tools []struct {
						Name        string
						Description string
						Annotations struct {
							ReadOnlyHint    *bool `json:"readOnlyHint"`
							DestructiveHint *bool `json:"destructiveHint"`
						}
					}
				}
			}
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
				t.Fatalf("tools/list printed %q: %v", r.stdout, err)
			}
			names := map[string]bool{}
			for _, tool := range list.Result.Tools {
				names[tool.Name] = true
				if tool.Name == "calc__compute" {
					if a := tool.Annotations; a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint {
						t.Errorf("calc__compute's annotations: %+v", a)
					}
					if !strings.Contains(tool.Description, "<app-description>") {
						t.Errorf("calc__compute's description is not delimited: %q", tool.Description)
					}
				}
			}
			for _, n := range []string{"calc__compute", "settings__get_setting", "capgate__request_capability", "capgate__undo", "capgate__explain"} {
				if !names[n] {
					t.Errorf("tools/list lacks %s: %v", n, names)
				}
			}
			if strings.Contains(r.stdout, key) {
				t.Error("the client key in tools/list")
			}
		})
		t.Run(tc.name+"/approved", func(t *testing.T) {
			res := call(t, "approve")
			if res.Result.IsError || res.Result.StructuredContent["result"] != float64(1035) ||
				len(res.Result.Content) != 1 || !strings.Contains(res.Result.Content[0].Text, `"note":"the result of a capability`) {
				t.Fatalf("approved calc__compute: %+v", res.Result)
			}
		})
		t.Run(tc.name+"/declined", func(t *testing.T) {
			res := call(t, "deny")
			if !res.Result.IsError || len(res.Result.Content) != 1 || !strings.Contains(res.Result.Content[0].Text, `"error_code":"CONSENT_DENIED"`) {
				t.Fatalf("declined calc__compute: %+v", res.Result)
			}
		})
	}

	// An unknown key gets nowhere, and the inspector says the server wants authorization.
	r := inspector(t, node, launcher, url+"/mcp", "--transport", "http", "--header", "Authorization: Bearer cgk_nope", "--stored-auth-only", "--method", "tools/list")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "auth_required") {
		t.Errorf("unknown key: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	mustCode(t, capgate(t, "", nil, "audit", "verify", "--data", data), 0)
}
