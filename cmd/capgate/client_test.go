package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/ipc"
	"github.com/capgate/capgate/internal/store/postgres/pgtest"
)

// capgate client add, list, show, disable, enable and remove, as the operator runs them on a
// data folder: what they print (never a key or its hash), their exit codes, and their records
// in the audit log, each change a decision before and an outcome after.
func TestClientCommands(t *testing.T) {
	data := t.TempDir()
	d := []string{"--data", data}
	alice := strings.TrimSpace(capgate(t, "", nil, append([]string{"client", "add", "alice", "--uid", "4242", "--require-token"}, d...)...).stdout)
	if _, err := gateway.LoadOrCreateKey(data); err != nil { // as capgate serve does: the log's checkpoints are signed
		t.Fatal(err)
	}
	bob := strings.TrimSpace(capgate(t, "", nil, append([]string{"client", "add", "bob", "--trust", "privileged", "--never-ask"}, d...)...).stdout)
	if !strings.HasPrefix(alice, "cgk_") || !strings.HasPrefix(bob, "cgk_") {
		t.Fatalf("keys: %q %q", alice, bob)
	}
	mustCode(t, capgate(t, "", nil, append([]string{"client", "add", "carol", "--uid", "4242"}, d...)...), 1) // the uid is alice's
	for _, uid := range []string{"-1", "4294967295", "x"} {
		mustCode(t, capgate(t, "", nil, append([]string{"client", "add", "carol", "--uid", uid}, d...)...), 2)
	}
	secret := func(what, out string) {
		t.Helper()
		for _, s := range []string{alice, bob, ipc.KeyHash(alice), ipc.KeyHash(bob), "sha256:"} {
			if strings.Contains(out, s) {
				t.Errorf("%s prints a key or its hash", what)
			}
		}
	}
	r := capgate(t, "", nil, append([]string{"client", "list"}, d...)...)
	mustCode(t, r, 0)
	secret("list", r.stdout)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "  alice  trust user  enabled  0 live token(s)") || !strings.Contains(lines[0], "uid 4242, require-token") ||
		!strings.Contains(lines[1], "  bob  trust privileged  enabled") || !strings.Contains(lines[1], "never-ask") {
		t.Errorf("list:\n%s", r.stdout)
	}
	r = capgate(t, "", nil, append([]string{"client", "list", "--json"}, d...)...)
	mustCode(t, r, 0)
	secret("list --json", r.stdout)
	var list []clientView
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 || list[0].Name != "alice" || list[0].UnixUID == nil ||
		*list[0].UnixUID != 4242 || !list[0].RequireToken || list[1].Trust != "privileged" || !list[1].NeverAsk || list[0].Disabled {
		t.Fatalf("list --json: %s (%v)", r.stdout, err)
	}
	aliceID := list[0].ID
	show := func(ref string) clientView {
		t.Helper()
		r := capgate(t, "", nil, append([]string{"client", "show", ref}, d...)...)
		mustCode(t, r, 0)
		secret("show", r.stdout)
		var v clientView
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := show("alice"); v.ID != aliceID {
		t.Errorf("show by name: %+v", v)
	}
	if v := show(aliceID); v.Name != "alice" {
		t.Errorf("show by id: %+v", v)
	}
	mustCode(t, capgate(t, "", nil, append([]string{"client", "show", "nobody"}, d...)...), 1)
	mustCode(t, capgate(t, "", nil, append([]string{"client", "show"}, d...)...), 2)
	mustCode(t, capgate(t, "", nil, append([]string{"client", "disable", "alice", "bob"}, d...)...), 2)

	r = capgate(t, "", nil, append([]string{"client", "disable", "alice"}, d...)...)
	mustCode(t, r, 0)
	if r.stdout != aliceID+" (alice) disabled\n" {
		t.Errorf("disable: %q", r.stdout)
	}
	if !show("alice").Disabled {
		t.Error("alice is not disabled")
	}
	r = capgate(t, "", nil, append([]string{"client", "enable", aliceID, "--json"}, d...)...)
	mustCode(t, r, 0)
	var v clientView
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Disabled || v.ID != aliceID {
		t.Errorf("enable --json: %s (%v)", r.stdout, err)
	}
	mustCode(t, capgate(t, "", nil, append([]string{"client", "disable", "nobody"}, d...)...), 1)
	r = capgate(t, "", nil, append([]string{"client", "remove", "bob", "--json"}, d...)...)
	mustCode(t, r, 0)
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || !v.Removed || v.Name != "bob" {
		t.Errorf("remove --json: %s (%v)", r.stdout, err)
	}
	mustCode(t, capgate(t, "", nil, append([]string{"client", "remove", "bob"}, d...)...), 1)
	if r := capgate(t, "", nil, append([]string{"client", "list", "--json"}, d...)...); !strings.Contains(r.stdout, `"alice"`) || strings.Contains(r.stdout, `"bob"`) {
		t.Errorf("list after the removal: %s", r.stdout)
	}
	mustCode(t, capgate(t, "", nil, append([]string{"audit", "verify"}, d...)...), 0)

	var got []string
	for _, rec := range auditRecords(t, data) {
		if !strings.HasPrefix(rec.ClientID, "cli") {
			t.Errorf("%s names %q, not the operator", rec.Action, rec.ClientID)
		}
		got = append(got, rec.Action+"|"+rec.Kind+"|"+rec.Result+"|"+rec.Code)
		if rec.Kind == "decision" && rec.Action == "client.add" && strings.Contains(rec.Explanation, "alice") {
			t.Errorf("the record names the client by its name: %q", rec.Explanation)
		}
	}
	want := []string{
		"client.add|decision|add requested|", "client.add|outcome|success|",
		"client.add|decision|add requested|", "client.add|outcome|success|",
		"client.add|decision|add requested|", "client.add|outcome|error|INVALID_REQUEST", // carol, the taken uid
		"client.disable|decision|disable requested|", "client.disable|outcome|success|",
		"client.enable|decision|enable requested|", "client.enable|outcome|success|",
		"client.remove|decision|remove requested|", "client.remove|outcome|success|",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// settingsCall is one settings get_setting through the gateway at base as the client with
// key, with the token tok when it is not empty: the answer's error code, "" for a success.
func settingsCall(t *testing.T, base, key, tok string) string {
	t.Helper()
	body := map[string]any{"action": "query", "app": "settings", "method": "get_setting", "params": map[string]any{"category": "sound", "key": "master_volume"}}
	if tok != "" {
		body["capability_token"] = tok
	}
	raw, _ := json.Marshal(map[string]any{"header": map[string]any{"msg_type": "llm_request", "version": "1.0", "request_id": "c"}, "body": body})
	req, _ := http.NewRequest("POST", base+"/v1/ipc", bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Body answer }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("HTTP %d: not an IPC answer: %v", resp.StatusCode, err)
	}
	if out.Body.Status == "success" {
		return ""
	}
	return out.Body.ErrorCode
}

// Two `capgate serve` replicas on one PostgreSQL database, and one serve on a SQLite file
// (one serve at a time holds a SQLite store; the CLI is the other process): a client
// disabled with `capgate client disable` while they run is refused on every replica at its
// very next call, with its token or without one; enabled again, it calls again (within a
// sync: a widening need not be seen at once); removed, it is refused everywhere and its token
// with it.
func TestReplicasClientDisable(t *testing.T) {
	for _, kind := range []string{"postgres", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			pg, data := "", t.TempDir()
			if kind == "postgres" {
				pg = pgtest.Schema(t)
			}
			n := 2
			if kind == "sqlite" {
				n = 1
			}
			rs := startReplicas(t, n, data, pg)
			env := replicaEnv(data, pg)
			key, tok := agentToken(t, env, rs[0].url, "")
			toks := map[string]string{"without a token": "", "with a token": tok}
			every := func(when string, want ...string) {
				t.Helper()
				for i, rep := range rs {
					for name, tok := range toks {
						if got := settingsCall(t, rep.url, key, tok); !contains(want, got) {
							t.Errorf("%s, replica %d, %s: %q, want %q", when, i, name, got, want)
						}
					}
				}
			}
			every("before", "")
			mustCode(t, capgate(t, "", env, "client", "disable", "agent"), 0)
			every("right after the disable", "PERMISSION_DENIED")
			mustCode(t, capgate(t, "", env, "client", "enable", "agent"), 0)
			deadline := time.Now().Add(10 * time.Second)
			for ok := false; !ok; {
				ok = true
				for _, rep := range rs {
					for _, tok := range toks {
						ok = ok && settingsCall(t, rep.url, key, tok) == ""
					}
				}
				if !ok && time.Now().After(deadline) {
					t.Fatal("the enabled client is still refused after 10 s")
				}
				time.Sleep(20 * time.Millisecond)
			}
			mustCode(t, capgate(t, "", env, "client", "remove", "agent"), 0)
			every("right after the removal", "PERMISSION_DENIED", "INVALID_TOKEN")
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// serveFresh runs `capgate serve` on a fresh data folder with env added and returns its URL
// and folder.
func serveFresh(t *testing.T, env []string, args ...string) (string, string) {
	t.Helper()
	data := t.TempDir()
	return serveEnv(t, data, env, args...).url, data
}

// A low-risk read runs without a token for a user client; a client added with
// --require-token, and every client of a gateway served with --require-token or with
// require_token: true in its configuration file, needs one for it as before (these clients
// never ask, so the call is refused at once rather than waiting for the person).
func TestRequireToken(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, config, "require_token: true\n")
	for _, c := range []struct {
		name      string
		env, args []string
		host      bool // the host requires tokens
	}{
		{"default", nil, nil, false},
		{"--require-token", nil, []string{"--require-token"}, true},
		{"require_token in the config file", []string{"CAPGATE_CONFIG=" + config}, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, data := serveFresh(t, c.env, c.args...)
			d := []string{"--data", data}
			key := strings.TrimSpace(capgate(t, "", nil, append([]string{"client", "add", "agent", "--never-ask"}, d...)...).stdout)
			strict := strings.TrimSpace(capgate(t, "", nil, append([]string{"client", "add", "strict", "--never-ask", "--require-token"}, d...)...).stdout)
			want := ""
			if c.host {
				want = "CAPABILITY_DENIED"
			}
			if got := settingsCall(t, url, key, ""); got != want {
				t.Errorf("a user client's low-risk read without a token: %q, want %q", got, want)
			}
			if got := settingsCall(t, url, strict, ""); got != "CAPABILITY_DENIED" {
				t.Errorf("a require-token client's low-risk read without a token: %q", got)
			}
			r := capgate(t, "", []string{"CAPGATE_SERVER=" + url, "CAPGATE_CLIENT_KEY=" + strict},
				"token", "request", "--capabilities", "system.settings.read", "--duration", "10m")
			mustCode(t, r, 0)
			if got := settingsCall(t, url, strict, strings.TrimSpace(r.stdout)); got != "" {
				t.Errorf("a require-token client's read with a token: %q", got)
			}
			if t.Failed() {
				fmt.Println(capgate(t, "", nil, append([]string{"audit", "tail"}, d...)...).stdout)
			}
		})
	}
}

// capgate client add --assistant marks another assistant: keeps or private, shown by list and
// show, recorded in the audit record's words; any other kind is a usage error that names the
// flag, and nothing is added.
func TestClientAddAssistant(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	d := []string{"--data", data}
	mustCode(t, capgate(t, "", nil, append([]string{"client", "add", "other", "--assistant", "private"}, d...)...), 0)
	for _, bad := range []string{"yes", "Private", "stores"} {
		r := capgate(t, "", nil, append([]string{"client", "add", "bad", "--assistant", bad}, d...)...)
		mustCode(t, r, 2)
		if !strings.Contains(r.stderr, "--assistant") {
			t.Errorf("%s: %q", bad, r.stderr)
		}
	}
	r := capgate(t, "", nil, append([]string{"client", "list", "--json"}, d...)...)
	mustCode(t, r, 0)
	var list []clientView
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].Assistant != "private" {
		t.Fatalf("list --json: %s (%v)", r.stdout, err)
	}
	if r := capgate(t, "", nil, append([]string{"client", "list"}, d...)...); !strings.Contains(r.stdout, "assistant private") {
		t.Errorf("list: %s", r.stdout)
	}
}
